"""A world left running under every kind of load, and what grows
(``python -m bench --only soak``; issue 36, item 2).

A world runs as ``python main.py --headless`` in a process of its own, saving, with built-in
agents and LLM agents on the fake OpenAI-compatible server (tests/llm_server.py, in this
process, answering after 50 ms). Against it, all the time:

- a viewer that stays (``/ws``, subscribed, reading every frame);
- churning clients: ``/ws`` connections that subscribe and leave, and ``/agents``
  connections that authenticate, claim an agent and leave (bench/churn.py), ``CHURN_HZ``
  rounds a second;
- training runs (``POST /api/train``), one after another, each a few short episodes.

Every ``SAMPLE_S`` seconds it reads, from ``/proc``, the world's resident memory, open file
descriptors, threads and child processes (all descendants: sandbox workers, episodes), and
the size of its save folder and of its training runs' folder. The figures are the slopes of
each per hour of wall time (least squares over the samples after the first ``SETTLE``
share of the run, when the world's own rings and caches are still filling), and the save
folder's growth per world-day (864,000 ticks at 10 Hz). The goal is zero slope for all but
the two folders. Minutes, not a timed test: nothing here is asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bench.churn import CHURN_TOKEN, WorldProcess, _one, world_process

__all__ = ["folder_bytes", "measure_soak", "slope_per_hour"]

SAMPLE_S = 10.0
SETTLE = 0.4  # the share of the run left out of the slopes
CHURN_HZ = 10.0  # churn rounds a second (two connections each)
TRAIN = {"scenario": "foraging", "iterations": 2, "episodes": 2, "ticks": 300}
TRAIN_GAP_S = 20.0  # between one training run's end and the next one's start
WORLD_DAY_TICKS = 864_000  # 24 hours at 10 Hz
WORLD = "soak"


def folder_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (0 when it does not exist)."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # a file replaced while walking
                total += os.stat(os.path.join(folder, name)).st_size
    return total


def _children(pid: int) -> int:
    """Descendants of ``pid`` now."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: the fields follow the last.
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
    found, frontier = 0, [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += len(kids)
        frontier.extend(kids)
    return found


def _process_figures(pid: int) -> dict[str, int]:
    status = dict(line.split(":", 1) for line in
                  Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {"rss_kb": int(status["VmRSS"].split()[0]),
            "threads": int(status["Threads"].strip()),
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "children": _children(pid)}


def slope_per_hour(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) points, per hour."""
    n = len(points)
    if n < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (v - mean_v) for t, v in points)
    return cov / var * 3600


async def _viewer(http: aiohttp.ClientSession, url: str, counts: dict[str, int]) -> None:
    """A viewer that stays: subscribed, reading every frame."""
    async with http.ws_connect(url + "/ws", heartbeat=20) as ws:
        await ws.send_str(orjson.dumps({"op": "subscribe"}).decode())
        async for _message in ws:
            counts["frames"] += 1


async def _churner(http: aiohttp.ClientSession, url: str, counts: dict[str, int]) -> None:
    agents = orjson.loads(await (await http.get(url + "/api/agents")).read())["agents"]
    agent = next(a["id"] for a in agents if a.get("brain") != "llm")
    while True:
        started = time.monotonic()
        await _one(http, url, agent)
        counts["connections"] += 2
        await asyncio.sleep(max(0.0, 1 / CHURN_HZ - (time.monotonic() - started)))


async def _trainer(http: aiohttp.ClientSession, url: str, counts: dict[str, int],
                   log: Callable[[str], None]) -> None:
    """Training runs one after another; each watched until it ends."""
    headers = {"Authorization": f"Bearer {CHURN_TOKEN}"}
    while True:
        async with http.post(url + "/api/train", json=TRAIN, headers=headers) as resp:
            body = orjson.loads(await resp.read())
            if resp.status != 202:
                raise RuntimeError(f"POST /api/train answered {resp.status}: {body}")
        run_id = body["run_id"]
        while True:
            await asyncio.sleep(2.0)
            async with http.get(f"{url}/api/train/{run_id}") as resp:
                state = orjson.loads(await resp.read())["state"]
            if state != "running":
                break
        counts["training_runs"] += 1
        if state != "done":
            log(f"  soak: training run {run_id} ended {state}")
            counts["training_failed"] += 1
        await asyncio.sleep(TRAIN_GAP_S)


async def _tick(http: aiohttp.ClientSession, url: str) -> int:
    async with http.get(url + "/api/stats") as resp:
        return int(orjson.loads(await resp.read())["ticks"]["tick"])


async def _soak(world: WorldProcess, minutes: float,
                log: Callable[[str], None]) -> dict[str, Any]:
    saves = world.root / "saves" / WORLD
    runs = world.root / "runs"
    counts = {"frames": 0, "connections": 0, "training_runs": 0, "training_failed": 0}
    samples: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as http:
        tasks = [asyncio.create_task(_viewer(http, world.url, counts), name="viewer"),
                 asyncio.create_task(_churner(http, world.url, counts), name="churn"),
                 asyncio.create_task(_trainer(http, world.url, counts, log), name="train")]
        began = time.monotonic()
        try:
            while True:
                for task in tasks:
                    if task.done():  # a client that failed stops the soak, with its error
                        task.result()
                        raise RuntimeError(f"the {task.get_name()} client stopped")
                elapsed = time.monotonic() - began
                sample = {"s": round(elapsed, 1), "tick": await _tick(http, world.url),
                          **_process_figures(world.pid),
                          "save_bytes": folder_bytes(saves), "runs_bytes": folder_bytes(runs),
                          **counts}
                samples.append(sample)
                log(f"  soak {elapsed / 60:5.1f} min: tick {sample['tick']}, "
                    f"{sample['rss_kb'] / 1024:.1f} MB, {sample['fds']} fds, "
                    f"{sample['threads']} threads, {sample['children']} children, save "
                    f"{sample['save_bytes'] / 2**20:.2f} MB, runs "
                    f"{sample['runs_bytes'] / 2**20:.2f} MB; {counts['connections']:,} "
                    f"connections, {counts['training_runs']} training runs")
                if elapsed >= minutes * 60:
                    break
                await asyncio.sleep(SAMPLE_S)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return _figures(samples, minutes)


def _figures(samples: list[dict[str, Any]], minutes: float) -> dict[str, Any]:
    settled = [s for s in samples if s["s"] >= SETTLE * minutes * 60]
    slopes = {name: round(slope_per_hour([(s["s"], s[name]) for s in settled]), 1)
              for name in ("rss_kb", "fds", "threads", "children", "save_bytes",
                           "runs_bytes")}
    first, last = settled[0], settled[-1]
    ticks = last["tick"] - first["tick"]
    save_per_day = ((last["save_bytes"] - first["save_bytes"]) / ticks * WORLD_DAY_TICKS
                    if ticks > 0 else 0.0)
    return {"minutes": minutes, "sample_s": SAMPLE_S, "settle": SETTLE,
            "slopes_per_hour": {"rss_mb": round(slopes["rss_kb"] / 1024, 2),
                                "fds": slopes["fds"], "threads": slopes["threads"],
                                "children": slopes["children"],
                                "save_mb": round(slopes["save_bytes"] / 2**20, 2),
                                "runs_mb": round(slopes["runs_bytes"] / 2**20, 2)},
            "save_mb_per_world_day": round(save_per_day / 2**20, 1),
            "ranges": {name: [min(s[name] for s in settled), max(s[name] for s in settled)]
                       for name in ("rss_kb", "fds", "threads", "children")},
            "ticks": last["tick"], "connections": last["connections"],
            "frames": last["frames"], "training_runs": last["training_runs"],
            "training_failed": last["training_failed"], "samples": samples}


def measure_soak(*, minutes: float = 10.0, llm_agents: int = 6, agents: int = 30,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
    """The soak (module doc) for ``minutes`` of wall time."""
    from tests.llm_server import FakeLLMServer  # noqa: PLC0415 - the bench's own server

    server = FakeLLMServer().start()
    server.keep = 100  # the soak counts requests; keeping every prompt grew this process
    settings = {
        "world": {"name": WORLD, "size": [48, 48], "starting_agents": agents, "seed": 36},
        "llm": {"provider": "openai", "base_url": server.base_url, "model": "fake",
                "api_key_env": "", "agents": llm_agents, "tokens_per_hour": 0},
        "web": {"ring_events": 5000},
    }
    try:
        with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp, \
                world_process(Path(tmp), settings, save=True) as world:
            log(f"  soak: {agents} agents ({llm_agents} on the fake LLM server), "
                f"{minutes:g} min")
            figures = asyncio.run(_soak(world, minutes, log))
            figures["llm_requests"] = server.received
            return figures
    finally:
        server.stop()
