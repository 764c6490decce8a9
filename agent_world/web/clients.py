"""One WebSocket client: a bounded queue of frames and the task that writes them.

A client that reads slowly never makes the world wait and never makes memory grow: its
queue holds at most ``size`` frames; when a frame finds it full, the queued frames are
dropped and the client is marked stale, and the next frame it has room for is a fresh
keyframe (everything it draws, as it is then) instead of the deltas it missed. A client
that takes no frame at all for ``slow_s`` seconds is closed with a reason.

It also keeps what the feed's rules ask of it (feedsocket.py): since when it has had no
subscription, when its next keyframe may be built, and the subscription waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable

from aiohttp import WSCloseCode, WSMsgType, web

from agent_world.web.subscriptions import Group, Subscription

__all__ = ["Client"]

CLOSE_WAIT_S = 1.0


class Client:
    def __init__(self, ws: web.WebSocketResponse, request: web.Request, *, size: int,
                 slow_s: float, clock: Callable[[], float] = time.monotonic,
                 number: int = 0) -> None:
        self.ws = ws
        self.number = number  # its hello says it: a viewer that plays an agent names it
        self.request = request
        # Kept from the start: aiohttp lets go of it once a close begins, and a client that
        # does not read must still be cut off.
        self.transport = request.transport
        self.size = size
        self.slow_s = slow_s
        self.clock = clock
        self.frames: deque[bytes] = deque()
        self.group: Group | None = None
        self.stale = False
        self.sent = 0
        self.bytes_sent = 0
        self.coalesced = 0
        self.closing: str | None = None
        self.sending_since: float | None = None  # when the frame being written was started
        self.idle_since: float | None = clock()  # with no subscription since (None: has one)
        self.next_key_at = 0.0  # its next keyframe no sooner (the subscription's rate)
        self.pending: Subscription | None = None  # a subscribe waiting for its keyframe
        self.pending_timer: asyncio.TimerHandle | None = None
        self._ready = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._writer = asyncio.create_task(self._write(), name="web-client-writer")

    def offer(self, frame: bytes, keyframe: Callable[[], bytes]) -> None:
        """A new frame for this client (main thread, after a tick)."""
        if self.closing is not None:
            return
        if self.stale:
            if len(self.frames) < self.size:
                self.frames.clear()
                self.frames.append(keyframe())
                self.stale = False
                self._ready.set()
            return
        if len(self.frames) >= self.size:
            self.frames.clear()  # it missed deltas: only a keyframe can catch it up
            self.stale = True
            self.coalesced += 1
            return
        self.frames.append(frame)
        self._ready.set()

    def send_now(self, frame: bytes) -> None:
        """A frame ahead of the feed (a keyframe on subscribing, a reply)."""
        if self.closing is not None:
            return
        if len(self.frames) >= self.size:
            self.frames.clear()
        self.frames.append(frame)
        self._ready.set()

    def restart(self, keyframe: bytes) -> None:
        """Drop what waits (it is of a world that is gone) and send this keyframe next."""
        if self.closing is not None:
            return
        self.frames.clear()
        self.stale = False
        self.frames.append(keyframe)
        self._ready.set()

    def subscribed(self) -> None:
        self.idle_since = None

    def unsubscribed(self) -> None:
        if self.idle_since is None:
            self.idle_since = self.clock()

    def unsubscribed_for(self, now: float) -> float:
        """How long it has been without a subscription (0 while it has one, or one waits
        for its keyframe)."""
        if self.idle_since is None or self.pending is not None:
            return 0.0
        return now - self.idle_since

    def late_by(self, now: float) -> float:
        """How long the frame being written has waited for the client to take it."""
        return 0.0 if self.sending_since is None else now - self.sending_since

    async def _write(self) -> None:
        ws = self.ws
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self.frames:
                frame = self.frames.popleft()
                self.sending_since = self.clock()
                try:
                    await ws.send_frame(frame, WSMsgType.TEXT)
                except (ConnectionError, RuntimeError):
                    return  # the client went away; the reader notices and cleans up
                self.sending_since = None
                self.sent += 1
                self.bytes_sent += len(frame)

    async def close(self, reason: str, code: int = WSCloseCode.POLICY_VIOLATION, *,
                    said: bytes | None = None) -> None:
        """Close with a reason the client sees (its writer is stopped first: a client that
        does not read cannot take a close frame either, so the connection is cut after a
        short wait). ``said``: a last message sent before the close frame (the whole
        error, where the close reason's 123 bytes are too few)."""
        if self.closing is not None:
            return
        self.closing = reason
        stuck = self.sending_since is not None  # a frame it has not taken: it will not read
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._writer
        try:
            if said is not None and not stuck:
                await asyncio.wait_for(self.ws.send_frame(said, WSMsgType.TEXT), CLOSE_WAIT_S)
            # No drain: the close frame goes behind whatever the client has not read yet; a
            # client that reads answers it within the wait.
            await asyncio.wait_for(self.ws.close(code=code, message=reason.encode()[:120],
                                                 drain=False), CLOSE_WAIT_S)
        except (TimeoutError, ConnectionError, RuntimeError):
            stuck = True
        if stuck and self.transport is not None:
            self.transport.abort()  # a plain close would wait for the unread bytes forever

    async def stop(self) -> None:
        """Stop the writer (the connection has ended)."""
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._writer
