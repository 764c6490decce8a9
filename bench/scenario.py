"""The worlds the benchmark runs: the default map scaled to N agents at constant density,
set up the way a user runs them (a Session with persistence on, the real clock)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.loop import TickLoop
from agent_world.core.world import World
from agent_world.persistence import SaveFolder
from agent_world.persistence.worlds import write_first_snapshot
from agent_world.sandbox import Sandbox
from agent_world.types import MonotonicClock, TickObserver, TickReport

__all__ = [
    "Mark",
    "MeasuredLoop",
    "percentile",
    "saved_session",
    "scaled_config",
    "side_for",
    "summarise",
]

_BASE = Config()
_BASE_AREA = _BASE.world.width * _BASE.world.height
DENSITY = _BASE.world.starting_agents / _BASE_AREA  # agents per tile on the default map


def side_for(agents: int) -> int:
    """Side of the square map that holds ``agents`` at the default map's density."""
    return max(16, round(math.sqrt(agents / DENSITY)))


def scaled_config(agents: int, root: Path | None = None) -> Config:
    """The default configuration for ``agents`` agents: the map grows with the population,
    and so do the per-map rates (items spawned per tick, immigration), so every agent sees
    the same world as on the default 64x64 map. Objects, shelters and the item cap are
    already per tile. ``root`` holds the save folders and the world log."""
    side = side_for(agents)
    scale = side * side / _BASE_AREA
    base = _BASE.world
    interval = base.immigration_interval_ticks
    world: dict[str, Any] = {
        "name": f"bench-{agents}",
        "size": [side, side],
        "starting_agents": agents,
        "max_agents": max(agents, base.max_agents),
        "item_spawn_rate": min(1000.0, base.item_spawn_rate * scale),
        "immigration_interval_ticks": max(1, round(interval / scale)) if interval else 0,
    }
    sections: dict[str, dict[str, Any]] = {"world": world, "log": {"echo": False}}
    if root is not None:
        sections["paths"] = {"saves": str(root / "saves"), "logs": str(root / "logs")}
    return _BASE.replace(**sections)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (as the tick loop's statistics use)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def summarise(seconds: list[float]) -> dict[str, float]:
    """p50/p99/max/mean of durations, in milliseconds."""
    ms = [s * 1000 for s in seconds]
    return {
        "p50_ms": round(percentile(ms, 0.50), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "max_ms": round(max(ms, default=0.0), 2),
        "mean_ms": round(sum(ms) / len(ms), 2) if ms else 0.0,
    }


class Mark:
    """A tick observer that only notes the time it was called: put around other observers
    to time them."""

    def __init__(self) -> None:
        self.last = 0.0

    def on_tick(self, report: TickReport) -> None:
        self.last = time.perf_counter()


class MeasuredLoop(TickLoop):
    """The session's tick loop, also splitting each tick's main-thread time into the
    systems (``World.step``), the observers (event counter, world log, persistence; a Mark
    before and after the persistence writer times its share) and the work the loop does
    between ticks (the session's garbage collections, and the fork of a state hash or
    snapshot)."""

    def __init__(self, loop: TickLoop, persistence: TickObserver) -> None:
        super().__init__(loop.world, loop.clock, loop.tick_rate, loop.observers)
        self.between_ticks = loop.between_ticks
        self.first = Mark()
        self.before_persistence = Mark()
        self.after_persistence = Mark()
        self.last = Mark()
        at = self.observers.index(persistence)
        self.observers[at:at + 1] = [self.before_persistence, persistence,
                                     self.after_persistence]
        self.observers.insert(0, self.first)
        self.observers.append(self.last)
        self.step_s: list[float] = []
        self.total_s: list[float] = []
        self.persistence_s: list[float] = []
        self.between_s: list[float] = []

    def tick_once(self) -> TickReport:
        started = time.perf_counter()
        report = super().tick_once()
        ended = time.perf_counter()
        observed = self.last.last  # after the last observer: the tick is done
        self.step_s.append(self.first.last - started)
        self.total_s.append(observed - started)
        self.persistence_s.append(self.after_persistence.last - self.before_persistence.last)
        self.between_s.append(ended - observed)
        return report


def saved_session(world: World, config: Config, name: str) -> Session:
    """A session as ``python main.py`` runs one, for an existing (warmed-up) world:
    persistence on, into a new save folder starting at the world's current tick (as
    ``open_world`` makes one for a new world), and the ability sandbox's workers running
    (the session owns and closes them)."""
    root = Path(config.paths.saves) / name
    folder = SaveFolder.create(root, {"world": name, "seed": world.seed,
                                      "config": config.to_dict(), "origin": None})
    write_first_snapshot(folder, world)
    sandbox = Sandbox(config)
    session = Session(config, world, clock=MonotonicClock(), folder=folder, sandbox=sandbox)
    assert session.persistence is not None
    session.loop = MeasuredLoop(session.loop, session.persistence)
    if session.angel_link is not None:
        session.angel_link.loop = session.loop  # it pauses the loop while the angel works
    return session
