"""A hostile client against a running world's web server, for figures (issue 30, issue 36).

    python -m bench.hostile_web [--attacks idle,slowloris,...] [--nofile 1024] [--seconds S]

Each attack runs against a fresh world (``main.py --headless``, a save folder in a scratch
directory, the web server on a free port, the soft limit of open files set to ``--nofile``)
and prints one line of figures: what the attacker holds, the world's open file descriptors,
whether the operator still gets an answer, and the world's tick rate while it lasts. The
world's own stderr is counted too (a traceback per malformed request was the finding).

The attacks are the findings of issue 30 and issue 36, as their texts describe them:

- ``idle``: N TCP connections that send nothing (no token needed);
- ``slowloris``: N connections that send a request head one byte a second;
- ``ws_idle``: 70 ``/ws`` connections that never subscribe, then the operator's own;
- ``bbox_loop``: one ``/ws`` client changing its bbox in a loop;
- ``malformed``: 2,000 malformed HTTP requests;
- ``http09``: ``GET /`` without a version;
- ``rebind``: a DNS-rebinding page's requests (``Host`` and ``Origin`` its own name);
- ``spawn_release``: an ``/agents`` client spawning and releasing at its allowance.

Figures are measured here, never asserted (tests assert behaviour: tests/test_web_hostile.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from agent_world.config import WebConfig

__all__ = ["main"]

MAIN = Path(__file__).resolve().parents[1] / "main.py"
ATTACKS = ("idle", "slowloris", "ws_idle", "bbox_loop", "malformed", "http09", "rebind",
           "spawn_release")


class World:
    """A world in a child process, serving on a free loopback port."""

    def __init__(self, root: Path, nofile: int, agents: int) -> None:
        self.root = root
        config = root / "config.yaml"
        web: dict[str, Any] = {"port": 0}
        if "runtime_dir" in WebConfig.__dataclass_fields__:  # (not before issue 30)
            web["runtime_dir"] = str(root / "runtime")
        config.write_text(yaml.safe_dump({
            "world": {"size": [64, 64], "starting_agents": agents, "seed": 5, "name": "hostile"},
            "web": web,
            "paths": {"logs": str(root / "logs"), "saves": str(root / "saves"),
                      "runs": str(root / "runs")},
        }), encoding="utf-8")
        self.out = (root / "stdout.txt").open("w+", encoding="utf-8")
        self.err = (root / "stderr.txt").open("w+", encoding="utf-8")

        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        # The world under a soft limit of open files (as a service gets: often 1,024).
        launcher = ("import resource, runpy, sys; "
                    f"resource.setrlimit(resource.RLIMIT_NOFILE, ({min(nofile, hard)}, {hard})); "
                    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", launcher, str(MAIN), "--config", str(config), "--headless"],
            cwd=root, stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err)
        self.url = self._wait_for_url()
        self.port = int(self.url.rsplit(":", 1)[1].strip("/"))
        self.token = self._token()

    def _wait_for_url(self) -> str:
        give_up = time.monotonic() + 60
        while time.monotonic() < give_up:
            for name in ("stdout.txt", "stderr.txt"):
                found = re.search(r"viewer:\s+(http://\S+/)", (self.root / name).read_text())
                if found:
                    return found.group(1)
            if self.proc.poll() is not None:
                raise RuntimeError(f"the world exited: {(self.root / 'stderr.txt').read_text()}")
            time.sleep(0.1)
        raise RuntimeError("no viewer URL within 60 s")

    def _token(self) -> str | None:
        """The write token: the runtime file (this branch) or the banner (before it)."""
        for path in sorted((self.root / "runtime").glob("*.json")):
            token = json.loads(path.read_text()).get("token")
            if token:
                return str(token)
        text = (self.root / "stdout.txt").read_text() + (self.root / "stderr.txt").read_text()
        found = re.search(r"\(token (\S+);", text)
        return found.group(1) if found else None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def fds(self) -> int:
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return -1

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_lines(self) -> int:
        return len((self.root / "stderr.txt").read_text().splitlines())

    def stop(self) -> str:
        if self.alive():
            self.proc.send_signal(2)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        self.err.close()
        return f"exit {self.proc.returncode}"


async def _state(world: World, http: aiohttp.ClientSession) -> tuple[int, dict[str, Any]]:
    try:
        async with http.get(world.url + "api/state",
                            timeout=aiohttp.ClientTimeout(total=5)) as resp:
            return resp.status, (await resp.json() if resp.status == 200 else {})
    except (aiohttp.ClientError, TimeoutError) as exc:
        return -1, {"error": type(exc).__name__}


async def _ticking(world: World, seconds: float,
                   during: Callable[[], Awaitable[None]] | None = None) -> dict[str, Any]:
    """The world's tick rate and tick p99 over ``seconds`` (while ``during`` runs)."""
    async with aiohttp.ClientSession() as http:
        status, first = await _state(world, http)
        began = time.monotonic()
        task = asyncio.ensure_future(during()) if during is not None else None
        await asyncio.sleep(seconds)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        status2, last = await _state(world, http)
        took = time.monotonic() - began
    if status != 200 or status2 != 200:
        return {"operator": f"GET /api/state answered {status2}", "alive": world.alive()}
    return {"ticks_per_s": round((last["tick"] - first["tick"]) / took, 2),
            "tick_p99_ms": last["tick_ms"]["p99"], "operator": "200"}


