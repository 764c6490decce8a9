"""The web server: the viewer's page, the telemetry API and the live WebSocket feed, served
from the world's own asyncio loop.

Every handler runs on the main thread between ticks, so it reads the world as it is. A
tick pays only for handing its events to the feed; the feed's frame is built after the
tick, while the loop waits for the next one (and spaced to stay within
``web.frame_budget``). Commands go through a ``Console`` like the terminal's: the same
parsing, the same one-line errors, the same inputs (logged, replayed), with source ``web``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson
from aiohttp import WSMsgType, web

from agent_world.config import ConfigError, WebConfig
from agent_world.console.commands import Console
from agent_world.remote.endpoint import AgentsEndpoint
from agent_world.web import api
from agent_world.web.clients import Client
from agent_world.web.feed import Delta, LiveFeed
from agent_world.web.series import MetricSeries
from agent_world.web.subscriptions import (
    Group,
    Subscription,
    SubscriptionError,
    parse_subscription,
)
from agent_world.web.training import TrainingRuns

if TYPE_CHECKING:
    from agent_world.app import Session
    from agent_world.core.world import World
    from agent_world.persistence import SaveFolder
    from agent_world.web.playback import Playback

__all__ = ["MAX_BODY", "MAX_WS_MESSAGE", "SERVER_KEY", "STATIC_DIR", "WebError", "WebServer",
           "check_web", "is_loopback", "web_token"]

STATIC_DIR = Path(__file__).parent / "static"
MAX_BODY = 64 * 1024
MAX_WS_MESSAGE = 16 * 1024
WATCHDOG_S = 0.5
SERVER_KEY = web.AppKey("agent_world_server", object)


class WebError(RuntimeError):
    """The server could not start (the message says why and what to do)."""


def web_token(cfg: WebConfig) -> str | None:
    """The access token ``web.token_env`` names, None without one; ConfigError if the
    variable is named but not set."""
    if not cfg.token_env:
        return None
    token = os.environ.get(cfg.token_env, "")
    if not token:
        raise ConfigError(f"web.token_env: environment variable {cfg.token_env} is not set; "
                          f"export {cfg.token_env}=... (a long random string) or set "
                          "web.token_env: ''")
    return token


def refused_on_the_web(name: str, words: list[str]) -> str | None:
    """Why a command is not taken from the web (None: it is). Stopping the process and
    reading the server's files stay with whoever runs it."""
    if name == "quit":
        return "/quit is for the world's own terminal (or Ctrl-C / SIGTERM there)"
    if name == "echo":
        return "/echo changes the world's terminal, which the web does not have"
    if name == "ability" and words[1:2] and words[1].lower() == "load":
        return ("/ability load reads a file on the server; load abilities from its "
                "terminal, or ask for one with /ability \"DESCRIPTION\"")
    return None


