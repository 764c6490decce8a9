"""How a brain's answers compare with the logged ones: agreement, actions, tokens, cost.

Agreement compares the *first* action of each plan, the one the agent starts at once (a
plan's later actions are often dropped as the world moves):

- **exact**: the same action with the same arguments (``{"name", "args"}`` equal);
- **same target**: the same action on the same thing: equal values of the arguments that
  name what it acts on or where (``TARGET_ARGS``: ``target``, ``x``/``y``, ``item``,
  ``offer``, ``ability``, ``to``), whatever the others (how long, how many, what is said).
  An action with none of them agrees by its name alone. Exact implies same target;
- **same action**: the same action name.

Each is counted over every decision asked: an invalid answer agrees with nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_world.decisions.metrics import percentile
from agent_world.recorded.askers import NewDecision

__all__ = ["TARGET_ARGS", "Agreement", "Tally", "agreement"]

TARGET_ARGS = ("target", "x", "y", "item", "offer", "ability", "to")


@dataclass(frozen=True, slots=True)
class Agreement:
    exact: bool
    same_target: bool
    same_action: bool

    def to_dict(self) -> dict[str, bool]:
        return {"exact": self.exact, "same_target": self.same_target,
                "same_action": self.same_action}


def _first(actions: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    if not actions:
        return None
    head = actions[0]
    args = head.get("args")
    return str(head.get("name")), dict(args) if isinstance(args, Mapping) else {}


def agreement(logged: Sequence[Mapping[str, Any]],
              new: Sequence[Mapping[str, Any]]) -> Agreement:
    """How the first of ``new`` agrees with the first of ``logged`` (see the module)."""
    was, now = _first(logged), _first(new)
    if was is None or now is None or was[0] != now[0]:
        return Agreement(False, False, False)
    same_target = all(was[1].get(k) == now[1].get(k) for k in TARGET_ARGS)
    return Agreement(was[1] == now[1], same_target, True)


def _name(actions: Sequence[Mapping[str, Any]]) -> str:
    first = _first(actions)
    return first[0] if first is not None else "(none)"


@dataclass(slots=True)
class Tally:
    """One brain's figures over the decisions it was asked (mergeable: span by span)."""

    brain: str
    asked: int = 0
    valid: int = 0
    exact: int = 0
    same_target: int = 0
    same_action: int = 0
    faults: Counter[str] = field(default_factory=Counter)  # invalid answers by kind
    new_actions: Counter[str] = field(default_factory=Counter)  # first actions chosen
    logged_actions: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    costed: bool = False  # some answer had a cost (else cost is unknown, not 0)
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, logged: Sequence[Mapping[str, Any]], new: NewDecision) -> Agreement:
        self.asked += 1
        self.logged_actions[_name(logged)] += 1
        self.latencies_ms.append(new.latency_s * 1000)
        usage = new.extra.get("usage")
        if isinstance(usage, Mapping):
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)
            if usage.get("cost") is not None:
                self.cost += float(usage["cost"])
                self.costed = True
        if not new.valid:
            self.faults[new.error.split(":", 1)[0]] += 1
            return Agreement(False, False, False)
        self.valid += 1
        self.new_actions[_name(new.actions)] += 1
        agreed = agreement(logged, new.actions)
        self.exact += agreed.exact
        self.same_target += agreed.same_target
        self.same_action += agreed.same_action
        return agreed

    def merge(self, other: Tally) -> None:
        for name in ("asked", "valid", "exact", "same_target", "same_action",
                     "prompt_tokens", "completion_tokens", "cost"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.costed = self.costed or other.costed
        self.faults.update(other.faults)
        self.new_actions.update(other.new_actions)
        self.logged_actions.update(other.logged_actions)
        self.latencies_ms.extend(other.latencies_ms)

    def share(self, n: int) -> float:
        return round(n / self.asked, 4) if self.asked else 0.0

    def figures(self) -> dict[str, Any]:
        """The brain's figures as the report keeps them: all but latency are a function of
        the recording, the brain and the options (the same run gives the same figures)."""
        return {
            "asked": self.asked, "valid": self.valid, "invalid": dict(sorted(self.faults.items())),
            "exact": self.exact, "same_target": self.same_target,
            "same_action": self.same_action,
            "rates": {"valid": self.share(self.valid), "exact": self.share(self.exact),
                      "same_target": self.share(self.same_target),
                      "same_action": self.share(self.same_action)},
            "actions": {"new": dict(sorted(self.new_actions.items())),
                        "logged": dict(sorted(self.logged_actions.items()))},
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "cost": round(self.cost, 6) if self.costed else None,
        }

    def latency(self) -> dict[str, float]:
        return {"p50_ms": round(percentile(self.latencies_ms, 0.5), 3),
                "p95_ms": round(percentile(self.latencies_ms, 0.95), 3)}
