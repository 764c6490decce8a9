"""Every connection the web server takes, watched: how many, from where, and whether it is
doing anything.

The server's listening socket hands each new connection to a ``Watched`` protocol that stands
between the event loop and aiohttp's request handler. It sees the connection open and close
and its bytes arrive, and passes everything on unchanged. With that the guard keeps three
rules, so that no client can hold the server's places, or the process's files, for nothing:

- **caps**: at most ``web.max_connections`` connections in all and
  ``web.max_connections_per_address`` from one address. The total is lowered at start-up to
  fit the process's limit of open files, with room left for the world's own (snapshots, seek
  points, sandbox workers, models): running out of file descriptors must refuse clients,
  never stop the world. A newcomer past a cap takes the place of the longest-idle connection
  (one with no request under way); when every connection is busy it is answered 503.
- **idle**: a connection with no request under way for ``web.idle_timeout_s`` is closed,
  from its opening, its last answer, or while its answer waits to be taken.
- **head**: a request whose head and body have not all arrived ``web.header_timeout_s``
  after its first byte is closed (slowloris).

A request under way is never timed here: its handler answers it. A WebSocket is a request
under way for its whole life, under the rules of the feed and of ``/agents`` (subscribe or
authenticate in time, message rates, slow readers).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["FILE_RESERVE", "ConnectionGuard", "Watched", "connection_budget"]

FILE_RESERVE = 0.25  # of the files free at start-up, the share kept for the world itself
MIN_RESERVE = 64
REFUSAL = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n" \
          b"Connection: close\r\nContent-Length: %d\r\n\r\n%s"


def open_files() -> int:
    """File descriptors this process has open now (Linux; elsewhere a guess of 64)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 64


