"""``/ws``: the live feed's WebSocket, its clients and the rules every client lives by.

A client connects, gets a ``hello`` and subscribes; from then on it gets the frames of its
subscription (``Group``, shared by the clients asking the same). The rules keep any one client
from holding the server or slowing the world:

- a client must subscribe within ``web.subscribe_within_s`` of connecting (or of
  unsubscribing), or it is closed: idle sockets cannot hold the places the operator needs;
- it may send ``web.messages_per_s`` messages a second (bursts of twice that), or it is told
  so and closed (4429);
- a subscription's keyframe is built at most at the subscription's own rate, and all
  keyframes share the feed's share of the main thread (``web.frame_budget``): a client that
  changes its bbox in a loop gets its newest subscription's keyframe when its turn comes,
  and the world never waits for it;
- where reads need the token (beyond loopback, without ``web.public_reads``) the first
  message must be ``{"op": "auth", "token": ...}`` (unless the handshake carried
  ``Authorization: Bearer``); no token ever goes in the URL;
- a client that takes no frame for ``web.slow_client_s`` is closed (clients.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import WSMsgType, web

from agent_world.ratelimit import TokenBucket
from agent_world.web import api
from agent_world.web.clients import Client
from agent_world.web.feed import Delta
from agent_world.web.subscriptions import (
    Group,
    Subscription,
    SubscriptionError,
    parse_subscription,
)

if TYPE_CHECKING:
    from agent_world.web.server import WebServer

__all__ = ["AUTH_CLOSE", "FLOOD_CLOSE", "MAX_WS_MESSAGE", "FeedSockets", "encode"]

MAX_WS_MESSAGE = 16 * 1024
AUTH_CLOSE = 4401  # reads need the token here, and it was missing or wrong
FLOOD_CLOSE = 4429  # more messages than web.messages_per_s allows
WATCHDOG_S = 0.5


def encode(frame: object) -> bytes:
    """A frame as JSON (components hold maps with whole-number keys)."""
    return orjson.dumps(frame, option=orjson.OPT_NON_STR_KEYS)


def _error(message: str) -> bytes:
    return orjson.dumps({"t": "error", "message": message})


class FeedSockets:
    """The clients of ``/ws`` and the groups their subscriptions form (main thread)."""

    def __init__(self, server: WebServer) -> None:
        self.server = server
        self.cfg = server.cfg
        self.feed = server.feed
        self.groups: dict[Subscription, Group] = {}
        self.clients: set[Client] = set()
        self.closed_slow = 0
        self.closed_idle = 0  # no subscription in time
        self.closed_flooding = 0
        self.refused_auth = 0
        self.keyframes = 0  # built (or taken from a group's cache) for a subscribe
        self.keyframes_deferred = 0  # subscribes whose keyframe had to wait its turn
        self._watchdog: asyncio.Task[None] | None = None
        self._numbers = itertools.count(1)
        self.feed.listeners.append(self._on_delta)

    def start(self) -> None:
        self._watchdog = asyncio.create_task(self._watch(), name="web-watchdog")

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for client in list(self.clients):
            await client.close("the world is stopping", code=1001)

    def stats(self) -> dict[str, Any]:
        return {"clients": len(self.clients), "groups": len(self.groups),
                "bytes sent": sum(c.bytes_sent for c in self.clients),
                "coalesced": sum(c.coalesced for c in self.clients),
                "closed as too slow": self.closed_slow,
                "closed (no subscription)": self.closed_idle,
                "closed (flooding)": self.closed_flooding,
                "refused (token)": self.refused_auth,
                "keyframes": self.keyframes, "keyframes waited": self.keyframes_deferred}

    def world_replaced(self) -> None:
        """A served replay jumped to another tick: every client starts over."""
        for group in self.groups.values():
            group.restart()
            key = group.keyframe()
            for client in group.members:
                client.restart(key)

    # -- the watchdog ---------------------------------------------------------------------------

    async def _watch(self) -> None:
        """Close clients that take no frame for ``web.slow_client_s``, and those that have
        not subscribed within ``web.subscribe_within_s``."""
        loop = asyncio.get_running_loop()
        cfg = self.cfg
        period = max(0.02, min(WATCHDOG_S, cfg.subscribe_within_s / 4))
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            for client in list(self.clients):
                late = client.late_by(now)
                if late > cfg.slow_client_s:
                    self.closed_slow += 1
                    await client.close(f"too slow: a frame waited {late:.0f} s to be taken "
                                       f"(web.slow_client_s is {cfg.slow_client_s:g})")
                elif client.unsubscribed_for(now) > cfg.subscribe_within_s:
                    self.closed_idle += 1
                    await client.close(f"no subscription within {cfg.subscribe_within_s:g} s "
                                       "(web.subscribe_within_s); send {\"op\": "
                                       "\"subscribe\", ...} soon after connecting")

    # -- frames ---------------------------------------------------------------------------------

    def _on_delta(self, delta: Delta) -> None:
        for group in list(self.groups.values()):
            try:
                self._deliver(group, delta)
            except Exception as exc:  # a viewer's bug must never stop the world
                self.server.session.report_problem(
                    f"web: a frame for {len(group.members)} client(s) failed "
                    f"({type(exc).__name__}: {exc}); they are disconnected")
                self.groups.pop(group.sub, None)
                for client in list(group.members):
                    client.group = None
                    self.feed.unwatch()
                    asyncio.get_running_loop().create_task(
                        client.close("the server could not build your frame (a bug, "
                                     "reported in the world log)", code=1011))

    @staticmethod
    def _deliver(group: Group, delta: Delta) -> None:
        frame = group.take(delta)
        if frame is None:
            return
        for client in group.members:
            client.offer(frame, group.keyframe)

    # -- subscriptions --------------------------------------------------------------------------

    def _subscribe(self, client: Client, sub: Subscription) -> None:
        """Take ``sub`` for ``client`` now if its turn has come (its own rate, the feed's
        budget), else when it comes: only its newest subscription is kept waiting."""
        loop = asyncio.get_running_loop()
        client.pending = sub
        if client.pending_timer is not None:
            return  # already waiting its turn: the newest subscription goes then
        wait = max(client.next_key_at - loop.time(), self._budget_wait(sub))
        if wait > 0:
            self.keyframes_deferred += 1
            client.pending_timer = loop.call_later(wait, self._take_pending, client)
            return
        self._take_pending(client)

    def _take_pending(self, client: Client) -> None:
        client.pending_timer = None
        sub = client.pending
        if sub is None or client.closing is not None or client not in self.clients:
            return
        loop = asyncio.get_running_loop()
        wait = self._budget_wait(sub)
        if wait > 0:  # another keyframe took the turn: wait again
            client.pending_timer = loop.call_later(wait, self._take_pending, client)
            return
        client.pending = None
        self.feed.watch()  # before leaving the old group: the feed keeps its base
        self._leave(client)
        group = self.groups.get(sub)
        if group is None:
            group = self.groups[sub] = Group(sub, self.feed)
        group.members.add(client)
        client.group = group
        client.subscribed()
        key = self.feed.spend(group.keyframe)
        self.keyframes += 1
        client.next_key_at = loop.time() + 1.0 / sub.rate
        client.send_now(key)

    def _budget_wait(self, sub: Subscription) -> float:
        """Seconds until the feed's budget has room for this subscription's keyframe (none
        when its group has the keyframe of this tick already: sharing it costs nothing)."""
        group = self.groups.get(sub)
        if group is not None and group.has_keyframe():
            return 0.0
        return self.feed.busy_for()

    def _leave(self, client: Client) -> None:
        group = client.group
        if group is None:
            return
        client.group = None
        group.members.discard(client)
        self.feed.unwatch()
        if not group.members:
            self.groups.pop(group.sub, None)

    def client(self, number: int) -> Client | None:
        """The connected client with this number, if any."""
        return next((c for c in self.clients if c.number == number), None)

    def _forget(self, client: Client) -> None:
        """The client went: its group, its waiting subscription, and the agents it played
        (back to their brains)."""
        if client in self.clients:
            self.server.session.play.disconnected(client.number)
        self._leave(client)
        client.pending = None
        if client.pending_timer is not None:
            client.pending_timer.cancel()
            client.pending_timer = None
        self.clients.discard(client)

    # -- the socket -----------------------------------------------------------------------------

    def hello(self, client: Client) -> bytes:
        session = self.server.session
        world = session.world
        return orjson.dumps({
            "t": "hello", "client": client.number, "tick": world.tick,
            "world": self.server.world_name,
            "map": {"width": world.terrain.width, "height": world.terrain.height},
            "read_only": self.server.read_only, "replay": self.server.replay_info()})

    async def handle(self, request: web.Request) -> web.StreamResponse:
        server = self.server
        if len(self.clients) >= self.cfg.max_clients:
            return api.error(503, f"{len(self.clients)} clients are connected, the most "
                                  "web.max_clients allows; try again later")
        if not server.same_origin(request):
            return api.error(403, f"origin {request.headers.get('Origin')!r} is not this "
                                  "server's")
        ws = web.WebSocketResponse(compress=False, max_msg_size=MAX_WS_MESSAGE, heartbeat=30)
        if not ws.can_prepare(request).ok:
            return api.error(400, "/ws is a WebSocket: connect with a WebSocket client "
                                  "(docs/api.md)")
        await ws.prepare(request)
        loop = asyncio.get_running_loop()
        client = Client(ws, request, size=self.cfg.client_queue,
                        slow_s=self.cfg.slow_client_s, clock=loop.time,
                        number=next(self._numbers))
        bucket = TokenBucket(self.cfg.messages_per_s, clock=loop.time)
        self.clients.add(client)
        client.start()
        authed = not server.reads_need_token or server.authorized(request)
        if authed:
            client.send_now(self.hello(client))
        try:
            async for msg in ws:
                if client.closing is not None:
                    break
                if not bucket.take():
                    self.closed_flooding += 1
                    why = (f"flooding: more than {self.cfg.messages_per_s:g} messages a "
                           "second (web.messages_per_s)")
                    await client.close(why, FLOOD_CLOSE, said=_error(why))
                    break
                if msg.type != WSMsgType.TEXT:
                    client.send_now(_error("send JSON text messages"))
                    continue
                if not authed:
                    authed = await self._authenticate(client, msg.data)
                    if not authed:
                        break
                    continue
                self._on_message(client, msg.data)
        finally:
            self._forget(client)
            await client.stop()
        return ws

    async def _authenticate(self, client: Client, text: str) -> bool:
        """The first message where reads need the token: ``auth`` with it, then the hello."""
        with contextlib.suppress(orjson.JSONDecodeError):
            msg = orjson.loads(text)
            token = msg.get("token") if isinstance(msg, dict) else None
            if (isinstance(msg, dict) and msg.get("op") == "auth" and isinstance(token, str)
                    and self.server.token_matches(token)):
                client.send_now(self.hello(client))
                return True
        self.refused_auth += 1
        await client.close("unauthorized: the access token is needed first", AUTH_CLOSE,
                           said=_error("unauthorized: reading this world needs the access "
                                       "token (web.host is beyond loopback); send {\"op\": "
                                       "\"auth\", \"token\": TOKEN} first, or connect with "
                                       "'Authorization: Bearer TOKEN'"))
        return False

    def _on_message(self, client: Client, text: str) -> None:
        try:
            msg = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            client.send_now(_error(f"not JSON: {exc}"))
            return
        op = msg.get("op") if isinstance(msg, dict) else None
        if op == "subscribe":
            try:
                sub = parse_subscription(msg)
            except SubscriptionError as exc:
                client.send_now(_error(f"subscribe: {exc}"))
                return
            self._subscribe(client, sub)
        elif op == "unsubscribe":
            client.pending = None
            self._leave(client)
            client.unsubscribed()
        elif op == "ping":
            client.send_now(orjson.dumps({"t": "pong",
                                          "tick": self.server.session.world.tick}))
        elif op == "auth":
            pass  # reads are open here (or the client is in already): nothing to do
        else:
            client.send_now(_error(f"unknown op {op!r}; expected subscribe, unsubscribe, "
                                   "ping or auth"))
