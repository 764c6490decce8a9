"""``Decision``: what a brain answers: an action with its arguments and, optionally, why.

A brain may answer one ``Decision`` or a short plan of several (done in order, the next
when the previous one ends). Every decision is checked against the action set
(``agent_world.core.actions.ACTIONS``) before it reaches the world; an invalid one is a
``DecisionError`` naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_world.core.actions import Action, ActionError, one_line, parse_action

__all__ = ["MAX_REASONING", "Decision", "DecisionError", "as_plan", "from_json"]

MAX_REASONING = 200  # characters kept of a decision's reasoning


class DecisionError(ValueError):
    """An answer that is not a valid decision (wrong shape, invalid action or arguments)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """``Decision("eat", {"item": "apple"}, reasoning="hungry")``."""

    action: str
    args: Mapping[str, Any] = field(default_factory=dict)
    reasoning: str | None = None

    def to_action(self) -> Action:
        """The validated action (DecisionError if it is not one)."""
        try:
            return parse_action({"action": self.action, "args": self.args})
        except ActionError as exc:
            raise DecisionError(str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "args": dict(self.args)}
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        return out

    @classmethod
    def from_dict(cls, doc: Any) -> Decision:
        """From JSON (``{"action": ..., "args": {...}, "reasoning": ...}``)."""
        if not isinstance(doc, Mapping):
            raise DecisionError(f"a decision must be an object, got {type(doc).__name__}")
        action, args, reasoning = doc.get("action"), doc.get("args") or {}, doc.get("reasoning")
        if not isinstance(action, str):
            raise DecisionError(f"a decision needs a string 'action', got {action!r:.40}")
        if not isinstance(args, Mapping):
            raise DecisionError(f"{action}: 'args' must be an object, got "
                                f"{type(args).__name__}")
        if reasoning is not None and not isinstance(reasoning, str):
            raise DecisionError(f"'reasoning' must be text, got {type(reasoning).__name__}")
        return cls(action, dict(args), reasoning)


def from_json(doc: object) -> Decision | list[Decision]:
    """A decision as JSON gives it (an object, or a list of them) as ``Decision``s for
    ``as_plan``; DecisionError naming the step that is not one."""
    if isinstance(doc, Sequence) and not isinstance(doc, (str, bytes)):
        out = []
        for i, step in enumerate(doc):
            try:
                out.append(Decision.from_dict(step))
            except DecisionError as exc:
                raise DecisionError(f"plan[{i}]: {exc}") from None
        return out
    return Decision.from_dict(doc)


def as_plan(answer: object, *, max_actions: int) -> tuple[tuple[Action, ...], str]:
    """A brain's answer (a Decision or a list of them) as validated actions and one line of
    reasoning; DecisionError (with the step it is about) for anything else: an answer comes
    from user code and may be anything."""
    steps = [answer] if isinstance(answer, Decision) else answer
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise DecisionError(f"a brain answers a Decision or a list of them, got "
                            f"{type(answer).__name__}")
    if not steps:
        raise DecisionError("an empty plan: answer at least one Decision")
    if len(steps) > max_actions:
        raise DecisionError(f"a plan of {len(steps)} decisions; at most {max_actions}")
    actions = []
    for i, step in enumerate(steps):
        if not isinstance(step, Decision):
            raise DecisionError(f"plan[{i}] is a {type(step).__name__}, not a Decision")
        try:
            actions.append(step.to_action())
        except DecisionError as exc:
            raise DecisionError(f"plan[{i}]: {exc}" if len(steps) > 1 else str(exc)) from None
    reasons = " / ".join(s.reasoning for s in steps if s.reasoning)
    return tuple(actions), one_line(reasons)[:MAX_REASONING]