def _open_idle(port: int, count: int) -> list[socket.socket]:
    held = []
    for _ in range(count):
        s = socket.socket()
        s.setblocking(True)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            break
        s.setblocking(False)
        held.append(s)
    return held


def _still_open(held: list[socket.socket]) -> int:
    """Connections the server has not closed (a read would block rather than see EOF)."""
    n = 0
    for s in held:
        try:
            data = s.recv(65536)
        except BlockingIOError:
            n += 1
            continue
        except OSError:
            continue
        if data and not data.startswith(b"HTTP/1.1 503"):
            n += 1  # answered something and still open
    return n


def _close_all(held: list[socket.socket]) -> None:
    for s in held:
        s.close()


async def attack_idle(world: World, seconds: float, count: int) -> dict[str, Any]:
    fds_before = world.fds()
    held = _open_idle(world.port, count)
    figures = await _ticking(world, seconds)
    figures.update(attacker_connected=len(held), still_open_after_s=_still_open(held),
                   world_fds_before=fds_before, world_fds_during=world.fds(),
                   alive=world.alive())
    _close_all(held)
    return figures


async def attack_slowloris(world: World, seconds: float, count: int) -> dict[str, Any]:
    held = _open_idle(world.port, count)
    head = b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: " + b"a" * 100

    async def drip() -> None:
        for i in range(len(head)):
            for s in held:
                with contextlib.suppress(OSError):
                    s.send(head[i:i + 1])
            await asyncio.sleep(1.0)

    figures = await _ticking(world, seconds, drip)
    figures.update(attacker_connected=len(held), still_open_after_s=_still_open(held),
                   world_fds_during=world.fds(), alive=world.alive())
    _close_all(held)
    return figures


async def attack_ws_idle(world: World, seconds: float, count: int) -> dict[str, Any]:
    ws_url = world.url + "ws"
    async with aiohttp.ClientSession() as http:
        idle = []
        refused = 0
        for _ in range(count):
            try:
                idle.append(await http.ws_connect(ws_url, heartbeat=None))
            except aiohttp.WSServerHandshakeError:
                refused += 1
        figures: dict[str, Any] = {"idle_connected": len(idle), "idle_refused": refused}

        async def operator() -> str:
            try:
                ws = await http.ws_connect(ws_url)
            except aiohttp.WSServerHandshakeError as exc:
                return f"refused {exc.status}"
            await ws.send_json({"op": "subscribe", "layers": ["agents"], "rate": 2})
            got = "no keyframe"
            with contextlib.suppress(TimeoutError):
                for _ in range(3):
                    msg = await ws.receive_json(timeout=5)
                    if msg.get("t") == "key":
                        got = "keyframe"
                        break
            await ws.close()
            return got

        figures["operator_at_once"] = await operator()
        await asyncio.sleep(seconds)
        still = 0
        for ws in idle:
            if not ws.closed and not await _closed_soon(ws):
                still += 1
        figures["idle_still_open_after_s"] = still
        figures["operator_after_s"] = await operator()
        for ws in idle:
            await ws.close()
    return figures


async def _closed_soon(ws: aiohttp.ClientWebSocketResponse) -> bool:
    """Whether the server has closed it (what it sent before, a hello, is read past)."""
    while True:
        try:
            msg = await ws.receive(timeout=0.05)
        except TimeoutError:
            return False
        if msg.type != aiohttp.WSMsgType.TEXT:
            return msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED,
                                aiohttp.WSMsgType.CLOSING)


async def attack_bbox_loop(world: World, seconds: float, count: int) -> dict[str, Any]:
    baseline = await _ticking(world, seconds)
    sent = [0]
    closed: list[str] = []

    async def loop() -> None:
        async with aiohttp.ClientSession() as http, http.ws_connect(world.url + "ws") as ws:
            async def drain() -> None:
                async for msg in ws:
                    if msg.type != aiohttp.WSMsgType.TEXT:
                        break
                closed.append(f"{ws.close_code}")

            reader = asyncio.create_task(drain())
            i = 0
            while not ws.closed:
                i += 1
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await ws.send_json({"op": "subscribe", "rate": 30,
                                        "bbox": [0, 0, 10 + i % 50, 10 + i % 50]})
                sent[0] += 1
                await asyncio.sleep(0)
            reader.cancel()

    attacked = await _ticking(world, seconds, loop)
    return {"quiet": baseline, "attacked": attacked, "subscribes_sent": sent[0],
            "closed_with": closed[:1], "alive": world.alive()}


