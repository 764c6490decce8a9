"""The ``decisions`` section: what every brain that decides off the tick shares (the LLM's,
users' brains and policies, remote agents), with a kind's own values where it differs.

These settings pace the decision pipeline, outside the simulation: they never travel in a
world's state, so they never change its hash. ``MOVED`` lists the keys they replace, which
keep working for one release (``load.py`` moves them here and says so once).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_world.config.base import ConfigError, setting

__all__ = ["KINDS", "KIND_DEFAULTS", "MOVED", "DecisionsConfig", "KindPace"]

KINDS = ("llm", "brains", "remote")
WHOLE = ("think_interval_ticks", "min_gap_ticks", "deadline_ms", "workers")
SHARED = (*WHOLE, "decisions_per_agent_hour", "decisions_per_hour")

KIND_DEFAULTS: dict[str, dict[str, float]] = {
    # A model's answer costs money and seconds: LLM agents ask less often. (Their workers
    # are unused: the transport answers them; the value stays for configs that set it.)
    "llm": {"think_interval_ticks": 600, "min_gap_ticks": 20, "workers": 4,
            "decisions_per_agent_hour": 120},
    "brains": {},
    # A client on the far side of a network answers later than a brain in this process.
    "remote": {"deadline_ms": 2000},
}
"""A kind's own values where it differs from the shared ones, unless the configuration
gives them (``decisions.<kind>``)."""

KIND_LEAST: dict[str, dict[str, float]] = {
    # The gap is also the shortest interval a client may ask for, and a network answer
    # takes some time.
    "remote": {"min_gap_ticks": 1, "deadline_ms": 10},
}

MOVED: dict[str, tuple[str, ...]] = {
    "llm": ("think_interval_ticks", "min_gap_ticks", "workers", "decisions_per_agent_hour",
            "decisions_per_hour"),
    "brains": ("think_interval_ticks", "min_gap_ticks", "deadline_ms", "workers"),
    "remote": ("think_interval_ticks", "min_gap_ticks", "deadline_ms"),
}
"""Settings that moved, by their old section: ``llm.workers`` is now ``decisions.llm.workers``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KindPace:
    """One kind's settings, the shared ones with its own on top."""

    think_interval_ticks: int
    min_gap_ticks: int
    deadline_ms: int
    workers: int
    decisions_per_agent_hour: float
    decisions_per_hour: float


_KIND_LABEL = {"llm": ("LLM agents'", "{think_interval_ticks: 300}"),
               "brains": ("your brains' and policies'", "{deadline_ms: 1000}"),
               "remote": ("remote agents'", "{deadline_ms: 5000}")}


def _kind_doc(kind: str) -> str:
    label, example = _KIND_LABEL[kind]
    defaults = ", ".join(f"{k} {v:g}" for k, v in KIND_DEFAULTS[kind].items())
    return (f"{label} own values where they differ from the shared ones above, e.g. "
            f"{example}; a setting left out is "
            + (f"their default ({defaults}) or else " if defaults else "")
            + "the shared one")


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionsConfig:
    """Brains that decide off the tick (LLM agents, your brains and policies, remote agents):
    how often they ask, how long an answer may take, how many threads answer. Each kind may
    set its own values (llm, brains, remote); the shared ones hold for the rest."""

    think_interval_ticks: int = setting(
        50, "an agent asks again after this many ticks even if nothing happened (an LLM "
        "agent also when its last answer asked to be, ask_again_s; a remote client may ask "
        "for a shorter interval per agent)", low=1, high=10**7,
    )
    min_gap_ticks: int = setting(
        5, "fewest ticks between two requests of one agent, whatever happens", low=0,
        high=10**7,
    )
    deadline_ms: int = setting(
        500, "longest a brain or a remote client may take for one decision; past it the "
        "agent uses its built-in brain for that decision (an LLM call is held to "
        "llm.request_timeout_s instead)", low=1, high=600_000,
    )
    workers: int = setting(
        2, "threads that answer requests (LLM agents have none: their requests are coroutines "
        "on the LLM transport's thread, llm.max_concurrent at once; remote agents' clients "
        "answer for themselves)",
        low=1, high=64,
    )
    decisions_per_agent_hour: float = setting(
        0, "pace of an agent's unprompted decisions (interval, plan ended, a newcomer) per "
        "hour of world time, with bursts of 3; attacked, starving, spoken to or offered a "
        "trade, it asks at once (0: no pace)", low=0, high=1_000_000,
    )
    decisions_per_hour: float = setting(
        0, "the same pace for all agents of a kind together (0: no pace)", low=0, high=10**9,
    )
    llm: dict[str, float] = setting({}, _kind_doc("llm"), low=0)
    brains: dict[str, float] = setting({}, _kind_doc("brains"), low=0)
    remote: dict[str, float] = setting({}, _kind_doc("remote"), low=0)

    def __post_init__(self) -> None:
        fields = {f.name: f for f in dataclasses.fields(self)}
        for kind in KINDS:
            for key, value in getattr(self, kind).items():
                if key not in SHARED:
                    raise ConfigError(f"decisions.{kind}.{key} is not a setting a kind may "
                                      f"set; expected one of {', '.join(SHARED)}")
                _check(f"decisions.{kind}.{key}", key, value, fields[key].metadata)
            # Whole numbers stay whole (the loader reads a kind's values as numbers).
            object.__setattr__(self, kind, {k: int(v) if k in WHOLE else v
                                            for k, v in getattr(self, kind).items()})
            pace = self.of(kind)
            for key, least in KIND_LEAST.get(kind, {}).items():
                if getattr(pace, key) < least:
                    raise ConfigError(
                        f"decisions.{kind}.{key} is {getattr(pace, key)} (from "
                        f"decisions.{key} when not given), below {kind}'s least, "
                        f"{least:g}; set decisions.{kind}.{key}")

    def of(self, kind: str) -> KindPace:
        """``kind``'s settings: its own where given, else its default, else the shared."""
        if kind not in KINDS:
            raise ValueError(f"{kind!r} is not one of {KINDS!r}")
        own = {**KIND_DEFAULTS[kind], **getattr(self, kind)}
        values: dict[str, Any] = {key: own.get(key, getattr(self, key)) for key in SHARED}
        for key in WHOLE:
            values[key] = int(values[key])
        return KindPace(**values)


def _check(name: str, key: str, value: float, meta: Mapping[str, Any]) -> None:
    low, high = meta["low"], meta["high"]
    whole = key in WHOLE
    expected = (f"expected {'a whole number' if whole else 'a number'} >= {low:g} and "
                f"<= {high:g}")
    if (whole and not float(value).is_integer()) or not low <= value <= high:
        raise ConfigError(f"{name} = {value:g} is invalid; {expected}")
