"""How each ability does in the world: casts, the effects they had, and failures by reason,
read from each tick's events. What ``/ability improve NAME`` gives the angel to learn from,
and what ``/abilities`` shows beside each ability.

It is the session's view, counted since the session started (not world state: the figures
shape what the angel writes next, never the world, and a replay has no angel to ask).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agent_world.types import TickReport

__all__ = ["AbilityFigures", "AbilityUsage"]

_NUMBERS = re.compile(r"\d+(\.\d+)?")
MAX_REASONS = 8  # failure reasons kept per ability (the most frequent)


@dataclass
class AbilityFigures:
    casts: int = 0
    effects: Counter[str] = field(default_factory=Counter)  # applied, by kind
    failures: Counter[str] = field(default_factory=Counter)  # by reason, numbers as N

    def lines(self) -> list[str]:
        """The figures in words, for the angel's prompt and the console."""
        tried = self.casts + sum(self.failures.values())
        out = [f"{tried} attempted casts: {self.casts} took effect, "
               f"{sum(self.failures.values())} failed"]
        if self.effects:
            out.append("effects applied: " + ", ".join(
                f"{kind} x{n}" for kind, n in self.effects.most_common()))
        out.extend(f"failed {n}x: {reason}" for reason, n in
                   self.failures.most_common(MAX_REASONS))
        return out


class AbilityUsage:
    """A tick observer: every ability's figures, by name."""

    def __init__(self) -> None:
        self.figures: dict[str, AbilityFigures] = {}

    def of(self, name: str) -> AbilityFigures:
        return self.figures.get(name) or AbilityFigures()

    def on_tick(self, report: TickReport) -> None:
        for event in report.events:
            kind = event.get("type")
            if kind == "ability":
                self._cast(event)
            elif kind == "action_failed":
                self._failed(event)

    def _cast(self, event: dict[str, Any]) -> None:
        figures = self.figures.setdefault(str(event.get("ability")), AbilityFigures())
        figures.casts += 1
        for line in event.get("effects") or ():
            figures.effects[str(line).split(" ", 1)[0].rstrip(":")] += 1

    def _failed(self, event: dict[str, Any]) -> None:
        action = str(event.get("action", ""))
        if not action.startswith("use_ability("):
            return
        match = re.search(r"ability=(\w+)", action)
        if match is None:
            return
        name = match.group(1)
        reason = str(event.get("reason", ""))
        reason = reason.removeprefix(f"{name}: ").removeprefix(f"{name} ")
        figures = self.figures.setdefault(name, AbilityFigures())
        figures.failures[_NUMBERS.sub("N", reason)[:120]] += 1
