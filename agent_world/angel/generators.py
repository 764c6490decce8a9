"""Who writes an ability's code: the generator protocol, and the LLM generator.

A generator turns a request (and the failures of earlier attempts) into source text; the
angel checks every source it gets exactly like a hand-written file. ``TextModel`` is the
one thing the angel needs from an LLM provider: prompt in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Protocol, runtime_checkable

from agent_world.config import AbilitiesConfig
from agent_world.core.abilities import ARG_KINDS, STATUSES
from agent_world.core.effects import EFFECTS
from agent_world.core.scene import Scene
from agent_world.types import ProviderError

__all__ = ["AbilityRequest", "CannotWrite", "FallbackGenerator", "Generator", "Improvement",
           "LLMGenerator", "TextModel", "build_prompt", "extract_code"]

MAX_RESPONSE_CHARS = 40_000


class CannotWrite(Exception):
    """The writer knows it cannot meet the request; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class Improvement:
    """``/ability improve NAME``: the ability as it is and how it did in the world."""

    name: str
    source: str
    figures: tuple[str, ...]  # AbilityFigures.lines()


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilityRequest:
    """One request for a new ability. ``request`` and ``agent`` are 0 for the operator.

    With ``source`` the ability is already written (``/ability load FILE``): the angel only
    checks it, once, and hands it over with ``origin``; ``text`` then names the file.
    ``scenes`` are copies of the world's neighbourhoods (the asker's first) to dry-run in;
    ``ticket`` is how the session's link knows the request when its answer comes back."""

    request: int
    agent: int
    text: str
    taken: tuple[str, ...] = ()
    source: str | None = None
    origin: str = ""
    scenes: tuple[Scene, ...] = ()
    ticket: int = 0
    improve: Improvement | None = None

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError("an ability request needs a description")


@runtime_checkable
class Generator(Protocol):
    """Writes sources. ``repeatable``: the same request always gets the same source (the
    templates), so the world may take its answers at fixed ticks and stay the same on every
    machine; an LLM's answers are taken when they come."""

    name: str
    repeatable: bool

    def write(self, request: AbilityRequest, feedback: Sequence[str]) -> str:
        """Source text for the request; ``feedback`` holds why earlier attempts failed."""

    def close(self) -> None:
        """Release what the generator holds (connections ...). The angel calls it on its own
        thread, the one ``write`` ran on, when it stops."""


@runtime_checkable
class TextModel(Protocol):
    """What the angel needs from an LLM: a prompt in, the model's text out (raising on
    transport failure after its own retries)."""

    def complete(self, prompt: str) -> str: ...


_EXAMPLES = ("heal.py", "fire_bolt.py", "build_shelter.py")


def _example_sources() -> list[str]:
    folder = resources.files("agent_world").joinpath("abilities")
    return [folder.joinpath(name).read_text(encoding="utf-8") for name in _EXAMPLES]


def build_prompt(request: AbilityRequest, feedback: Sequence[str],
                 rules: AbilitiesConfig) -> str:
    """The angel's prompt: the contract, the effect vocabulary with its caps, examples, the
    request and what went wrong before."""
    effects = "\n".join(
        f"- {kind}: " + ", ".join(k.removesuffix("?") + (" (optional)" if k.endswith("?")
                                                         or v.endswith("?") else "")
                                  for k, v in keys.items())
        for kind, keys in EFFECTS.items())
    args = ", ".join(f"{k} ({'/'.join(v)})" for k, v in ARG_KINDS.items())
    examples = "\n\n".join(f"```python\n{src.strip()}\n```" for src in _example_sources())
    tried = "".join(f"\n- attempt {i + 1}: {why}" for i, why in enumerate(feedback))
    return f"""You write one ability for agents in a simulated 2-D world.

An ability is a Python source file with literal metadata and exactly one function:
NAME (2-32 of a-z, 0-9, _; not one of: {', '.join(request.taken) or 'none'}),
DESCRIPTION (one line), ENERGY_COST (0-100), COOLDOWN (ticks), RANGE (0-{rules.max_range}
tiles), ARGS (dict of argument to kind; arguments: {args}; add '?' for optional),
and def execute(ctx): returning a list of at most {rules.max_effects} effect dicts.

ctx is plain data: ctx["caster"] (id, name, x, y, health, energy, hunger, items, gold,
statuses), ctx["target"] (the target entity or None), ctx["tile"] (x, y, blocked, or None),
ctx["args"], ctx["nearby"] (agents, objects, items: lists of dicts with id, x, y,
distance), ctx["tick"]. Random numbers: rand(), rand_int(a, b), rand_choice(seq),
rand_chance(p). Also available: abs, min, max, len, range, sorted, sum, round, int,
float, str, list, dict, enumerate, zip, any, all, sqrt, floor, ceil, clamp, sign,
chebyshev(x1, y1, x2, y2).

Effects (the world checks range, energy, cooldown and caps: damage <= {rules.max_damage:g},
heal <= {rules.max_heal:g}, move <= {rules.max_move_tiles} tiles, push <= {rules.max_push_tiles},
created items <= {rules.max_created_items}, status ticks <= {rules.max_status_ticks};
statuses: {', '.join(STATUSES)}):
{effects}

Rules: no imports, classes, global, try/except*, names starting with _, or attributes
other than plain dict/list/str methods. Loops are fine but bounded by a step budget.

Examples:

{examples}

Request: {request.text}
{_improving(request.improve)}{('Earlier attempts failed:' + tried) if tried else ''}
Answer with only the source file in one ```python block."""


