"""The web layer under load (``python -m bench --only web``).

1. A 1,000-agent world paced at 10 Hz three ways, in short interleaved blocks (rotating
   order, so that the world's own variation and the machine's spread over all three) on the
   same world and session: no web server; a WebServer with no client; the server with 20
   WebSocket clients subscribed to everything (``{"op": "subscribe", "rate": 10}``). The
   clients run in a process of their own (``bench/web_clients.py``: its own event loop, on
   the other core), read every frame and count it. Each tick is timed as the tick loop
   times it (World.step plus every observer; the live feed builds its frame after the
   tick, while the loop waits, and that time is reported beside it); the goal is tick p99
   with 20 clients within 10% of the world without a server. Each tick is also timed in the
   main thread's CPU time (``time.thread_time``), which other processes on a busy machine
   disturb far less than the wall clock.
2. Deltas at 10,000 agents: the encoded frame a client subscribed to everything gets for
   each tick (a frame every tick), the keyframe, and what building a frame costs.
3. Time to first frame: from the start of a WebSocket connection to its keyframe, one
   client at a time, with the world running at 10 Hz, at 1,000 and 10,000 agents.

Sessions run without a save folder (no persistence, as ``--no-save``): its state hashes fork
every 50 ticks and make the slowest ticks slower, which would blur the comparison; the
ratio is the stricter for it (the same web cost over a shorter tick).
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_world.app import Session
from agent_world.core.loop import TickLoop
from agent_world.types import TickReport
from agent_world.web import WebServer
from agent_world.web.feed import LAYERS, Delta
from agent_world.web.subscriptions import MAX_RATE, Group, Subscription
from bench.engine import build_world
from bench.scenario import summarise

__all__ = ["FULL_WEB", "QUICK_WEB", "WebBudget", "measure_web"]

AGENTS = 1000
BIG_AGENTS = 10_000
CLIENTS = 20
RATE = 10.0
MODES = ("none", "server", "clients")
ANSWER_TIMEOUT_S = 600.0
ROOT = Path(__file__).resolve().parent.parent  # the repository: the clients import bench


@dataclass(frozen=True, slots=True, kw_only=True)
class WebBudget:
    rounds: int = 6  # each round runs one block of every mode (in a rotating order)
    block_ticks: int = 50
    warmup_ticks: int = 100  # a new world's first ticks cost more
    first_frames: int = 5
    big_agents: int = BIG_AGENTS
    big_warmup_ticks: int = 20
    delta_ticks: int = 20
    big_first_frames: int = 3


FULL_WEB = WebBudget()
# The smoke runs the same code on a smaller big world: making and serving 10,000 agents
# took most of the section's time in --quick, and --quick checks that it runs, not sizes.
QUICK_WEB = WebBudget(rounds=1, block_ticks=30, warmup_ticks=20, first_frames=3,
                      big_agents=2000, big_warmup_ticks=3, delta_ticks=5, big_first_frames=2)


class TimedLoop(TickLoop):
    """The session's tick loop, also keeping each tick's duration as the loop measures it
    (from before World.step to after the last observer, on the loop's clock) and the work
    done between ticks (the session's garbage collection), in lists the bench hands it."""

    def __init__(self, loop: TickLoop) -> None:
        super().__init__(loop.world, loop.clock, loop.tick_rate, loop.observers)
        self._then = loop.between_ticks
        self.between_ticks = self._between
        self.ticks: list[float] | None = None
        self.tick_cpu: list[float] | None = None  # the same ticks in main-thread CPU time
        self.between: list[float] | None = None
        self._started = self._started_cpu = 0.0

    def tick_once(self) -> TickReport:
        self._started = self.clock.now()
        self._started_cpu = time.thread_time()
        return super().tick_once()

    def _between(self) -> None:
        ended, ended_cpu = self.clock.now(), time.thread_time()
        if self.ticks is not None:
            self.ticks.append(ended - self._started)
        if self.tick_cpu is not None:
            self.tick_cpu.append(ended_cpu - self._started_cpu)
        if self._then is not None:
            self._then()
        if self.between is not None:
            self.between.append(self.clock.now() - ended)


class ClientProcess:
    """``bench/web_clients.py`` in a child process, asked one JSON line at a time."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls) -> ClientProcess:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.web_clients", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env=env)
        return cls(proc)

    async def ask(self, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(orjson.dumps(command) + b"\n")
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), ANSWER_TIMEOUT_S)
        if not line:
            raise RuntimeError(f"the WebSocket client process ended (asked {command['op']})")
        answer: dict[str, Any] = orjson.loads(line)
        if "error" in answer:
            raise RuntimeError(f"WebSocket clients, {command['op']}: {answer['error']}")
        return answer

    async def close(self) -> None:
        if self.proc.returncode is None and self.proc.stdin is not None:
            self.proc.stdin.write(b'{"op": "quit"}\n')
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


def _ws_url(http_url: str) -> str:
    return "ws" + http_url.removeprefix("http").rstrip("/") + "/ws"


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _frame_costs(server: WebServer, frames: int) -> list[float]:
    """The last ``frames`` frames' cost in ms (the feed keeps the last 200)."""
    kept = list(server.feed.frame_ms)
    return kept[-frames:] if frames else []


async def _block(session: Session, loop: TimedLoop, mode: str, ticks: int,
                 clients: ClientProcess) -> dict[str, Any]:
    """``ticks`` paced ticks in one mode; the server (if any) is made for the block."""
    server: WebServer | None = None
    out: dict[str, Any] = {"mode": mode}
    try:
        if mode != "none":
            server = WebServer(session, session.config.web)
            url = await server.start()
        if mode == "clients":
            assert server is not None
            joined = await clients.ask(op="connect", url=_ws_url(url), clients=CLIENTS,
                                       rate=RATE)
            out["first_frame_ms"] = joined["first_frame_ms"]
            out["keyframe_bytes"] = joined["keyframe_bytes"]
            out["groups"] = len(server.groups)
            sent_before = {c: (c.bytes_sent, c.sent) for c in server.clients}
        tick_s: list[float] = []
        tick_cpu_s: list[float] = []
        between_s: list[float] = []
        loop.ticks, loop.tick_cpu, loop.between = tick_s, tick_cpu_s, between_s
        frames_before = server.feed.frames if server is not None else 0
        cpu, wall = time.thread_time(), time.perf_counter()
        await loop.run(max_ticks=ticks, paced=True)
        wall = time.perf_counter() - wall
        cpu = time.thread_time() - cpu
        loop.ticks = loop.tick_cpu = loop.between = None
        out |= {"ticks": len(tick_s), "seconds": wall, "main_thread_cpu_s": cpu,
                "tick_s": tick_s, "tick_cpu_s": tick_cpu_s, "between_s": between_s,
                "frame_ms": []}
        if server is not None:
            out["frame_ms"] = _frame_costs(server, server.feed.frames - frames_before)
            out["frames"] = server.feed.frames - frames_before
        if mode == "clients":
            assert server is not None
            out["server_clients"] = [
                {"bytes": c.bytes_sent - sent_before.get(c, (0, 0))[0],
                 "frames": c.sent - sent_before.get(c, (0, 0))[1], "coalesced": c.coalesced}
                for c in server.clients]
            out["closed_slow"] = server.closed_slow
            out["connected_at_end"] = len(server.clients)
            out["read"] = await clients.ask(op="stop")
    finally:
        if server is not None:
            await server.close()
    return out


def _keyframe_cost(server: WebServer) -> dict[str, Any]:
    """Building and encoding the keyframe of a subscription to everything, in process."""
    group = Group(Subscription(), server.feed)
    started = time.perf_counter()
    frame = group.start()
    built = time.perf_counter()
    data = orjson.dumps(frame)
    encoded = time.perf_counter()
    return {"bytes": len(data), "build_ms": round((built - started) * 1000, 2),
            "encode_ms": round((encoded - built) * 1000, 2),
            "records": {layer: len(frame[layer]) for layer in LAYERS}}


async def _first_frames(session: Session, server: WebServer, clients: ClientProcess,
                        url: str, count: int) -> dict[str, Any]:
    """``count`` clients one after another, with the world running paced meanwhile."""
    ticking = asyncio.create_task(session.loop.run(paced=True))
    try:
        await asyncio.sleep(0.5)  # the loop is in its stride
        answer = await clients.ask(op="first_frame", url=_ws_url(url), count=count,
                                   rate=RATE)
    finally:
        session.loop.stop()
        await ticking
    ms: list[float] = answer["first_frame_ms"]
    return {"count": count, "ms": ms, "median_ms": round(_median(ms), 1),
            "min_ms": round(min(ms), 1), "max_ms": round(max(ms), 1),
            "keyframe_bytes": max(answer["keyframe_bytes"]),
            "keyframe": _keyframe_cost(server)}


def _aggregate(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """One mode's blocks pooled."""
    ticks = [t for b in blocks for t in b["tick_s"]]
    between = [t for b in blocks for t in b["between_s"]]
    frames = [ms for b in blocks for ms in b["frame_ms"]]
    wall = sum(b["seconds"] for b in blocks)
    out: dict[str, Any] = {
        "ticks": len(ticks), "seconds": round(wall, 2),
        "rate_hz": round(len(ticks) / wall, 2) if wall else None,
        "tick": summarise(ticks),
        "tick_cpu": summarise([t for b in blocks for t in b["tick_cpu_s"]]),
        "p99_per_block_ms": [summarise(b["tick_s"])["p99_ms"] for b in blocks],
        "between": summarise(between),
        "overruns": sum(1 for t in ticks if t > 1.0 / RATE),
        "main_thread_cpu_share": round(sum(b["main_thread_cpu_s"] for b in blocks) / wall, 3),
    }
    if any("frames" in b for b in blocks):
        out["frames"] = sum(b.get("frames", 0) for b in blocks)
        out["frames_per_s"] = round(out["frames"] / wall, 2)
    if frames:
        out["frame_ms"] = {"p50": round(_median(frames), 3),
                           "p99": round(summarise([f / 1000 for f in frames])["p99_ms"], 3),
                           "max": round(max(frames, default=0.0), 3)}
        out["frame_share_of_wall"] = round(sum(frames) / 1000 / wall, 4) if wall else None
    if any("read" in b for b in blocks):
        out["clients"] = _clients_figures([b for b in blocks if "read" in b])
    return out


def _clients_figures(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    per_client_bps: list[float] = []
    per_client_fps: list[float] = []
    keyframes_after = closed = 0
    server_bps: list[float] = []
    coalesced = closed_slow = 0
    first_ms: list[float] = []
    key_bytes: list[int] = []
    for b in blocks:
        read = b["read"]
        seconds = read["seconds"]
        for c in read["clients"]:
            per_client_bps.append(c["bytes"] / seconds)
            per_client_fps.append(c["deltas"] / seconds)
            keyframes_after += c["keyframes"]
            closed += c["closed"] is not None
        server_bps.extend(c["bytes"] / b["seconds"] for c in b["server_clients"])
        coalesced += sum(c["coalesced"] for c in b["server_clients"])
        closed_slow += b["closed_slow"]
        first_ms.extend(b["first_frame_ms"])
        key_bytes.extend(b["keyframe_bytes"])
    return {
        "clients": CLIENTS, "rate": RATE, "blocks": len(blocks),
        "groups": max(b["groups"] for b in blocks),
        "bytes_per_client_per_s": round(_median(per_client_bps)),
        "bytes_per_client_per_s_min": round(min(per_client_bps)),
        "bytes_per_client_per_s_max": round(max(per_client_bps)),
        "server_bytes_per_client_per_s": round(_median(server_bps)),
        "frames_per_client_per_s": round(_median(per_client_fps), 2),
        "frames_per_client_per_s_min": round(min(per_client_fps), 2),
        "keyframes_after_the_first": keyframes_after,
        "coalesced": coalesced,
        "closed_as_too_slow": closed_slow,
        "closed_by_server": closed,
        "first_frame_ms_all_at_once": {"median": round(_median(first_ms), 1),
                                       "max": round(max(first_ms), 1)},
        "keyframe_bytes": max(key_bytes),
    }


async def _paced(budget: WebBudget, clients: ClientProcess, root: Path,
                 log: Callable[[str], None]) -> dict[str, Any]:
    world, config, info = build_world(AGENTS, root, budget.warmup_ticks)
    config = config.replace(web={"port": 0}, persistence={"enabled": False})
    session = Session(config, world)
    loop = TimedLoop(session.loop)
    session.loop = loop
    log(f"web: {AGENTS} agents ({info['map']} map, {info['entities']} entities), "
        f"{budget.rounds} round(s) of {budget.block_ticks} paced ticks per mode")
    blocks: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    try:
        for r in range(budget.rounds):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            for mode in order:
                block = await _block(session, loop, mode, budget.block_ticks, clients)
                blocks[mode].append(block)
                s = summarise(block["tick_s"])
                log(f"  round {r + 1}, {mode}: tick p50 {s['p50_ms']} ms, p99 "
                    f"{s['p99_ms']} ms")
        modes = {m: _aggregate(b) for m, b in blocks.items()}
        server = WebServer(session, config.web)
        url = await server.start()
        try:
            first = await _first_frames(session, server, clients, url, budget.first_frames)
        finally:
            await server.close()
    finally:
        session.close()
        world.close()
    base = modes["none"]["tick"]["p99_ms"]
    out: dict[str, Any] = {
        "agents": AGENTS, "map": info["map"], "entities": info["entities"],
        "rounds": budget.rounds, "block_ticks": budget.block_ticks, "modes": modes,
        "p99_ratio": round(modes["clients"]["tick"]["p99_ms"] / base, 3) if base else None,
        "p99_ratio_server": round(modes["server"]["tick"]["p99_ms"] / base, 3) if base else None,
        "cpu_p99_ratio": _ratio(modes["clients"]["tick_cpu"]["p99_ms"],
                                modes["none"]["tick_cpu"]["p99_ms"]),
        "first_frame": first,
    }
    c = modes["clients"].get("clients", {})
    log(f"web: tick p99 {modes['none']['tick']['p99_ms']} ms without a server, "
        f"{modes['server']['tick']['p99_ms']} with it, {modes['clients']['tick']['p99_ms']} "
        f"with {CLIENTS} clients ({out['p99_ratio']}x; goal <= 1.10; in main-thread CPU time "
        f"{out['cpu_p99_ratio']}x); "
        f"{c.get('bytes_per_client_per_s', 0) / 1000:.1f} KB/s per client; first frame "
        f"{first['median_ms']} ms")
    return out


def _delta_counts(delta: Delta, data: bytes) -> dict[str, int]:
    """What a delta holds: records per layer and part, events, and encoded bytes by part."""
    out = {f"{layer}_{part}": len(getattr(delta, part)[layer])
           for layer in LAYERS for part in ("add", "upd", "drop")}
    out["events"] = len(delta.events)
    out["events_dropped"] = delta.events_dropped
    frame = orjson.loads(data)
    for part in (*LAYERS, "events"):
        out[f"bytes_{part}"] = len(orjson.dumps(frame[part])) if part in frame else 0
    return out


def _scan_ms(server: WebServer) -> float:
    """What the feed's comparison reads on every frame, in ms: every agent's state (items
    and objects are read only where the world noted a change)."""
    started = time.perf_counter()
    server.feed.states("agents")
    return (time.perf_counter() - started) * 1000


def _ticks(loop: TimedLoop, ticks: int, after: Callable[[], None] | None = None
           ) -> tuple[list[float], list[float]]:
    """``ticks`` ticks flat out; each one's time and the work after it (seconds)."""
    tick_s: list[float] = []
    between_s: list[float] = []
    loop.ticks, loop.between = tick_s, between_s
    try:
        for _ in range(ticks):
            loop.tick_once()
            if after is not None:
                after()
    finally:
        loop.ticks = loop.between = None
    return tick_s, between_s


def _deltas(loop: TimedLoop, server: WebServer, ticks: int) -> dict[str, Any]:
    """``ticks`` ticks with no client, then ``ticks`` with a frame after every one (the
    feed's frame budget lifted) for a subscriber to everything: its encoded size, what it
    holds, what building it cost, and what it does to the tick."""
    plain_s, plain_between_s = _ticks(loop, ticks)
    feed = server.feed
    group = Group(Subscription(rate=MAX_RATE), feed)
    sizes: list[int] = []
    frames: list[tuple[Delta, bytes]] = []

    def listen(delta: Delta) -> None:
        data = group.take(delta)
        if data is not None:
            sizes.append(len(data))
            frames.append((delta, data))

    budget, defer = feed.frame_budget, feed.defer
    feed.frame_budget, feed.defer = 1.0, None  # a frame inside every tick, to time both
    feed.listeners.append(listen)
    feed.watch()
    group.start()
    built = feed.frames
    scans: list[float] = []
    try:  # the scans run after the tick's time is taken: they are not in it
        with_s, with_between_s = _ticks(loop, ticks, lambda: scans.append(_scan_ms(server)))
    finally:
        feed.unwatch()
        feed.listeners.remove(listen)
        feed.frame_budget, feed.defer = budget, defer
    frame_ms = _frame_costs(server, feed.frames - built)
    cost = _median(frame_ms)
    counts = [_delta_counts(delta, data) for delta, data in frames]
    return {
        "ticks": ticks, "frames": len(sizes),
        "bytes": {"median": round(_median([float(s) for s in sizes])),
                  "max": max(sizes, default=0), "min": min(sizes, default=0)},
        "holds": {k: round(_median([float(c[k]) for c in counts]))
                  for k in (counts[0] if counts else {})},
        "frame_ms": {"p50": round(cost, 2), "max": round(max(frame_ms, default=0.0), 2)},
        "agents_scan_ms": round(_median(scans), 2),
        "max_events_per_frame": feed.max_events,
        "tick_without_frame": summarise(plain_s),
        "tick_with_frame": summarise(with_s),
        "between_without_frame": summarise(plain_between_s),
        "between_with_frame": summarise(with_between_s),
        # The feed spaces frames so that they take at most frame_budget of the time.
        "default_budget_frames_per_s": (round(min(RATE, budget / (cost / 1000)), 2)
                                        if cost else None),
        "frame_budget": budget,
    }


async def _big(budget: WebBudget, clients: ClientProcess, root: Path,
               log: Callable[[str], None]) -> dict[str, Any]:
    agents = budget.big_agents
    world, config, info = build_world(agents, root, budget.big_warmup_ticks)
    config = config.replace(web={"port": 0}, persistence={"enabled": False})
    log(f"web: {agents} agents ({info['map']} map, {info['entities']} entities): "
        f"deltas over {budget.delta_ticks} ticks, {budget.big_first_frames} first frames")
    session = Session(config, world)
    loop = TimedLoop(session.loop)
    session.loop = loop
    try:
        server = WebServer(session, config.web)
        url = await server.start()
        try:
            deltas = _deltas(loop, server, budget.delta_ticks)
            deltas["keyframe"] = _keyframe_cost(server)
            first = await _first_frames(session, server, clients, url,
                                        budget.big_first_frames)
        finally:
            await server.close()
    finally:
        session.close()
        world.close()
    log(f"web: {agents} agents: delta {deltas['bytes']['median'] / 1000:.0f} KB per tick "
        f"(max {deltas['bytes']['max'] / 1000:.0f}), frame {deltas['frame_ms']['p50']} ms, "
        f"keyframe {deltas['keyframe']['bytes'] / 1e6:.2f} MB, first frame "
        f"{first['median_ms']} ms")
    return {"agents": agents, "map": info["map"], "entities": info["entities"],
            "deltas": deltas, "first_frame": first}


async def _measure(budget: WebBudget, log: Callable[[str], None]) -> dict[str, Any]:
    clients = await ClientProcess.start()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
            paced = await _paced(budget, clients, Path(tmp) / "paced", log)
            gc.collect()
            big = await _big(budget, clients, Path(tmp) / "big", log)
    finally:
        await clients.close()
    return {"budget": asdict(budget), "paced": paced, "big": big}


def measure_web(*, quick: bool = False, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The web section's figures (see the module's docstring)."""
    return asyncio.run(_measure(QUICK_WEB if quick else FULL_WEB, log))
