"""``python main.py replay saves/NAME``: verify, inspect or fork a saved world."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from agent_world.config import Config
from agent_world.persistence import DivergenceError, SaveFolder, replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.persistence.worlds import Setup
from agent_world.types import TickReport
from agent_world.worldlog import ROUTINE, format_event

__all__ = ["run_replay"]


class _Playback:
    """Paces the replay at ``speed`` times the world's tick rate and prints the world log."""

    def __init__(self, tick_rate: float, speed: float) -> None:
        self.period = 1.0 / (tick_rate * speed)
        self.deadline = time.monotonic()

    def __call__(self, report: TickReport) -> None:
        for event in report.events:
            if event.get("type") not in ROUTINE:
                print(f"t={report.tick:07d} {format_event(event)}", flush=True)
        self.deadline += self.period
        delay = self.deadline - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            self.deadline = time.monotonic()


def run_replay(path: Path, config: Config, *, to: int | None, playback: float | None,
               setup: Setup | None = None) -> int:
    """Replay from the first snapshot with logged inputs only, checking every logged hash.

    Prints OK with the speed, or the first diverging tick and what differs. Returns the exit
    status."""
    folder = SaveFolder.open(path)
    saved_rate = folder.read_meta().get("config", {}).get("world", {}).get("tick_rate")
    tick_rate = float(saved_rate) if isinstance(saved_rate, (int, float)) else (
        config.world.tick_rate)
    start = load_first_snapshot(folder, config)
    world = start.world
    if setup is not None:
        setup(world)
    on_tick = _Playback(tick_rate, playback) if playback else None
    began = time.perf_counter()
    try:
        result = replay(world, folder, until=to, on_tick=on_tick)
    except DivergenceError as exc:
        print(f"DIVERGED at tick {exc.tick}: the log recorded state {exc.expected}, the replay "
              f"reached {exc.actual}", file=sys.stderr)
        print(f"  {exc.detail}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - began
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if to is not None and world.tick < to:
        print(f"error: the log of {path} ends at tick {world.tick}; --to must be at most "
              "that", file=sys.stderr)
        return 2
    rate = result.ticks / elapsed if elapsed > 0 else float("inf")
    print(f"OK: replayed ticks {start.tick + 1}..{world.tick} ({result.ticks} ticks, "
          f"{result.inputs} inputs, {result.checks} state hashes verified) in {elapsed:.2f} s: "
          f"{rate:,.0f} ticks/s, {rate / tick_rate:,.1f}x real time")
    if to is not None:
        print(f"tick {world.tick} state_hash {world.state_hash()}")
    world.close()
    return 0
