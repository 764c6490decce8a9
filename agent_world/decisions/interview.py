"""Interviews on the decision pipeline: a question put to one agent's brain, answered in its
own voice, off the tick.

An interview is a request of another kind than a decision: nothing in the world waits for
it and its answer is text, never an action. A kind of brain that can speak for its agents
(the LLM's, users' brains') is an ``Interviewer``: it is handed a ``Question`` and answers it
once, through ``said``, from whatever thread the answer arrives on (the LLM's transport
thread, an interview thread of users' brains). Whoever asked (``agent_world.talk``) turns
the answer into an ``interview`` input, so the event log keeps it and a replay reads it
rather than asking again. Agents of a kind that cannot speak (built-in brains, policies,
remote agents) are answered plainly from their state by the asker.

Attention: interviews never go ahead of a decision that is urgent (an agent attacked or
starving), and each kind lets only ``interview_room()`` of them out at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agent_world.types import LLMUsage

__all__ = ["INTERVIEW_KINDS", "Interviewer", "Question", "Said", "Spoken", "spoken_text"]

INTERVIEW_KINDS = ("llm", "brain", "plain")
"""Who answered: a model with the agent's memory, a user's brain (its ``interview``), or
the plain answer made from the agent's state."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """One question to one agent, as plain data (made on the main thread).

    ``routine``: a survey's question (it waits for room more patiently than the operator's
    own); ``max_chars`` and ``max_tokens`` bound the answer; ``deadline_s`` is how long the
    brain has once it is asked."""

    id: str
    agent: int
    text: str
    tick: int
    routine: bool = False
    max_chars: int = 600
    max_tokens: int = 160
    deadline_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError("a question must not be empty")
        if self.max_chars < 1 or self.max_tokens < 1 or self.deadline_s <= 0:
            raise ValueError(f"max_chars, max_tokens and deadline_s must be > 0, got "
                             f"{self.max_chars}, {self.max_tokens}, {self.deadline_s}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Spoken:
    """An interview's answer. ``text`` None with no ``error``: the brain has nothing of its
    own to say (a ``Brain`` without an ``interview``), and the asker answers plainly.
    ``error``: no answer, and why. ``by`` says who answered (``kind``: one of
    ``INTERVIEW_KINDS``, ``brain``, ``model``)."""

    text: str | None
    error: str = ""
    by: dict[str, Any] = field(default_factory=dict)
    latency_s: float = 0.0
    usage: LLMUsage | None = None


Said = Callable[[Spoken], None]
"""How an interviewer answers (any thread, once)."""


@runtime_checkable
class Interviewer(Protocol):
    """A kind of brain that answers interviews in its agents' own voice."""

    def speaks_for(self, eid: int) -> bool:
        """Whether agent ``eid``'s brain answers interviews itself (else: a plain answer)."""
        ...

    def interview_room(self) -> int:
        """How many more interviews may go out now (0: wait; an urgent decision is waiting,
        the kind is unavailable, or its share of interviews is out)."""
        ...

    def unavailable(self) -> str:
        """Why nothing can be asked now ('' when it can)."""
        ...

    def interview(self, question: Question, said: Said) -> None:
        """Ask agent ``question.agent``'s brain; answer through ``said`` now or later."""
        ...


def spoken_text(raw: str, max_chars: int) -> str:
    """A brain's answer as it is kept: one paragraph without control characters or
    surrounding quotes, cut at a word to at most ``max_chars`` characters."""
    text = " ".join(_CONTROL.sub(" ", raw).split())
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars - 1]
    if " " in cut[max_chars // 2:]:
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"
