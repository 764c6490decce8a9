"""A session: one world with everything attached to it (tick loop, world log, ...).

The CLI builds a session from the configuration; tests build one with a fake clock.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from agent_world.config import Config
from agent_world.core.loop import TickLoop
from agent_world.core.world import World
from agent_world.gcpolicy import GcPolicy
from agent_world.llm import LLMManager, ProviderFactory, build_manager
from agent_world.persistence.folder import SaveFolder
from agent_world.persistence.writer import Persistence
from agent_world.types import Clock, MonotonicClock, TickReport
from agent_world.worldlog import WorldLog

__all__ = ["EventCounter", "Session"]


class EventCounter:
    """Counts every output event (by type) for summaries and /stats."""

    def __init__(self) -> None:
        self.total = 0
        self.by_type: dict[str, int] = {}

    def on_tick(self, report: TickReport) -> None:
        self.total += len(report.events)
        by_type = self.by_type
        for event in report.events:
            kind = event["type"]
            by_type[kind] = by_type.get(kind, 0) + 1


class Session:
    def __init__(self, config: Config, world: World, *, clock: Clock | None = None,
                 echo: TextIO | None = None, folder: SaveFolder | None = None,
                 resumed: bool = False, llm_provider: ProviderFactory | None = None,
                 llm_clock: Clock | None = None) -> None:
        self.config = config
        self.world = world
        self.events = EventCounter()
        self.world_log = WorldLog(
            Path(config.paths.logs) / "world.log",
            max_bytes=config.log.world_log_max_bytes,
            backups=config.log.world_log_backups,
            everything=config.log.everything,
            echo=echo,
        )
        self.loop = TickLoop(world, clock or MonotonicClock(), config.world.tick_rate,
                             observers=[self.events, self.world_log])
        self.persistence: Persistence | None = None
        if folder is not None:
            self.persistence = Persistence(folder, config.persistence, world,
                                           report=self.report_problem)
            self.loop.observers.append(self.persistence)
            self.persistence.marker("resume" if resumed else "start")
        # LLM agents: decisions come back only as plan inputs through the inbox. None when
        # no provider is configured (LLM agents then use their built-in brains).
        self.llm: LLMManager | None = None
        if config.llm.enabled:
            self.llm = build_manager(
                config.llm, world, clock=llm_clock,
                memories=folder.memories_dir if folder is not None else None,
                report=self.report_problem,
                note=lambda text: self.world_log.note(self.world.tick, text),
                factory=llm_provider)
            self.loop.observers.append(self.llm)
        self.gc = GcPolicy()
        self.loop.between_ticks = self.gc.between_ticks
        self.started = time.monotonic()
        self.start_tick = world.tick
        self._closed = False

    @property
    def save_dir(self) -> Path | None:
        return self.persistence.folder.root if self.persistence else None

    def report_problem(self, message: str) -> None:
        """Say it loudly: on the terminal and in the world log (any thread may call this)."""
        print(message, file=sys.stderr, flush=True)
        self.world_log.note(self.world.tick, message)

    async def run(self, *, max_ticks: int | None = None, paced: bool = True) -> None:
        self.world_log.note(self.world.tick, f"world '{self.config.world.name}' running from "
                            f"tick {self.world.tick} (seed {self.world.seed})")
        await self.loop.run(max_ticks=max_ticks, paced=paced)

    def summary(self) -> dict[str, Any]:
        """The one-line result of a run, for scripts comparing runs."""
        elapsed = time.monotonic() - self.started
        ticks = self.world.tick - self.start_tick
        return {
            "world": self.config.world.name,
            "seed": self.world.seed,
            "tick": self.world.tick,
            "state_hash": self.world.state_hash(),
            "agents_alive": len(self.world.agents()),
            "events": self.events.total,
            "ticks_run": ticks,
            "elapsed_s": round(elapsed, 3),
            "ticks_per_s": round(ticks / elapsed, 1) if elapsed > 0 else None,
            **({"llm_decisions": self.llm.metrics.applied} if self.llm is not None else {}),
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.llm is not None:
            self.llm.close()
        if self.persistence is not None:
            self.persistence.close()
        self.world_log.note(self.world.tick, f"world '{self.config.world.name}' stopped at "
                            f"tick {self.world.tick}")
        self.world_log.close()
        self.gc.close()
