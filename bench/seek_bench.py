"""Seeking a recorded world (``python -m bench --only seek``): how long ``/seek TICK`` takes
in ``python main.py replay saves/NAME --serve`` at 1,000 agents, from the seek points the
running world left in its save folder, before the background indexer has run at all.

A 1,000-agent world is recorded as ``python main.py`` records one (persistence on, its
default seek points, spaced by what its ticks cost), flat out; its recording is then opened
as the served replay opens it (``open_recording``: same session, loop and seek code, without
the HTTP server and the indexer, so only the save folder helps) and sought to targets in
falling order, so no seek can start from the world on screen. The targets include the worst
case for seek points: the tick before each saved state (the most ticks to replay). Then
``replay --to T`` (in process) for three of the targets: load the nearest saved state,
replay and verify to T. Last, the whole recording verified as ``replay`` does, on one core
and by default (in spans on every CPU, when it is long enough to split).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.cli.replay import available_cpus, run_replay, sandboxed
from agent_world.persistence import SaveFolder
from agent_world.sandbox import Sandbox
from agent_world.web.playback import open_recording
from bench.engine import build_world
from bench.scenario import MeasuredLoop, saved_session

__all__ = ["measure_seek"]

AGENTS = 1000
GOAL_S = 2.0


def _record(root: Path, ticks: int) -> tuple[SaveFolder, Any, dict[str, Any]]:
    world, config, _info = build_world(AGENTS, root, warmup_ticks=20)
    session = saved_session(world, config, f"seek-{AGENTS}")
    started = time.perf_counter()
    asyncio.run(session.run(max_ticks=ticks, paced=False))
    assert session.persistence is not None
    folder = session.persistence.folder
    session.close()
    stats = session.persistence.stats()
    ticked = session.loop.total_s if isinstance(session.loop, MeasuredLoop) else []
    points = folder.seek_points()
    sizes = [path.stat().st_size for _tick, path in points]
    gaps = [b - a for a, b in itertools.pairwise([folder.history()[0][0],
                                                  *(t for t, _ in points)])]
    return folder, config, {
        "ticks": ticks, "record_s": round(time.perf_counter() - started, 1),
        "seek_points": len(points),
        "seek_point_kb_mean": round(sum(sizes) / len(sizes) / 1024, 1) if sizes else None,
        "seek_interval_ticks": config.persistence.seek_interval_ticks,
        "seek_target_ms": config.persistence.seek_target_ms,
        "seek_gap_ticks": [min(gaps), max(gaps)] if gaps else None,
        "seek_bytes": sum(sizes),
        # What the seek points were spaced by: the ticks' cost on the main thread.
        "tick_ms_mean": round(sum(ticked) / len(ticked) * 1000, 2) if ticked else None,
        "state_main_ms_max": stats["state_main_ms_max"],
    }


def _targets(first: int, last: int, starts: list[int], count: int) -> list[int]:
    """Random ticks, and the tick before each saved state (``starts``: where seeks start
    from; the ticks before them replay the most)."""
    rng = random.Random(13)
    worst = [t - 1 for t in starts if first < t - 1 <= last]
    rng.shuffle(worst)
    chosen = set(worst[: count // 2])
    while len(chosen) < count:
        chosen.add(rng.randint(first + 1, last))
    return sorted(chosen, reverse=True)


async def _seeks(folder: SaveFolder, config: Any, targets: list[int]) -> list[dict[str, Any]]:
    sandbox = Sandbox(config, wait=False)
    playback = open_recording(folder, config, sandbox.install)
    rows = []
    try:
        for tick in targets:
            started = time.perf_counter()
            said = await playback.seek(tick)
            rows.append({"tick": tick, "seconds": round(time.perf_counter() - started, 3),
                         "from": said})
    finally:
        await playback.close()
        sandbox.close()
    return rows


def _replay_to(folder: SaveFolder, config: Any, targets: list[int]) -> list[dict[str, Any]]:
    """``python main.py replay saves/NAME --to T`` in process: load the nearest saved state,
    replay and verify to T, print the hash."""
    rows = []
    for tick in targets:
        sandbox = Sandbox(config, wait=False)
        out = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out):
            status = run_replay(folder.root, config, to=tick, playback=None,
                                setup=sandbox.install)
        rows.append({"tick": tick, "seconds": round(time.perf_counter() - started, 2),
                     "status": status})
        sandbox.close()
    return rows


def _verify_whole(folder: SaveFolder, config: Any, log: Callable[[str], None]
                  ) -> dict[str, Any]:
    """``python main.py replay saves/NAME`` in process, on one core and by default (in spans
    on every CPU when the log is long enough): the time to verify the whole recording."""
    rows: dict[str, Any] = {}
    for label, workers in (("one_core", 1), ("default", available_cpus())):
        log(f"seek: verifying the whole recording ({label.replace('_', ' ')})")
        sandbox = Sandbox(config, wait=False)
        out = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out):
            status = run_replay(folder.root, config, to=None, playback=None,
                                setup=sandbox.install, workers=workers,
                                setup_factory=sandboxed)
        rows[label] = {"seconds": round(time.perf_counter() - started, 1), "status": status,
                       "processes": workers if ", in " in out.getvalue() else 1}
        sandbox.close()
    return rows


def measure_seek(*, quick: bool = False, log: Callable[[str], None] = print,
                 root: Path, ticks: int | None = None) -> dict[str, Any]:
    """``ticks``: how long a recording to make (default 3,000; 400 with ``quick``)."""
    count = 6 if quick else 24
    ticks = ticks or (400 if quick else 3000)
    log(f"seek: recording {AGENTS:,} agents for {ticks:,} ticks")
    folder, config, recorded = _record(root, ticks)
    meta_first = folder.history()[0][0]
    targets = _targets(meta_first, meta_first + ticks,
                       [t for t, _path in folder.saved_states()], count)
    log(f"seek: {len(targets)} seeks into the recording")
    rows = asyncio.run(_seeks(folder, config, targets))
    seconds = sorted(r["seconds"] for r in rows)
    log("seek: replay --to into the recording")
    replays = _replay_to(folder, config, targets[:3])
    verified = _verify_whole(folder, config, log)
    return {
        "agents": AGENTS, "recorded": recorded, "seeks": rows, "replay_to": replays,
        "verify": verified,
        "p50_s": seconds[len(seconds) // 2], "max_s": seconds[-1],
        "over_goal": sum(s > GOAL_S for s in seconds), "goal_s": GOAL_S,
    }
