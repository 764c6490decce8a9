"""What went wrong for the subjects of an episode: the raw material of a training bundle.

An observer of the episode's ticks (main thread) keeps, for the subjects only and bounded:

- decisions made, and faults by kind (``decision_fault`` inputs: invalid, error, timeout,
  budget ...);
- mistakes: faults and actions that failed (``action_failed`` events), grouped by what went
  wrong (the action and its reason, digits dropped), most frequent first, each with the
  first example's tick, agent, reason and the agent's observation at that tick (the compact
  form an LLM prompt holds);
- the last few decisions' thoughts and traces (``plan`` inputs from a brain);
- the steps its decisions took, where the brain traces them as ``steps N/BUDGET`` (a
  policy does).
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from agent_world.contract.observation import observe
from agent_world.core import events as ev
from agent_world.core.metrics import THINKERS
from agent_world.core.world import World
from agent_world.types import TickReport

__all__ = ["Diagnostics"]

MAX_KINDS = 50  # distinct mistakes kept (the rest are counted as "other")
TOP_MISTAKES = 5
TRACES = 5
_DIGITS = re.compile(r"\d+")
STEPS = re.compile(r"steps (\d+)/(\d+)")


class Diagnostics:
    """A ``TickObserver`` of one episode; ``subjects`` is filled once they are spawned."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.subjects: set[int] = set()
        self.decisions = 0
        self.faults: dict[str, int] = {}
        self.failed = 0
        self._mistakes: dict[str, dict[str, Any]] = {}
        self._traces: deque[dict[str, Any]] = deque(maxlen=TRACES)
        self.steps = {"max": 0, "total": 0, "count": 0}

    def on_tick(self, report: TickReport) -> None:
        if not self.subjects:
            return
        for inp in report.inputs:
            agent = inp.data.get("agent")
            if agent not in self.subjects:
                continue
            if inp.type == "plan" and inp.data.get("source") in THINKERS:
                self.decisions += 1
                trace = inp.data.get("trace")
                if isinstance(trace, list):
                    self._count_steps(trace)
                self._traces.append({
                    "tick": inp.tick, "agent": agent, "thought": inp.data.get("thought"),
                    "actions": [a.get("name") for a in inp.data.get("actions", [])
                                if isinstance(a, dict)],
                    **({"trace": trace} if trace else {})})
            elif inp.type == "decision_fault":
                kind = str(inp.data.get("kind", "?"))
                self.faults[kind] = self.faults.get(kind, 0) + 1
                self._mistake(f"fault {kind}", report.tick, agent,
                              str(inp.data.get("error", "")))
        for event in report.events:
            if event.get("type") == ev.ACTION_FAILED and event.get("agent") in self.subjects:
                self.failed += 1
                action = str(event.get("action", "?"))
                reason = str(event.get("reason", ""))
                name = action.partition("(")[0]
                self._mistake(f"{name} failed: {_DIGITS.sub('N', reason)}", report.tick,
                              int(event["agent"]), reason, action)

    def _count_steps(self, trace: list[Any]) -> None:
        for line in trace:
            match = STEPS.fullmatch(str(line))
            if match:
                used = int(match.group(1))
                self.steps["max"] = max(self.steps["max"], used)
                self.steps["total"] += used
                self.steps["count"] += 1

    def _mistake(self, key: str, tick: int, agent: int, reason: str,
                 action: str | None = None) -> None:
        known = self._mistakes.get(key)
        if known is not None:
            known["count"] += 1
            return
        if len(self._mistakes) >= MAX_KINDS:
            key = "other"
            if key in self._mistakes:
                self._mistakes[key]["count"] += 1
                return
        example: dict[str, Any] = {"what": key, "count": 1, "tick": tick, "agent": agent,
                                   "reason": reason}
        if action is not None:
            example["action"] = action
        if self.world.alive(agent):
            example["observation"] = observe(self.world, agent).prompt_view()
        self._mistakes[key] = example

    def summary(self) -> dict[str, Any]:
        """Plain data for the episode's result."""
        top = sorted(self._mistakes.values(), key=lambda m: (-m["count"], m["what"]))
        return {"decisions": self.decisions, "faults": dict(sorted(self.faults.items())),
                "failed_actions": self.failed, "mistakes": top[:TOP_MISTAKES],
                "traces": list(self._traces), "steps": dict(self.steps)}
