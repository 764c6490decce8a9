"""A decision on its way to the world: the ``plan`` input, built here and nowhere else.

Every brain that decides off the tick (the LLM, users' brains and policies, remote agents)
hands the world its decision as a ``plan`` input through the inbox, applied at the first
tick after it is ready. The core reads ``agent``, ``actions`` and ``source`` (and the
metrics ``usage`` and ``latency_ms``); the rest is for people reading the event log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_world.core.actions import Action
from agent_world.core.inbox import Inbox

__all__ = ["PlanInput"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanInput:
    """``by`` says who answered and how, in the order written: a user brain's ``brain``
    and ``trace``, a remote ``client``, the LLM's ``model``, ``usage``, ``raw`` answer and
    ``cached``; ``asked_tick`` is the tick the request was made at, where it is known."""

    agent: int
    actions: Sequence[Action]
    source: str
    thought: str
    request: int
    reasons: Sequence[str]
    latency_s: float
    asked_tick: int | None = None
    by: Mapping[str, Any] = field(default_factory=dict)

    def data(self) -> dict[str, Any]:
        """The input's data as the event log keeps it."""
        return {
            "agent": self.agent,
            "actions": [a.to_dict() for a in self.actions],
            "source": self.source,
            "thought": self.thought,
            "request": self.request,
            **({"asked_tick": self.asked_tick} if self.asked_tick is not None else {}),
            "reasons": list(self.reasons),
            "latency_ms": round(self.latency_s * 1000, 1),
            **self.by,
        }

    def submit(self, inbox: Inbox) -> None:
        inbox.submit("plan", self.data(), source=self.source)
