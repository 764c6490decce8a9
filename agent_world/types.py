"""The seams: contracts that the core offers and that outer layers plug into.

Kept in one small module so a reader sees them first. Everything here is plain data or an
abstract interface; nothing imports the engine.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

JSON: TypeAlias = Any
"""A value made only of dict (str keys), list, str, int, float, bool and None."""

Event: TypeAlias = dict[str, Any]
"""An output event: ``{"type": ..., ...}`` with JSON-only values; ``tick`` is added on output."""

ENTITY_KEYS = ("agent", "target", "victim", "to", "killer")
"""Event fields that hold an entity id (see the ``emit`` calls in the core)."""


class Clock(abc.ABC):
    """Time as the tick loop sees it. Injected so that tests never sleep."""

    @abc.abstractmethod
    def now(self) -> float:
        """Seconds on a monotonic scale."""

    @abc.abstractmethod
    async def sleep_until(self, deadline: float) -> None:
        """Return at or after ``deadline`` (in ``now()`` seconds)."""


class MonotonicClock(Clock):
    """The real clock: ``time.monotonic`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep_until(self, deadline: float) -> None:
        import asyncio  # noqa: PLC0415 - kept out of the import of this leaf module

        delay = deadline - time.monotonic()
        await asyncio.sleep(max(0.0, delay))


class FakeClock(Clock):
    """A clock that moves only when told to, or jumps straight to the deadline it is awaited
    for. ``sleeps`` records every wait so tests can check the pacing without waiting."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0, got {seconds}")
        self._now += seconds

    async def sleep_until(self, deadline: float) -> None:
        import asyncio  # noqa: PLC0415 - kept out of the import of this leaf module

        self.sleeps.append(max(0.0, deadline - self._now))
        self._now = max(self._now, deadline)
        await asyncio.sleep(0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Input:
    """Something from outside the world (console, LLM, angel, wall clock), stamped with the
    tick it is applied at and a sequence number that totally orders all inputs of a world."""

    tick: int
    seq: int
    type: str
    data: Mapping[str, JSON]
    source: str = "console"

    def __post_init__(self) -> None:
        if self.tick < 0 or self.seq < 0:
            raise ValueError(f"tick and seq must be >= 0, got tick={self.tick} seq={self.seq}")
        if not self.type:
            raise ValueError("input type must be a non-empty string")

    def to_dict(self) -> dict[str, JSON]:
        return {"tick": self.tick, "seq": self.seq, "type": self.type,
                "source": self.source, "data": dict(self.data)}

    @classmethod
    def from_dict(cls, d: Mapping[str, JSON]) -> Input:
        return cls(tick=int(d["tick"]), seq=int(d["seq"]), type=str(d["type"]),
                   data=dict(d.get("data") or {}), source=str(d.get("source", "console")))


@dataclass(frozen=True, slots=True, kw_only=True)
class TickReport:
    """What one tick did: the inputs it applied (in order) and the events it produced."""

    tick: int
    inputs: Sequence[Input]
    events: Sequence[Event] = field(default_factory=list)


@runtime_checkable
class TickObserver(Protocol):
    """Receives every tick's report on the main thread; must return quickly (hand work to a
    thread of its own)."""

    def on_tick(self, report: TickReport) -> None: ...


@runtime_checkable
class Stateful(Protocol):
    """A piece whose whole state round-trips through JSON-only values."""

    def get_state(self) -> JSON: ...

    def set_state(self, state: JSON) -> None: ...


# -- abilities ---------------------------------------------------------------------------------
# The core decides who casts what and applies the effects; the code itself runs behind this
# seam (agent_world.sandbox implements it). Everything crossing it is plain data.

ABILITY_METADATA = ("NAME", "DESCRIPTION", "ENERGY_COST", "COOLDOWN", "RANGE", "ARGS")
"""The literal assignments an ability source makes (ARGS may be left out: no arguments),
besides its one ``def execute(ctx):`` returning a list of effect dicts."""
MAX_ABILITY_SOURCE = 16_000
"""Characters an ability source may have."""

ABILITY_OK = "ok"
"""The call returned effects (a deterministic outcome: a replay computes the same)."""
ABILITY_ERROR = "error"
"""The code raised, hit its step budget or a size guard, or returned something that is not
effect data (deterministic too: a replay computes the same)."""
ABILITY_KILLED = "killed"
"""Stopped from outside by a backstop: the wall-clock or CPU limit, the memory limit, a worker
that died. Depends on the machine, so the world records it as an input and a replay uses the
record."""
ABILITY_POSTPONED = "postponed"
"""Not started because the calls before it in the tick took the tick's steps
(``abilities.tick_steps``); the caster tries again next tick. Recorded as an input like a
kill (a replay takes the log's word for it)."""
TICK_STEPS_SPENT = "the tick's ability steps ran out (abilities.tick_steps)"
"""The reason a postponed call gives."""
ABILITY_STATUSES = (ABILITY_OK, ABILITY_ERROR, ABILITY_KILLED, ABILITY_POSTPONED)
RECORDED_STATUSES = (ABILITY_KILLED, ABILITY_POSTPONED)
"""Outcomes the world logs as ``ability_outcome`` inputs, so a replay need not compute them."""


def _check_digest(digest: str) -> None:
    if len(digest) != 64:
        raise ValueError(f"digest must be a sha256 hex digest, got {digest!r:.80}")


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilityCall:
    """One execution of an ability's ``execute(ctx)``: the source (known by its sha256 digest,
    so a worker compiles it once), and ``ctx``, plain JSON data holding everything the code
    may see, including the seed of its own random numbers."""

    caster: int
    ability: str
    digest: str
    source: str
    ctx: Mapping[str, JSON]

    def __post_init__(self) -> None:
        _check_digest(self.digest)


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilityResult:
    """What one call came to. ``effects`` is the returned JSON data when ``status`` is ok;
    ``reason`` says what went wrong otherwise. ``ms`` (wall time) and ``cpu_ms`` (the
    worker's CPU time) are for statistics and the checker's verdict on slow code only."""

    status: str
    effects: JSON = None
    reason: str = ""
    steps: int = 0
    ms: float = 0.0
    cpu_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in ABILITY_STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {ABILITY_STATUSES!r}")


# -- policies ----------------------------------------------------------------------------------
# An agent's brain written as sandboxed code (docs/policies.md): it runs in the same sandbox as
# abilities, off the tick, and its decisions enter the world as plan inputs like any brain's.

POLICY_METADATA = ("NAME", "DESCRIPTION", "VERSION", "PARENT")
"""The literal assignments a policy source makes (PARENT may be left out: an original),
besides literal UPPER_CASE constants, helper functions and one ``def decide(obs, memory):``
returning ``{"action": ..., "args": {...}, "memory": {...}}``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyCall:
    """One call of a policy's ``decide(obs, memory)`` for one agent: the source (known by its
    sha256 digest) and ``ctx``, plain JSON data: ``obs`` (the observation's ``to_dict()``),
    ``memory`` (what the agent's last decision kept) and ``seed`` (its random numbers)."""

    agent: int
    policy: str
    digest: str
    source: str
    ctx: Mapping[str, JSON]

    def __post_init__(self) -> None:
        _check_digest(self.digest)


@runtime_checkable
class AbilityRunner(Protocol):
    """Runs ability code for the world, all calls of one tick in one batch.

    ``run`` returns one result per call, in order, and never raises for anything the code
    does. ``steps`` and ``alloc`` are the world's step and allocation budgets per call;
    ``tick_steps`` the steps the batch may take in all (0: no limit): a call is postponed
    when the calls before it took that many. ``replaying`` is true when the tick's inputs
    come from a log: the runner must then postpone nothing (the log says what was) and
    should allow calls more wall time, because the log, not this machine's speed, decides
    which calls were stopped."""

    def run(self, calls: Sequence[AbilityCall], *, replaying: bool, steps: int,
            alloc: int, tick_steps: int = 0) -> list[AbilityResult]: ...


# -- language models ---------------------------------------------------------------------------

ERROR_KINDS = (
    "connect", "timeout", "rate_limited", "server", "overloaded", "auth", "credit",
    "bad_request", "malformed", "too_large", "empty", "length", "refused", "schema",
    "budget", "breaker",
)
"""What can go wrong with one model call. ``ProviderError.kind`` is one of these."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMRequest:
    """One model call, as plain data: a system prompt (static world rules first, so provider
    prefix caches hit), one user message, and the sampling parameters. ``schema`` is the JSON
    Schema the answer must follow (structured output where the server supports it)."""

    system: str
    prompt: str
    schema: Mapping[str, JSON] | None = None
    temperature: float = 0.7
    max_tokens: int = 256
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {self.temperature}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    def to_dict(self) -> dict[str, JSON]:
        return {"system": self.system, "prompt": self.prompt, "schema": self.schema,
                "temperature": self.temperature, "max_tokens": self.max_tokens,
                "seed": self.seed, "stop": list(self.stop)}


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMUsage:
    """Tokens of one call; ``estimated`` when the server reported none (about 4 characters a
    token). ``cost`` in US dollars when the provider reports it (OpenRouter does)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    estimated: bool = False

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, JSON]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens":
                self.completion_tokens, "cached_tokens": self.cached_tokens,
                "cost": self.cost, "estimated": self.estimated}


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMResponse:
    """What a provider answered: the text (a JSON document when structured output worked),
    why generation stopped (``stop``, ``length``, ``tool_use`` ...), usage and timing."""

    text: str
    usage: LLMUsage
    latency_s: float
    model: str
    finish_reason: str = "stop"


class ProviderError(Exception):
    """A model call that failed. ``kind`` (one of ``ERROR_KINDS``) decides what happens next:
    retry, back off, fall back or stop calling. ``retry_after`` is the server's wish in
    seconds, if it said. ``sent`` is False when the request never reached the server (the
    connection could not be made): another replica may take it at once. Messages never
    hold an API key (providers redact them)."""

    def __init__(self, kind: str, message: str, *, status: int | None = None,
                 retry_after: float | None = None, sent: bool = True) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"{kind!r} is not one of {ERROR_KINDS!r}")
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        self.sent = sent

    @property
    def retryable(self) -> bool:
        return self.kind in ("connect", "timeout", "rate_limited", "server", "overloaded")


@runtime_checkable
class LLMProvider(Protocol):
    """A language model behind one small interface: request in; text, usage and timing out.

    A provider is used from one event loop (one LLM worker thread) and owns its connections
    there. ``identity()`` is what makes two calls the same for the response cache (provider,
    base URL, model, output mode); it never holds a key or a header."""

    name: str

    def identity(self) -> Mapping[str, JSON]: ...

    async def complete(self, *, request: LLMRequest, timeout_s: float) -> LLMResponse: ...

    async def aclose(self) -> None: ...