def _improving(improve: Improvement | None) -> str:
    if improve is None:
        return ""
    figures = "\n".join(f"- {line}" for line in improve.figures)
    return (f"\nWrite a better version of the ability {improve.name}, under a new NAME: keep "
            "what works and fix what its figures in the world show going wrong. Its source:"
            f"\n```python\n{improve.source.strip()}\n```\nHow it did in the world:\n"
            f"{figures}\n")


_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str:
    """The source in a model's answer: the first fenced block, else the whole text."""
    text = text[:MAX_RESPONSE_CHARS]
    match = _BLOCK.search(text)
    return (match.group(1) if match else text).strip() + "\n"


class LLMGenerator:
    """Writes abilities with an LLM (through any ``TextModel``)."""

    name = "llm"
    repeatable = False

    def __init__(self, model: TextModel, rules: AbilitiesConfig) -> None:
        self.model = model
        self.rules = rules

    def write(self, request: AbilityRequest, feedback: Sequence[str]) -> str:
        return extract_code(self.model.complete(build_prompt(request, feedback, self.rules)))

    def close(self) -> None:
        close = getattr(self.model, "close", None)  # a TextModel may hold nothing to release
        if callable(close):
            close()


class FallbackGenerator:
    """Writes with ``primary`` (the LLM) and, when the model cannot answer (a
    ``ProviderError`` after the provider's own retries: unreachable, timing out, refusing),
    writes that attempt with ``fallback`` (the templates) instead. A world whose LLM is
    down still gets abilities, as a world without one does, instead of every request being
    refused. Each fallback is counted; the operator is told once when the model stops
    answering and once when it answers again."""

    repeatable = False  # the model's answers are taken when they come

    def __init__(self, primary: Generator, fallback: Generator, *,
                 report: Callable[[str], None] = lambda _text: None) -> None:
        self.primary = primary
        self.fallback = fallback
        self.report = report
        self.name = f"{primary.name}, or {fallback.name} when it cannot answer"
        self.fallbacks = 0
        self.last_error: str | None = None
        self._down = False

    def write(self, request: AbilityRequest, feedback: Sequence[str]) -> str:
        try:
            source = self.primary.write(request, feedback)
        except ProviderError as exc:
            self.fallbacks += 1
            self.last_error = f"{exc.kind}: {exc}"
            if not self._down:
                self._down = True
                self.report(f"angel: the LLM cannot write abilities now ({self.last_error}); "
                            f"the {self.fallback.name} write them until it answers again")
            try:
                return self.fallback.write(request, feedback)
            except CannotWrite as cannot:
                raise CannotWrite(f"the LLM cannot answer ({self.last_error}), and {cannot}"
                                  ) from None
        if self._down:
            self._down = False
            self.report(f"angel: the LLM answers again; it writes the abilities "
                        f"({self.fallbacks} written by the {self.fallback.name} meanwhile)")
        return source

    def close(self) -> None:
        try:
            self.primary.close()
        finally:
            self.fallback.close()
