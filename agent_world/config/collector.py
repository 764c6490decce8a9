"""The ``collector`` section: memory of a world left running (agent_world/gcpolicy.py)."""

from __future__ import annotations

from dataclasses import dataclass

from agent_world.config.base import setting

__all__ = ["CollectorConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectorConfig:
    """Memory of a world left running: Python's cyclic garbage collector runs between ticks
    and puts what survives aside, so its pauses stay short however large the world
    (agent_world/gcpolicy.py); a sweep, which walks everything, frees the reference cycles
    that became garbage after they were put aside (the web server leaves none when a
    connection closes, so sweeps are a backstop)."""

    sweep_after_connections: int = setting(
        32, "a sweep runs once this many closed web connections are still held in memory "
        "by reference cycles (a few KB each); 0: only the periodic sweep", low=0,
        high=1_000_000,
    )
    sweep_every_minutes: float = setting(
        60.0, "the first periodic sweep runs after this, for cycles of other origins; later "
        "ones come at the pace such garbage comes (when about 50,000 objects should be "
        "waiting), at most twice as late as the last and at most a day apart; 0: never. "
        "A sweep pauses the world between two ticks for about 50 ms at 10 agents, 70-100 ms "
        "at 1,000 and 0.5 s at 10,000 agents (bench/RESULTS.md); sweeps are 2 s apart at "
        "least, and one longer than 100 ms is followed by 100 times its length, so long "
        "sweeps take at most 1% of the time", low=0, high=10**6,
    )
