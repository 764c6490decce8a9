"""Connection churn against a running world (``python -m bench --only churn``; issue 36).

A world runs as ``python main.py --headless --no-save`` in a process of its own, with the web
server and ``/agents``. A client (here, in this process) connects in a loop: a ``/ws``
connection that says hello, subscribes and takes its keyframe, then leaves; an ``/agents``
connection that authenticates, claims an agent, and leaves. Between batches it waits for an
idle gap (the world runs ``IDLE_TICKS`` ticks with no client) and reads the world's resident
memory from ``/proc/PID/status``. A world whose memory is flat shows the same figure after
every gap, once its own rings and caches have filled (``warmup``).

``tests/test_memory.py`` runs the same loop, shorter, as a test.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

__all__ = ["CHURN_TOKEN", "TICK_RATE", "WARMUP_TICKS", "WorldProcess", "churn", "idle_rss",
           "measure_churn", "world_process"]

ROOT = Path(__file__).resolve().parent.parent
CHURN_TOKEN = "churn-token-0123456789"
TOKEN_ENV = "AW_CHURN_TOKEN"
IDLE_TICKS = 30  # an idle gap: the world collects after each of these ticks
WARMUP_TICKS = 700  # the world's own rings and summaries fill in its first 700 ticks
TICK_RATE = 50.0  # five times the default: more ticks (freezes) while connections are open
START_TIMEOUT_S = 60.0
ANSWER_TIMEOUT_S = 30.0


class WorldProcess:
    """A world in a process of its own, serving on a free port."""

    def __init__(self, proc: subprocess.Popen[str], url: str, root: Path) -> None:
        self.proc = proc
        self.url = url
        self.root = root
        # The rest of its stderr is read as it comes (a full pipe would stop the world).
        self.said: deque[str] = deque(maxlen=200)
        self._reader = threading.Thread(target=self._drain, name="world-stderr",
                                        daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.said.append(line)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss_kb(self) -> int:
        """Resident memory of the world's process now, in KB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError(f"no VmRSS for process {self.pid}")


