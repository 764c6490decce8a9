"""WebSocket clients for the web benchmark, in a process of their own.

``python -m bench.web_clients`` reads one JSON command per line on stdin and answers each
with one JSON line on stdout. Its clients read on their own core and event loop, so the
work of reading frames is not counted against the world they watch.

- ``{"op": "connect", "url": U, "clients": N, "rate": R}``: N clients connect at once, each
  subscribes to everything (``{"op": "subscribe", "rate": R}``) and waits for its keyframe;
  the answer gives each one's time from connecting to its keyframe. From then on each counts
  what it reads.
- ``{"op": "stop"}``: what each client read since ``connect`` answered (bytes, delta frames,
  keyframes, whether the server closed it), over how many seconds; then they disconnect.
- ``{"op": "first_frame", "url": U, "count": K}``: K clients one after the other, each
  timed from the start of its connection to its keyframe, then closed.
- ``{"op": "quit"}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any

import aiohttp
import orjson

__all__ = ["Reader", "main"]

SUBSCRIBE_TIMEOUT_S = 120.0


def _size(text: str) -> int:
    """Bytes of a text frame as it came over the wire (UTF-8)."""
    return len(text) if text.isascii() else len(text.encode())


class Reader:
    """One client: reads every frame and counts it."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.bytes = 0
        self.deltas = 0
        self.keyframes = 0
        self.other = 0
        self.keyframe_bytes = 0
        self.closed_by_server: str | None = None
        self.got_key = asyncio.Event()
        self.key_at = 0.0
        self.task: asyncio.Task[None] | None = None
        self.stopping = False

    def reset(self) -> None:
        self.bytes = self.deltas = self.keyframes = self.other = 0

    async def read(self) -> None:
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data: str = msg.data
            self.bytes += _size(data)
            if data.startswith('{"t":"delta"'):
                self.deltas += 1
            elif data.startswith('{"t":"key"'):
                self.keyframes += 1
                if not self.got_key.is_set():
                    self.key_at = time.perf_counter()
                    self.keyframe_bytes = _size(data)
                    self.got_key.set()
            else:
                self.other += 1
        if not self.stopping:
            code = self.ws.close_code
            self.closed_by_server = f"closed by the server (code {code})"


async def _open(http: aiohttp.ClientSession, url: str, rate: float) -> tuple[Reader, float]:
    """A connected, subscribed client and its time from connecting to its keyframe (s)."""
    started = time.perf_counter()
    ws = await http.ws_connect(url, max_msg_size=0, autoping=True)
    await ws.send_str(orjson.dumps({"op": "subscribe", "rate": rate}).decode())
    reader = Reader(ws)
    reader.task = asyncio.create_task(reader.read())
    await asyncio.wait_for(reader.got_key.wait(), SUBSCRIBE_TIMEOUT_S)
    return reader, reader.key_at - started


async def _close(readers: list[Reader]) -> None:
    for r in readers:
        r.stopping = True
    await asyncio.gather(*(r.ws.close() for r in readers), return_exceptions=True)
    for r in readers:
        if r.task is not None:
            r.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await r.task


class Clients:
    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.readers: list[Reader] = []
        self.since = 0.0

    async def connect(self, url: str, clients: int, rate: float) -> dict[str, Any]:
        opened = await asyncio.gather(*(_open(self.http, url, rate) for _ in range(clients)))
        self.readers = [r for r, _ in opened]
        for r in self.readers:
            r.reset()
        self.since = time.perf_counter()
        return {"first_frame_ms": [round(s * 1000, 2) for _, s in opened],
                "keyframe_bytes": [r.keyframe_bytes for r in self.readers]}

    async def stop(self) -> dict[str, Any]:
        seconds = time.perf_counter() - self.since
        out = [{"bytes": r.bytes, "deltas": r.deltas, "keyframes": r.keyframes,
                "other": r.other, "closed": r.closed_by_server} for r in self.readers]
        await _close(self.readers)
        self.readers = []
        return {"seconds": round(seconds, 3), "clients": out}

    async def first_frame(self, url: str, count: int, rate: float) -> dict[str, Any]:
        times, sizes = [], []
        for _ in range(count):
            reader, seconds = await _open(self.http, url, rate)
            times.append(round(seconds * 1000, 2))
            sizes.append(reader.keyframe_bytes)
            await _close([reader])
            await asyncio.sleep(0.2)  # let the server see it go before the next one
        return {"first_frame_ms": times, "keyframe_bytes": sizes}


async def serve() -> None:
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    async with aiohttp.ClientSession() as http:
        clients = Clients(http)
        while line := await stdin.readline():
            cmd = orjson.loads(line)
            op = cmd.get("op")
            try:
                if op == "connect":
                    answer = await clients.connect(cmd["url"], int(cmd["clients"]),
                                                   float(cmd.get("rate", 10)))
                elif op == "stop":
                    answer = await clients.stop()
                elif op == "first_frame":
                    answer = await clients.first_frame(cmd["url"], int(cmd["count"]),
                                                       float(cmd.get("rate", 10)))
                elif op == "quit":
                    break
                else:
                    answer = {"error": f"unknown op {op!r}"}
            except Exception as exc:  # reported to the benchmark, which says it
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            sys.stdout.write(orjson.dumps(answer).decode() + "\n")
            sys.stdout.flush()
        await _close(clients.readers)


def main() -> int:
    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