def check_web(cfg: WebConfig) -> None:
    """ConfigError unless these settings can serve: a named token variable must be set, and
    an address beyond loopback needs a token."""
    token = web_token(cfg)
    if token is None and not is_loopback(cfg.host):
        raise ConfigError(f"web.host: {cfg.host} is beyond loopback, which needs an access "
                          "token: set web.token_env to an environment variable holding one, "
                          "or web.host: 127.0.0.1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class WebServer:
    """The web side of one session. ``start`` binds and serves; ``close`` stops."""

    def __init__(self, session: Session, cfg: WebConfig, *, token: str | None = None) -> None:
        if not is_loopback(cfg.host) and token is None:
            raise WebError(f"web.host: {cfg.host} is beyond loopback, which needs an access "
                           "token (web.token_env)")
        self.session = session
        self.cfg = cfg
        self.token = token
        self.read_only = cfg.read_only
        self.loopback = is_loopback(cfg.host)
        loop = session.loop
        self._thinking_at = -1
        self._thinking: frozenset[int] = frozenset()
        self.feed = LiveFeed(session.world, ring_events=cfg.ring_events,
                             thinking=self.thinking, frame_budget=cfg.frame_budget,
                             defer=asyncio.get_running_loop().call_soon)
        self.series = MetricSeries(
            session.world, tick_ms=self._tick_ms,
            thinking=(session.llm.thinking if session.llm is not None else None))
        self.console = Console(session, source="web", refuse=refused_on_the_web)
        self.groups: dict[Subscription, Group] = {}
        self.clients: set[Client] = set()
        self.feed.listeners.append(self._on_delta)
        loop.observers.extend([self.feed, self.series])
        self.training = TrainingRuns(self)
        self.app = self._build_app()
        self.url: str | None = None
        self.note = ""  # said at start-up when the server is not where it was asked to be
        self._runner: web.AppRunner | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self.closed_slow = 0
        self.playback: Playback | None = None  # set by a served replay
        self.agents: AgentsEndpoint | None = None  # /agents, in a live world (start)

    # -- parts the handlers use ---------------------------------------------------------------

    def thinking(self) -> frozenset[int]:
        """Agents waiting for their brain's answer (computed once per tick)."""
        tick = self.session.world.tick
        if tick != self._thinking_at:
            self._thinking_at = tick
            self._thinking = frozenset().union(
                *(part.queue.agents() for part in self.session.thinking_parts()))
        return self._thinking

    def _tick_ms(self) -> tuple[float, float]:
        s = self.session.loop.stats()
        return s.p50_ms, s.p99_ms

    def replay_info(self) -> dict[str, Any] | None:
        """The timeline of a served replay (None: a live world)."""
        return self.playback.info() if self.playback is not None else None

    def log_folder(self) -> SaveFolder | None:
        """The save folder whose event log holds this world's past: the session's own, or
        the recording a served replay plays."""
        if self.playback is not None:
            return self.playback.folder
        persistence = self.session.persistence
        return persistence.folder if persistence is not None else None

    def world_replaced(self, world: World) -> None:
        """A served replay jumped to another tick (a new world object): every client starts
        over from a keyframe of it."""
        self.feed.rebind(world)
        self.series.rebind(world)
        for group in self.groups.values():
            group.restart()
            key = group.keyframe()
            for client in group.members:
                client.restart(key)

    def stats(self) -> dict[str, Any]:
        """For /stats: where the viewer is and what it serves."""
        sent = sum(c.bytes_sent for c in self.clients)
        return {"url": self.url or "not started", "clients": len(self.clients),
                "groups": len(self.groups), "frames": self.feed.frames,
                "frame ms p50": self.feed.stats()["frame_ms_p50"],
                "bytes sent": sent, "coalesced": sum(c.coalesced for c in self.clients),
                "closed as too slow": self.closed_slow}

    # -- the app ------------------------------------------------------------------------------

    def _build_app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._guard])
        app[SERVER_KEY] = self
        api.add_routes(app, self)
        self.training.add_routes(app)
        app.router.add_get("/ws", self._ws)
        app.router.add_get("/agents", self._agents)
        app.router.add_get("/", self._index)
        app.router.add_static("/static/", STATIC_DIR, follow_symlinks=False,
                              append_version=False)
        return app

    async def _agents(self, request: web.Request) -> web.StreamResponse:
        if self.agents is None:
            why = ("a replay plays the decisions it recorded" if self.playback is not None
                   else "remote.enabled is false")
            return api.error(409, f"this server takes no external agents: {why}")
        return await self.agents.handle(request)

    async def _index(self, _request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC_DIR / "index.html",
                                headers={"Cache-Control": "no-cache"})

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Writes need the token (when one is set), JSON and the page's own origin; every
        error leaves as JSON with a message.

        A request no route takes (a wrong method, an unknown path) is answered 405 or 404
        before the write rules: a wrong method is not a badly sent command, and a 415 for it
        sent people looking for the wrong mistake."""
        unrouted = request.match_info.http_exception
        if unrouted is not None and request.path.startswith("/api"):
            if isinstance(unrouted, web.HTTPMethodNotAllowed):
                allowed = ", ".join(sorted(unrouted.allowed_methods))
                refused = api.error(405, f"{request.method} is not allowed on "
                                         f"{request.path}; use {allowed}")
                refused.headers["Allow"] = allowed
                return refused
            return api.error(unrouted.status, unrouted.reason)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            if self.read_only:
                return api.error(403, "this world is served read-only (web.read_only); "
                                      "commands are refused")
            if self.token is not None and not self.authorized(request):
                return api.error(401, "this command needs the access token: send "
                                      "'Authorization: Bearer TOKEN' (the value of the "
                                      f"variable {self.cfg.token_env})")
            if not self.same_origin(request):
                return api.error(403, f"origin {request.headers.get('Origin')!r} is not "
                                      "this server's; commands come from its own page")
            if request.content_type != "application/json":
                return api.error(415, f"send the command as application/json, got "
                                      f"{request.content_type!r}")
        try:
            response: web.StreamResponse = await handler(request)
        except web.HTTPException as exc:
            if exc.status >= 400 and request.path.startswith("/api"):
                return api.error(exc.status, exc.reason)
            raise
        return response

    def authorized(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(value.strip().encode(), self.token.encode())

    def same_origin(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser's cross-site request (scripts, curl)
        return urlsplit(origin).netloc.lower() == request.host.lower()

    # -- serving ------------------------------------------------------------------------------

    async def start(self) -> str:
        """Bind and serve; the URL. A port in use (another world serving) gives way to any
        free port, said in ``note``; WebError when nothing can be bound."""
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False,
                               shutdown_timeout=1.0)
        await runner.setup()
        host, wanted = self.cfg.host, self.cfg.port
        try:
            site = await self._bind(runner, host, wanted)
            if site is None:
                site = await self._bind(runner, host, 0)
        except OSError as exc:
            await runner.cleanup()
            raise WebError(f"web: cannot listen on {host}:{wanted} ({exc.strerror or exc}); "
                           "pick another web.host or web.port, or web.enabled: false"
                           ) from None
        assert site is not None
        self._runner = runner
        server = getattr(site, "_server", None)
        port = server.sockets[0].getsockname()[1] if server and server.sockets else wanted
        if wanted and port != wanted:
            self.note = f"port {wanted} is in use (another world?), so this one is on {port}"
        shown = host if ":" not in host else f"[{host}]"
        self.url = f"http://{shown}:{port}/"
        self.session.web = self
        if self.playback is None and self.session.config.remote.enabled:
            self.agents = AgentsEndpoint(self.session, self.session.config.remote,
                                         token=self.token)
        self.series.sample()  # the charts start with the world as it is now
        self._watchdog = asyncio.create_task(self._watch_clients(), name="web-watchdog")
        return self.url

    @staticmethod
    async def _bind(runner: web.AppRunner, host: str, port: int) -> web.TCPSite | None:
        """The site listening on host:port; None if that port is in use."""
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE and port:
                return None
            raise
        return site

    async def close(self) -> None:
        self.training.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for client in list(self.clients):
            await client.close("the world is stopping", code=1001)
        if self.agents is not None:
            await self.agents.close()
            self.agents = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        loop = self.session.loop
        for part in (self.feed, self.series):
            if part in loop.observers:
                loop.observers.remove(part)
        self.console.close()

    async def _watch_clients(self) -> None:
        """Close clients that take no frame for ``web.slow_client_s``."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(WATCHDOG_S)
            now = loop.time()
            for client in list(self.clients):
                late = client.late_by(now)
                if late > self.cfg.slow_client_s:
                    self.closed_slow += 1
                    await client.close(f"too slow: a frame waited {late:.0f} s to be taken "
                                       f"(web.slow_client_s is {self.cfg.slow_client_s:g})")

    def _on_delta(self, delta: Delta) -> None:
        for group in list(self.groups.values()):
            try:
                self._deliver(group, delta)
            except Exception as exc:  # a viewer's bug must never stop the world
                self.session.report_problem(
                    f"web: a frame for {len(group.members)} client(s) failed "
                    f"({type(exc).__name__}: {exc}); they are disconnected")
                self.groups.pop(group.sub, None)
                for client in list(group.members):
                    client.group = None
                    self.feed.unwatch()
                    asyncio.get_running_loop().create_task(
                        client.close("the server could not build your frame (a bug, "
                                     "reported in the world log)", code=1011))

    def _deliver(self, group: Group, delta: Delta) -> None:
        frame = group.take(delta)
        if frame is None:
            return
        for client in group.members:
            client.offer(frame, group.keyframe)

    def _subscribe(self, client: Client, sub: Subscription) -> None:
        self._leave(client)
        group = self.groups.get(sub)
        if group is None:
            group = self.groups[sub] = Group(sub, self.feed)
        group.members.add(client)
        client.group = group
        self.feed.watch()
        client.send_now(group.keyframe())

    def _leave(self, client: Client) -> None:
        group = client.group
        if group is None:
            return
        client.group = None
        group.members.discard(client)
        self.feed.unwatch()
        if not group.members:
            self.groups.pop(group.sub, None)

    async def _ws(self, request: web.Request) -> web.StreamResponse:
        if len(self.clients) >= self.cfg.max_clients:
            return api.error(503, f"{len(self.clients)} clients are connected, the most "
                                  "web.max_clients allows; try again later")
        if not self.same_origin(request):
            return api.error(403, f"origin {request.headers.get('Origin')!r} is not this "
                                  "server's")
        ws = web.WebSocketResponse(compress=False, max_msg_size=MAX_WS_MESSAGE, heartbeat=30)
        if not ws.can_prepare(request).ok:
            return api.error(400, "/ws is a WebSocket: connect with a WebSocket client "
                                  "(docs/api.md)")
        await ws.prepare(request)
        loop = asyncio.get_running_loop()
        client = Client(ws, request, size=self.cfg.client_queue,
                        slow_s=self.cfg.slow_client_s, clock=loop.time)
        self.clients.add(client)
        client.start()
        world = self.session.world
        client.send_now(orjson.dumps({
            "t": "hello", "tick": world.tick, "world": self.session.config.world.name,
            "map": {"width": world.terrain.width, "height": world.terrain.height},
            "read_only": self.read_only, "replay": self.replay_info()}))
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    client.send_now(_error("send JSON text messages"))
                    continue
                self._on_message(client, msg.data)
        finally:
            self._leave(client)
            self.clients.discard(client)
            await client.stop()
        return ws

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
            self._leave(client)
        elif op == "ping":
            client.send_now(orjson.dumps({"t": "pong", "tick": self.session.world.tick}))
        else:
            client.send_now(_error(f"unknown op {op!r}; expected subscribe, unsubscribe or "
                                   "ping"))


def encode(frame: object) -> bytes:
    """A frame as JSON (components hold maps with whole-number keys)."""
    return orjson.dumps(frame, option=orjson.OPT_NON_STR_KEYS)


def _error(message: str) -> bytes:
    return orjson.dumps({"t": "error", "message": message})
