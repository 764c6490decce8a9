"""Measurements of the Agent World engine at one population size.

Each function takes a world (or builds one) and returns plain figures; ``run_size`` strings
them together so one world serves every section that can share it.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_world.cli.replay import available_cpus
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.gcpolicy import GcPolicy
from agent_world.persistence import SaveFolder, replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.persistence.spans import SpanVerdict, verify_in_spans
from bench.scenario import saved_session, scaled_config, summarise

__all__ = ["Budget", "build_world", "measure_flat", "measure_paced", "measure_recorded",
           "measure_snapshots"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """How long each measurement runs (wall seconds) and its tick limits."""

    warmup_ticks: int = 20
    flat_s: float = 5.0
    paced_s: float = 60.0
    paced_min_ticks: int = 30
    paced_max_ticks: int = 600
    eventlog_s: float = 10.0
    snapshots: int = 5


def build_world(agents: int, root: Path, warmup_ticks: int) -> tuple[World, Config, dict[str, Any]]:
    """A scaled world, warmed up (its first ticks, when every agent decides at once, are
    not typical) with no persistence attached."""
    config = scaled_config(agents, root)
    started = time.perf_counter()
    world = World.create(config)
    created = time.perf_counter() - started
    for _ in range(warmup_ticks):
        world.step()
    w, h = config.world.size
    return world, config, {"agents": agents, "map": f"{w}x{h}", "entities": len(world.store),
                           "create_s": round(created, 2), "warmup_ticks": warmup_ticks}


def measure_flat(world: World, seconds: float, *, min_ticks: int = 10,
                 max_ticks: int = 5000) -> dict[str, Any]:
    """``World.step`` as fast as it goes, no persistence, no observers: the simulation.
    Garbage is collected between ticks as a session does (``GcPolicy``): ticks/s counts
    that time, the per-tick figures do not."""
    durations: list[float] = []
    policy = GcPolicy()
    started = time.perf_counter()
    try:
        while len(durations) < max_ticks and (
                len(durations) < min_ticks or time.perf_counter() - started < seconds):
            t = time.perf_counter()
            world.step()
            durations.append(time.perf_counter() - t)
            policy.between_ticks()
        elapsed = time.perf_counter() - started
    finally:
        policy.close()
    return {"ticks": len(durations), "ticks_per_s": round(len(durations) / elapsed, 1),
            **summarise(durations)}


def _ticks_for(seconds: float, tick_s: float, rate: float, low: int, high: int) -> int:
    """Ticks that fill about ``seconds`` of a paced run whose ticks take ``tick_s``."""
    per_tick = max(1.0 / rate, tick_s)
    return max(low, min(high, round(seconds / per_tick)))


def measure_paced(world: World, config: Config, name: str, *, seconds: float,
                  min_ticks: int, max_ticks: int, tick_estimate_s: float,
                  snapshots: int = 0) -> dict[str, Any]:
    """A real paced run at the configured rate (10 Hz) on the real clock, persistence on,
    into a new save folder; then, on the same session, ``snapshots`` snapshots timed."""
    rate = config.world.tick_rate
    ticks = _ticks_for(seconds, tick_estimate_s, rate, min_ticks, max_ticks)
    session = saved_session(world, config, name)
    loop = session.loop
    started = time.perf_counter()
    asyncio.run(session.run(max_ticks=ticks, paced=True))
    elapsed = time.perf_counter() - started
    step = getattr(loop, "step_s", [])
    total = getattr(loop, "total_s", [])
    persistence = getattr(loop, "persistence_s", [])
    between = getattr(loop, "between_s", [])
    busy = [t + b for t, b in zip(total, between, strict=True)]  # one period's share
    stats = loop.stats()
    assert session.persistence is not None
    pstats = session.persistence.stats()
    result: dict[str, Any] = {
        "ticks": ticks,
        "seconds": round(elapsed, 1),
        "rate_hz": round(ticks / elapsed, 2),
        "overruns": stats.overruns,
        "tick": summarise(step),
        "main_thread": summarise(total),
        "persistence": summarise(persistence),
        "between_ticks": summarise(between),
        "busy": summarise(busy),
        "state_main_ms_max": pstats["state_main_ms_max"],
        "serialized_in": pstats["serialized_in"],
        "serialized_inline": pstats["serialized_inline"],
    }
    # Work between ticks (garbage collection, the fork of a state hash) is not in the tick
    # time /stats shows, but it must fit in the period too.
    result["holds_10hz"] = result["busy"]["p99_ms"] < 1000.0 / rate
    if snapshots:
        result["snapshot"] = measure_snapshots(session, world, snapshots)
    session.close()
    return result


def measure_snapshots(session: Any, world: World, count: int) -> dict[str, Any]:
    """Snapshots of the world as it stands: the main thread's share (fork and hand-over),
    the time until the writer has it on disk, its size; and, for comparison, serialising
    on the main thread (what happens without fork, and what each state hash costs in a
    replay)."""
    persistence = session.persistence
    main_ms: list[float] = []
    total_s: list[float] = []
    write_ms: list[float] = []
    for _ in range(count):
        before = persistence.stats()["snapshots_written"]
        started = time.perf_counter()
        persistence.snapshot_now()
        main_ms.append(persistence.main_ms_last)
        while persistence.stats()["snapshots_written"] <= before:
            if time.perf_counter() - started > 120:
                raise RuntimeError("the persistence writer wrote no snapshot in 120 s")
            time.sleep(0.002)
        total_s.append(time.perf_counter() - started)
        write_ms.append(persistence.stats()["snapshot_write_ms_last"])
    inline_s = []
    for _ in range(count):
        t = time.perf_counter()
        data = world.state_bytes()
        inline_s.append(time.perf_counter() - t)
    stats = persistence.stats()
    folder: SaveFolder = persistence.folder
    gz = folder.snapshot_path(stats["last_snapshot_tick"])
    return {
        "count": count,
        "entities": len(world.store),
        "serialized_in": stats["serialized_in"],
        "main_ms": {"p50": round(sorted(main_ms)[len(main_ms) // 2], 2),
                    "max": round(max(main_ms), 2)},
        "total": summarise(total_s),
        "writer_ms_p50": round(sorted(write_ms)[len(write_ms) // 2], 2),
        "inline": summarise(inline_s),
        "bytes": len(data),
        "gz_bytes": gz.stat().st_size if gz.exists() else None,
    }


def measure_recorded(world: World, config: Config, name: str, *, seconds: float,
                     tick_estimate_s: float, replays: bool) -> dict[str, Any]:
    """A flat-out run with persistence on (event-log throughput), then the recorded run
    replayed with the persistence replay API, verifying every state hash as ``python
    main.py replay`` does, and once more without verifying."""
    ticks = max(20, min(5000, round(seconds / max(tick_estimate_s, 1e-4))))
    session = saved_session(world, config, name)
    started = time.perf_counter()
    asyncio.run(session.run(max_ticks=ticks, paced=False))
    ran = time.perf_counter() - started
    assert session.persistence is not None
    folder = session.persistence.folder
    session.close()  # waits until the writer has every line on disk
    written = time.perf_counter() - started
    pstats = session.persistence.stats()
    events = session.events.total
    result: dict[str, Any] = {
        "eventlog": {
            "ticks": ticks,
            "ticks_per_s": round(ticks / ran, 1),
            "events": events,
            "events_per_tick": round(events / ticks, 1),
            "lines_written": pstats["lines_written"],
            "bytes_written": pstats["event_bytes_written"],
            "seconds_until_on_disk": round(written, 2),
            "events_per_s": round(events / written, 0),
            "mb_per_s": round(pstats["event_bytes_written"] / written / 1e6, 2),
            "serialized_inline": pstats["serialized_inline"],
        }
    }
    if replays:
        result["replay"] = {
            "verified": _replay(folder, config, verify=True),
            "unverified": _replay(folder, config, verify=False),
            "verified_in_spans": _replay_in_spans(folder, config),
        }
    return result


def _replay(folder: SaveFolder, config: Config, *, verify: bool) -> dict[str, Any]:
    start = load_first_snapshot(folder, config)
    world = start.world
    gc.collect()
    started = time.perf_counter()
    result = replay(world, folder, verify=verify)
    elapsed = time.perf_counter() - started
    world.close()
    return _replay_figures(result.ticks, result.checks, elapsed, config)


def _replay_in_spans(folder: SaveFolder, config: Config) -> dict[str, Any]:
    """What ``python main.py replay`` does by default: the whole log verified in spans, one
    process per CPU (the time includes starting the processes and loading their worlds)."""
    workers = available_cpus()
    gc.collect()
    started = time.perf_counter()
    verdict = verify_in_spans(folder, config, workers=workers)
    elapsed = time.perf_counter() - started
    if not isinstance(verdict, SpanVerdict):
        return {"skipped": verdict or "too short to split"}
    figures = _replay_figures(verdict.result.ticks, verdict.result.checks, elapsed, config)
    return figures | {"processes": verdict.spans,
                      "worker_peak_rss_mb": round(verdict.peak_rss_kb / 1024)}


def _replay_figures(ticks: int, checks: int, elapsed: float, config: Config) -> dict[str, Any]:
    rate = ticks / elapsed if elapsed > 0 else float("inf")
    return {"ticks": ticks, "checks": checks, "seconds": round(elapsed, 2),
            "ticks_per_s": round(rate, 1),
            "x_real_time": round(rate / config.world.tick_rate, 1)}