def connection_budget(wanted: int) -> tuple[int, str]:
    """The most connections the server may hold: ``wanted``, lowered so that the world keeps
    a quarter of the files free at start-up (at least 64) under the soft limit of open files;
    and why, when it was lowered."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted, ""
    free = soft - open_files()
    room = free - max(MIN_RESERVE, int(free * FILE_RESERVE))
    if room >= wanted:
        return wanted, ""
    cap = max(2, room)
    return cap, (f"web.max_connections {wanted} lowered to {cap}: the process may open "
                 f"{soft} files (ulimit -n) and {free} are free; the rest stay for the world")


def unlink(handler: Any, transport: asyncio.BaseTransport | None) -> None:
    """Break the reference cycles a closed connection leaves, so that reference counting
    frees it at once. The collector freezes what is alive between ticks
    (agent_world/gcpolicy.py), and a frozen cycle is freed only by a sweep, a pause of half a
    second at 10,000 agents. Two cycles outlive every WebSocket (measured: 41 objects a
    connection): aiohttp's handler keeps the WebSocket response's reader callback, which
    leads back to the handler (aiohttp 3.14's ``connection_lost`` leaves it set), and
    asyncio's socket transport keeps its own bound read callback. Neither is used once the
    connection is lost. Both are private: where a version has no such attribute nothing is
    done, and the collector's sweeps free what is left, as before."""
    if getattr(handler, "_data_received_cb", None) is not None:
        handler._data_received_cb = None
    if transport is not None and getattr(transport, "_read_ready_cb", None) is not None:
        transport._read_ready_cb = None  # type: ignore[attr-defined]



@dataclass(slots=True)
class _Conn:
    protocol: Watched
    peer: str
    opened: float
    idle_since: float | None  # when it last had no request under way (None: one is)
    head_since: float | None = None  # first byte of the request arriving (None: none)
    requests: int = 0


class Watched(asyncio.Protocol):
    """One connection: tells the guard what happens and passes it on to aiohttp's handler."""

    def __init__(self, guard: ConnectionGuard, inner: Any) -> None:
        self.guard = guard
        self.inner = inner  # aiohttp's RequestHandler for this connection
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.inner.connection_made(transport)
        self.guard.opened(self, transport)

    def data_received(self, data: bytes) -> None:
        self.guard.bytes_in(self)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.closed(self)
        self.inner.connection_lost(exc)
        unlink(self.inner, self.transport)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class ConnectionGuard:
    """The connections of one server (main thread: the event loop's callbacks)."""

    def __init__(self, *, max_total: int, max_per_address: int, idle_s: float, head_s: float,
                 clock: Callable[[], float], note: Callable[[str], None]) -> None:
        self.max_total = max_total
        self.max_per_address = max_per_address
        self.idle_s = idle_s
        self.head_s = head_s
        self.clock = clock
        self.note = note  # counted refusals, said at most once per interval by the caller
        self.conns: dict[Watched, _Conn] = {}
        self.by_handler: dict[Any, _Conn] = {}
        self.per_address: Counter[str] = Counter()
        self.refused = 0  # connections answered 503 at a cap
        self.evicted = 0  # idle connections closed to make room
        self.closed_idle = 0
        self.closed_head = 0
        self.most = 0  # the most connections held at once
        self._task: asyncio.Task[None] | None = None

    def factory(self, make_handler: Callable[[], Any]) -> Callable[[], Watched]:
        """The protocol factory for the listening socket: aiohttp's handler, watched."""
        return lambda: Watched(self, make_handler())

    def start(self) -> None:
        self._task = asyncio.create_task(self._watch(), name="web-connections")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # -- what the connections say -------------------------------------------------------------

    def opened(self, protocol: Watched, transport: asyncio.Transport) -> None:
        peername = transport.get_extra_info("peername")
        peer = str(peername[0]) if isinstance(peername, tuple) and peername else "?"
        now = self.clock()
        full_here = self.per_address[peer] >= self.max_per_address
        full = len(self.conns) >= self.max_total
        if (full_here or full) and not self._evict(peer if full_here else None):
            self.refused += 1
            why = (f"{self.per_address[peer]} connections from {peer} are open, the most "
                   "web.max_connections_per_address allows" if full_here else
                   f"{len(self.conns)} connections are open, the most this server takes "
                   "(web.max_connections)")
            body = orjson.dumps({"error": f"{why}; try again later", "status": 503})
            transport.write(REFUSAL % (len(body), body))
            transport.close()
            self.note(f"refused a connection from {peer}: {why}")
            return
        conn = _Conn(protocol, peer, now, idle_since=now)
        self.conns[protocol] = conn
        self.by_handler[protocol.inner] = conn
        self.per_address[peer] += 1
        self.most = max(self.most, len(self.conns))

    def bytes_in(self, protocol: Watched) -> None:
        conn = self.conns.get(protocol)
        if conn is not None and conn.idle_since is not None and conn.head_since is None:
            conn.head_since = self.clock()

    def closed(self, protocol: Watched) -> None:
        conn = self.conns.pop(protocol, None)
        if conn is None:
            return
        self.by_handler.pop(protocol.inner, None)
        self.per_address[conn.peer] -= 1
        if self.per_address[conn.peer] <= 0:
            del self.per_address[conn.peer]

    # -- what the server's middleware says ----------------------------------------------------

    def request_started(self, handler: Any) -> None:
        """A request's head has arrived (its body is read within what is left of the head
        timeout: ``head_deadline``)."""
        conn = self.by_handler.get(handler)
        if conn is not None:
            conn.idle_since = None
            conn.requests += 1

    def head_time_left(self, handler: Any) -> float:
        """Seconds left for the request now under way to send its body."""
        conn = self.by_handler.get(handler)
        if conn is None or conn.head_since is None:
            return self.head_s
        return max(0.0, conn.head_since + self.head_s - self.clock())

    def request_done(self, handler: Any) -> None:
        conn = self.by_handler.get(handler)
        if conn is not None:
            conn.idle_since = self.clock()
            conn.head_since = None

    # -- rules --------------------------------------------------------------------------------

    def _evict(self, peer: str | None) -> bool:
        """Close the longest-idle connection (of ``peer``, when given) to make room; False
        when none is idle."""
        idle = [c for c in self.conns.values()
                if c.idle_since is not None and (peer is None or c.peer == peer)]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: (c.head_since is not None, c.idle_since or 0.0))
        self.evicted += 1
        self._cut(oldest)
        return True

    def _cut(self, conn: _Conn) -> None:
        """Close now: a connection that is not sending a request has nothing to lose."""
        transport = conn.protocol.transport
        self.closed(conn.protocol)
        if transport is not None:
            transport.abort()

    def sweep(self) -> None:
        """Close the connections past their idle or head timeout."""
        now = self.clock()
        for conn in list(self.conns.values()):
            if conn.idle_since is None:
                continue  # a request under way: its handler answers it
            if conn.head_since is not None:
                if now - conn.head_since > self.head_s:
                    self.closed_head += 1
                    self._cut(conn)
            elif now - conn.idle_since > self.idle_s:
                self.closed_idle += 1
                self._cut(conn)

    async def _watch(self) -> None:
        period = max(0.02, min(1.0, self.idle_s / 4, self.head_s / 4))
        while True:
            await asyncio.sleep(period)
            self.sweep()

    def stats(self) -> dict[str, Any]:
        return {"connections": len(self.conns), "most connections": self.most,
                "connection cap": self.max_total,
                "refused (cap)": self.refused, "idle given way": self.evicted,
                "closed idle": self.closed_idle, "closed (slow head)": self.closed_head}