@contextmanager
def world_process(root: Path, settings: dict[str, Any] | None = None,
                  env: dict[str, str] | None = None, *, save: bool = False,
                  tree: Path = ROOT) -> Iterator[WorldProcess]:
    """``python main.py --headless --no-save`` (with ``save``, into ``root/saves``) with a
    small world and the web server on a free port; ``settings`` are merged into its
    configuration; ``tree`` is the checkout whose main.py runs (another commit's, to compare).
    Stopped with SIGTERM."""
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "world": {"size": [32, 32], "starting_agents": 10, "seed": 4},
        # The smallest ring of recent events: it fills in the warm-up, not while measured.
        "web": {"port": 0, "token_env": TOKEN_ENV, "runtime_dir": str(root / "runtime"),
                "ring_events": 100},
        "paths": {"saves": str(root / "saves"), "logs": str(root / "logs"),
                  "runs": str(root / "runs")},
        "log": {"echo": False},
    }
    for section, values in (settings or {}).items():
        config.setdefault(section, {}).update(values)
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    full_env = {**os.environ, TOKEN_ENV: CHURN_TOKEN, **(env or {})}
    command = [sys.executable, str(tree / "main.py"), "--config", str(path), "--headless"]
    proc = subprocess.Popen(
        command if save else [*command, "--no-save"],
        cwd=root, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        url = _read_url(proc)
        yield WorldProcess(proc, url, root)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _read_url(proc: subprocess.Popen[str]) -> str:
    """The viewer's URL from the start-up banner (on stderr when headless)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    seen = []
    for line in proc.stderr:
        seen.append(line)
        found = re.search(r"viewer:\s+(http://\S+)", line)
        if found:
            return found.group(1).rstrip("/")
        if time.monotonic() > deadline:
            break
    raise RuntimeError("the world did not say where it serves: " + "".join(seen)[-2000:])


async def _one(http: aiohttp.ClientSession, url: str, agent: int) -> None:
    """One round: connect, subscribe and leave on /ws; authenticate, claim and leave on
    /agents. Each step waits for the server's answer."""
    async with http.ws_connect(url + "/ws") as ws:
        await ws.receive(timeout=ANSWER_TIMEOUT_S)  # hello
        await ws.send_str(orjson.dumps({"op": "subscribe"}).decode())
        await ws.receive(timeout=ANSWER_TIMEOUT_S)  # keyframe
    headers = {"Authorization": f"Bearer {CHURN_TOKEN}"}
    async with http.ws_connect(url + "/agents", headers=headers) as ws:
        await ws.receive(timeout=ANSWER_TIMEOUT_S)  # welcome
        await ws.send_str(orjson.dumps({"type": "claim", "agent": agent}).decode())
        answer = orjson.loads((await ws.receive(timeout=ANSWER_TIMEOUT_S)).data)
        if answer.get("type") != "claimed":
            raise RuntimeError(f"the claim was refused: {answer}")


async def churn(http: aiohttp.ClientSession, url: str, rounds: int) -> int:
    """``rounds`` rounds of ``_one`` (two connections each); the connections made."""
    agents = orjson.loads(await (await http.get(url + "/api/agents")).read())["agents"]
    agent = agents[0]["id"]
    for _ in range(rounds):
        await _one(http, url, agent)
    return 2 * rounds


async def _stats(http: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with http.get(url + "/api/stats") as resp:
        stats: dict[str, Any] = orjson.loads(await resp.read())
        return stats


async def idle_rss(http: aiohttp.ClientSession, world: WorldProcess,
                   ticks: int = IDLE_TICKS) -> tuple[int, dict[str, Any]]:
    """Wait until the world has run ``ticks`` ticks with no client, then its resident
    memory (KB) and its /stats memory figures."""
    start = (await _stats(http, world.url))["ticks"]["tick"]
    while True:
        stats = await _stats(http, world.url)
        if stats["ticks"]["tick"] >= start + ticks:
            break
        await asyncio.sleep(0.05)  # the world's ticks, not a guess: polled until they ran
    return world.rss_kb(), dict(stats.get("memory", {}))


def measure_churn(*, connections: int = 50_000, checkpoints: int = 5,
                  warmup: int = 8_000, tick_rate: float = TICK_RATE, tree: Path = ROOT,
                  log: Callable[[str], None] = print) -> dict[str, Any]:
    """``connections`` short connections (half /ws, half /agents) after ``warmup`` more and
    ``WARMUP_TICKS`` idle ticks, with an idle gap and a reading of resident memory every
    ``connections / checkpoints``. ``tree``: the checkout whose world runs (another commit's,
    to compare)."""

    async def run(world: WorldProcess) -> dict[str, Any]:
        async with aiohttp.ClientSession() as http:
            began = time.perf_counter()
            await churn(http, world.url, warmup // 2)
            await idle_rss(http, world, ticks=WARMUP_TICKS)
            base, _memory = await idle_rss(http, world)
            readings: list[dict[str, Any]] = [{"connections": 0, "rss_kb": base}]
            log(f"  churn: after {warmup:,} warm-up connections {base / 1024:.1f} MB")
            done = 0
            for _ in range(checkpoints):
                done += await churn(http, world.url, connections // checkpoints // 2)
                rss, memory = await idle_rss(http, world)
                readings.append({"connections": done, "rss_kb": rss, "memory": memory})
                log(f"  churn: {done:,} connections, {rss / 1024:.1f} MB "
                    f"({(rss - base) / 1024:+.2f} MB); {memory}")
            seconds = time.perf_counter() - began
        last = readings[-1]
        return {"connections": done, "warmup": warmup, "tick_rate": tick_rate,
                "tree": str(tree), "seconds": round(seconds, 1),
                "rss_start_mb": round(base / 1024, 2),
                "rss_end_mb": round(last["rss_kb"] / 1024, 2),
                "growth_mb": round((last["rss_kb"] - base) / 1024, 2),
                "readings": readings}

    with tempfile.TemporaryDirectory(prefix="bench-churn-") as tmp, \
            world_process(Path(tmp), {"world": {"tick_rate": tick_rate}}, tree=tree) as world:
        return asyncio.run(run(world))