async def attack_malformed(world: World, seconds: float, count: int) -> dict[str, Any]:
    before = world.stderr_lines()
    for i in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", world.port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\x01: %d\r\n\r\n" % i)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
            await reader.read(100)
        writer.close()
    await asyncio.sleep(1.0)
    return {"requests": count, "stderr_lines_added": world.stderr_lines() - before,
            "alive": world.alive()}


async def attack_http09(world: World, seconds: float, count: int) -> dict[str, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", world.port)
    writer.write(b"GET /\r\n\r\n")
    await writer.drain()
    try:
        answer = await asyncio.wait_for(reader.read(200), 10)
    except TimeoutError:
        answer = b"(nothing within 10 s)"
    writer.close()
    return {"answer": answer[:60].decode("latin-1")}


async def attack_rebind(world: World, seconds: float, count: int) -> dict[str, Any]:
    evil = f"evil.example:{world.port}"
    out = {}
    async with aiohttp.ClientSession() as http:
        for name, method, path, body in (("read", "GET", "api/state", None),
                                         ("write", "POST", "api/commands",
                                          {"command": "/spawn agent Evil"})):
            async with http.request(method, world.url + path, json=body, headers={
                    "Host": evil, "Origin": f"http://{evil}"}) as resp:
                out[name] = resp.status
        async with http.post(world.url + "api/commands", json={"command": "/pause"}) as resp:
            out["write_without_token"] = resp.status
    return out


async def attack_spawn_release(world: World, seconds: float, count: int) -> dict[str, Any]:
    url = world.url.replace("http", "ws", 1) + "agents"
    spawned = 0
    refused = ""
    async with aiohttp.ClientSession() as http:
        for round_ in range(count):
            async with http.ws_connect(url, headers=world.headers()) as ws:
                await ws.receive_json(timeout=10)  # welcome
                await ws.send_json({"type": "spawn", "name": f"Spawn{round_}"})
                reply = await ws.receive_json(timeout=10)
                if reply.get("type") != "spawning":
                    refused = reply.get("message", str(reply))
                    break
                while reply.get("type") != "claimed":
                    reply = await ws.receive_json(timeout=10)
                await ws.send_json({"type": "release", "agent": reply["agent"]})
                await ws.receive_json(timeout=10)
                spawned += 1
        async with http.get(world.url + "api/state") as resp:
            alive = (await resp.json())["agents_alive"]
    return {"spawned_and_released": spawned, "agents_alive": alive, "refused": refused[:120]}


RUN: dict[str, tuple[Callable[[World, float, int], Awaitable[dict[str, Any]]], int]] = {
    "idle": (attack_idle, 1100), "slowloris": (attack_slowloris, 200),
    "ws_idle": (attack_ws_idle, 70), "bbox_loop": (attack_bbox_loop, 1),
    "malformed": (attack_malformed, 2000), "http09": (attack_http09, 1),
    "rebind": (attack_rebind, 1), "spawn_release": (attack_spawn_release, 150),
}


async def _call(attack: Callable[[World, float, int], Awaitable[dict[str, Any]]],
                world: World, seconds: float, count: int) -> dict[str, Any]:
    return await attack(world, seconds, count)


@contextlib.contextmanager
def _world(nofile: int, agents: int) -> Iterator[World]:
    root = Path(tempfile.mkdtemp(prefix="aw-hostile-"))
    world = World(root, nofile, agents)
    try:
        yield world
    finally:
        said = world.stop()
        err = (root / "stderr.txt").read_text().strip().splitlines()
        print(f"    world: {said}; stderr lines {len(err)}" + (f"; {err[-1][:160]}" if err else ""))
        if os.environ.get("AW_HOSTILE_KEEP"):
            print(f"    kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile_web", description=__doc__)
    parser.add_argument("--attacks", default=",".join(ATTACKS))
    parser.add_argument("--nofile", type=int, default=1024,
                        help="the world's soft limit of open files (default 1024)")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--count", type=int, default=0, help="override each attack's count")
    args = parser.parse_args(argv)
    for name in args.attacks.split(","):
        attack, count = RUN[name]
        with _world(args.nofile, args.agents) as world:
            figures: dict[str, Any] = asyncio.run(_call(attack, world, args.seconds,
                                                        args.count or count))
            print(f"{name}: {json.dumps(figures)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
