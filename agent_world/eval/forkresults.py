"""A fork's results: per brain, the chosen agents' metrics and the world's figures as the
mean and 95% interval over its branches (``runner.confidence``), written as eval writes
its own: results.json (``"kind": "fork-eval"``, every branch with its folder, final state
hash and log digest, for ``python main.py verify``), results.csv and results.md."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_world.eval.forks import WORLD_FIGURES, ForkEvaluation
from agent_world.eval.runner import KEY_METRICS, confidence, plural, plus_minus

__all__ = ["KIND", "ForkSummary", "summarise_fork", "write_fork_results"]

KIND = "fork-eval"  # results.json's ``kind``: how ``verify`` tells a fork's results


@dataclass(frozen=True, slots=True)
class ForkSummary:
    brain: str
    branches: int
    metrics: dict[str, tuple[float, float]]  # the chosen agents' means: mean, 95% half-width
    world: dict[str, tuple[float, float]]


def summarise_fork(result: ForkEvaluation) -> list[ForkSummary]:
    out = []
    for brain in result.brains:
        mine = [b for b in result.results if b.brain == brain]
        names = sorted(mine[0].metrics) if mine else []
        out.append(ForkSummary(
            brain=brain, branches=len(mine),
            metrics={m: confidence([b.metrics[m] for b in mine]) for m in names},
            world={w: confidence([b.world[w] for b in mine]) for w in WORLD_FIGURES}
            if mine else {}))
    return out


def _interval(pair: tuple[float, float]) -> dict[str, float]:
    return {"mean": pair[0], "ci95": pair[1]}


def write_fork_results(result: ForkEvaluation, out: Path) -> list[str]:
    """results.json, results.csv and results.md in ``out``; the markdown's lines."""
    out.mkdir(parents=True, exist_ok=True)
    plan = result.plan
    summaries = summarise_fork(result)
    doc: dict[str, Any] = {
        "kind": KIND, "fork": plan.to_record(), "brains": result.brains,
        "per_brain": result.branches, "seconds": result.seconds,
        "summary": [{"brain": s.brain, "branches": s.branches,
                     "metrics": {m: _interval(v) for m, v in s.metrics.items()},
                     "world": {w: _interval(v) for w, v in s.world.items()}}
                    for s in summaries],
        "branches": [b.to_dict() for b in result.results], "failed": result.failed}
    (out / "results.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    metric_names = sorted({m for b in result.results for m in b.metrics})
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["brain", "branch", "seed", "ticks", "alive", *WORLD_FIGURES,
                         "seconds", "folder", *metric_names])
        for b in result.results:
            writer.writerow([b.brain, b.branch, b.seed, b.ticks, b.alive,
                             *(round(b.world[w], 4) for w in WORLD_FIGURES), b.seconds,
                             b.folder, *(round(b.metrics.get(m, 0.0), 4) for m in metric_names)])
    shown = [m for m in KEY_METRICS if any(m in s.metrics for s in summaries)]
    agents = ", ".join(plan.agents)
    lines = [f"# {plan.world} forked at tick {plan.tick}: {plural(len(result.brains), 'brain')}"
             f" x {plural(result.branches, 'branch', 'branches')}, {plan.ticks} ticks each", "",
             f"The chosen agents ({agents}) on each brain: their metrics over the branch "
             "(their mean); mean ± 95% confidence interval over branches.", "",
             "| brain | branches | " + " | ".join(shown) + " |",
             "|---|---:|" + "---:|" * len(shown)]
    for s in summaries:
        lines.append(f"| {s.brain} | {s.branches} | "
                     + " | ".join(plus_minus(s.metrics[m]) if m in s.metrics else "-"
                                  for m in shown) + " |")
    lines += ["", "The whole world over the branch: deaths and trades in it, agents alive and "
              "their wealth (gold and goods at the fork's prices) at its end.", "",
              "| brain | " + " | ".join(WORLD_FIGURES) + " |",
              "|---|" + "---:|" * len(WORLD_FIGURES)]
    for s in summaries:
        lines.append(f"| {s.brain} | "
                     + " | ".join(plus_minus(s.world[w]) if w in s.world else "-"
                                  for w in WORLD_FIGURES) + " |")
    if plan.fallback_brains:
        lines += ["", "Played by the built-in brain in every branch (their brains need a "
                  "network, a client or registration here): " + ", ".join(
                      f"{name} ({brain})" for name, brain in plan.fallback_brains.items())]
    if result.failed:
        lines += ["", f"Failed branches ({len(result.failed)}): " + "; ".join(
            f"{f['brain']} #{f['branch']}: {f['error']}" for f in result.failed)]
    (out / "results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines
