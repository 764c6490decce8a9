"""A version's training bundle: what a generator learns from how the version did.

It is made from the version's check and its evaluation: the contract it was written
against, the scenario, the score (mean, 95% interval, per seed), the subjects' mean
metrics, the top mistakes (decision faults and actions that failed, grouped and counted,
each with the observation at the tick it showed), a few excerpts of its decisions' thoughts
and traces, its errors and timeouts by kind, failed episodes, and the step budget it used
(in the check's dry runs and, from the policy's trace, in the episodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_world.eval.runner import Evaluation, confidence
from agent_world.policies.check import PolicyReport

__all__ = ["STEP_FAULTS", "make_bundle"]

TOP_MISTAKES = 5
TRACES = 4
STEP_FAULTS = ("limit", "timeout", "killed")
"""Fault kinds that mean a policy ran out of its budget (steps, memory, time)."""


def _mistakes(evaluation: Evaluation) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for episode in evaluation.episodes:
        for mistake in episode.notes.get("mistakes", []):
            known = merged.get(mistake["what"])
            if known is None:
                merged[mistake["what"]] = {**mistake, "seed": episode.seed}
            else:
                known["count"] += mistake["count"]
    return sorted(merged.values(), key=lambda m: (-m["count"], m["what"]))[:TOP_MISTAKES]


def _sum(evaluation: Evaluation, key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for episode in evaluation.episodes:
        for kind, n in episode.notes.get(key, {}).items():
            out[kind] = out.get(kind, 0) + int(n)
    return dict(sorted(out.items()))


def make_bundle(*, contract: str, scenario: dict[str, Any], check: PolicyReport,
                evaluation: Evaluation) -> dict[str, Any]:
    episodes: Sequence[Any] = evaluation.episodes
    mean, half = confidence([e.score for e in episodes])
    metrics = sorted({m for e in episodes for m in e.metrics})
    steps = [e.notes.get("steps", {}) for e in episodes]
    decided = sum(s.get("count", 0) for s in steps)
    return {
        "contract": contract,
        "scenario": scenario,
        "score": {"mean": mean, "ci95": half,
                  "per_seed": {str(e.seed): round(e.score, 4) for e in episodes}},
        "metrics": {m: round(sum(e.metrics.get(m, 0.0) for e in episodes) / len(episodes), 4)
                    for m in metrics} if episodes else {},
        "decisions": sum(e.notes.get("decisions", 0) for e in episodes),
        "failed_actions": sum(e.notes.get("failed_actions", 0) for e in episodes),
        "errors": _sum(evaluation, "faults"),
        "mistakes": _mistakes(evaluation),
        "traces": [t for e in episodes for t in e.notes.get("traces", [])][:TRACES],
        "failed_episodes": [{"seed": f["seed"], "error": f["error"]}
                            for f in evaluation.failed],
        "steps": {
            "budget": check.step_budget,
            "check_max": check.max_steps,
            "check_mean": round(check.mean_steps, 1),
            "episodes_max": max((s.get("max", 0) for s in steps), default=0),
            "episodes_mean": round(sum(s.get("total", 0) for s in steps) / decided, 1)
            if decided else 0.0,
        },
    }
