"""Each model profile's figures over the report's ticks, from the logged inputs (issue 32).

An LLM agent's decision is a ``plan`` input whose data names its model ``profile``
(``default`` for brain ``llm``), the provider's ``model``, its ``usage`` (tokens, cost) and
``latency_ms``; a request that failed, when the world keeps agent metrics, is a
``decision_fault`` input of source ``llm``, counted against the profile of the agent's
brain at the time (``llm:NAME``: profile NAME), as spawn and brain-change events and the
starting snapshot tell it. Requests refused before they went out (an open breaker, a spent
budget) leave no input, so ``requests`` here are the answered and failed ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_world.core import events as ev
from agent_world.decisions.metrics import percentile

__all__ = ["ModelFigures", "ModelTally", "profile_of_brain"]

INVALID = frozenset({"schema", "length"})  # the model answered, but not a valid decision
SOURCE = "llm"


def profile_of_brain(brain: str) -> str | None:
    """The model profile of an agent brain (``llm``: default, ``llm:NAME``: NAME), or None."""
    if brain == "llm":
        return "default"
    if brain.startswith("llm:"):
        return brain[4:] or None
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelFigures:
    """One model profile over the report's ticks."""

    profile: str
    models: tuple[str, ...]  # the provider's model names its answers carried
    requests: int  # decisions + failed requests
    decisions: int
    cached: int  # decisions answered from the response cache
    fallbacks: int  # failed requests: the agent used its built-in brain for them
    invalid: int  # of which the answer broke the decision format or was cut off
    latency_p50_ms: float
    latency_p95_ms: float
    prompt_tokens: int
    cached_tokens: int
    answer_tokens: int
    cost: float  # US dollars, where the provider or the price table said


@dataclass(slots=True)
class _Profile:
    models: set[str] = field(default_factory=set)
    decisions: int = 0
    cached: int = 0
    fallbacks: int = 0
    invalid: int = 0
    latencies: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    answer_tokens: int = 0
    cost: float = 0.0


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class ModelTally:
    """Counts the LLM's decisions and failures by model profile as the log streams by."""

    def __init__(self, brain_of: dict[int, str] | None = None) -> None:
        self.brain_of: dict[int, str] = dict(brain_of or {})
        self._profiles: dict[str, _Profile] = {}

    def learn(self, rec: dict[str, Any]) -> None:
        """An event line: a spawn or a brain change tells an agent's brain."""
        if rec.get("type") in (ev.SPAWN, ev.BRAIN_CHANGED):
            agent, brain = rec.get("agent"), rec.get("brain")
            if isinstance(agent, int) and isinstance(brain, str):
                self.brain_of[agent] = brain

    def add(self, rec: dict[str, Any]) -> None:
        """An input line: an LLM agent's plan or decision fault is counted."""
        data = rec.get("data")
        if rec.get("source") != SOURCE or not isinstance(data, dict):
            return
        kind = rec.get("type")
        if kind == "plan":
            profile = self._profile(str(data.get("profile") or "default"))
            profile.decisions += 1
            if isinstance(data.get("model"), str):
                profile.models.add(data["model"])
            if data.get("cached"):
                profile.cached += 1
            latency = data.get("latency_ms")
            if isinstance(latency, (int, float)) and not data.get("cached"):
                profile.latencies.append(float(latency))
            usage = data.get("usage")
            if isinstance(usage, dict):
                profile.prompt_tokens += _int(usage.get("prompt_tokens"))
                profile.cached_tokens += _int(usage.get("cached_tokens"))
                profile.answer_tokens += _int(usage.get("completion_tokens"))
                cost = usage.get("cost")
                if isinstance(cost, (int, float)):
                    profile.cost += float(cost)
        elif kind == "decision_fault":
            agent = data.get("agent")
            name = profile_of_brain(self.brain_of.get(agent, "llm")
                                    if isinstance(agent, int) else "llm")
            profile = self._profile(name or "default")
            profile.fallbacks += 1
            if data.get("kind") in INVALID:
                profile.invalid += 1

    def _profile(self, name: str) -> _Profile:
        profile = self._profiles.get(name)
        if profile is None:
            profile = self._profiles[name] = _Profile()
        return profile

    def figures(self) -> tuple[ModelFigures, ...]:
        """Each profile seen, the default first, then by name."""
        names = sorted(self._profiles, key=lambda n: (n != "default", n))
        out = []
        for name in names:
            p = self._profiles[name]
            out.append(ModelFigures(
                profile=name, models=tuple(sorted(p.models)),
                requests=p.decisions + p.fallbacks, decisions=p.decisions, cached=p.cached,
                fallbacks=p.fallbacks, invalid=p.invalid,
                latency_p50_ms=round(percentile(p.latencies, 0.5), 1),
                latency_p95_ms=round(percentile(p.latencies, 0.95), 1),
                prompt_tokens=p.prompt_tokens, cached_tokens=p.cached_tokens,
                answer_tokens=p.answer_tokens, cost=round(p.cost, 6)))
        return tuple(out)
