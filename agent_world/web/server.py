"""The web server: the viewer's page, the telemetry API and the live WebSocket feed, served
from the world's own asyncio loop.

Every handler runs on the main thread between ticks, so it reads the world as it is. A
tick pays only for handing its events to the feed; the feed's frame is built after the
tick, while the loop waits for the next one (and spaced to stay within
``web.frame_budget``). Commands go through a ``Console`` like the terminal's: the same
parsing, the same one-line errors, the same inputs (logged, replayed), with source ``web``.

Who may do what (access.py): every write needs the access token, made per run unless
``web.token_env`` names one; a request naming a ``Host`` that is not this server's is refused
(DNS rebinding); beyond loopback reads need the token too unless ``web.public_reads``. Every
connection is counted and timed (guard.py) and the feed's clients live by its rules
(feedsocket.py), so no client can hold the server, its files or the world.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import resource
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from aiohttp import web

from agent_world.commands.dispatch import Console
from agent_world.config import WebConfig
from agent_world.remote.endpoint import AgentsEndpoint
from agent_world.web import api, playing
from agent_world.web.access import (
    HostCheck,
    TokenFile,
    is_loopback,
    new_token,
    runtime_dir,
    web_token,
)
from agent_world.web.clients import Client
from agent_world.web.feed import LiveFeed
from agent_world.web.feedsocket import MAX_WS_MESSAGE, FeedSockets, encode
from agent_world.web.guard import ConnectionGuard, connection_budget
from agent_world.web.httplog import Tally, server_logger
from agent_world.web.series import MetricSeries
from agent_world.web.subscriptions import Group, Subscription
from agent_world.web.training import TrainingRuns

if TYPE_CHECKING:
    from agent_world.app import Session
    from agent_world.core.world import World
    from agent_world.persistence import SaveFolder
    from agent_world.web.playback import Playback

__all__ = ["MAX_BODY", "MAX_WS_MESSAGE", "SERVER_KEY", "STATIC_DIR", "WebError", "WebServer",
           "check_web", "encode", "is_loopback", "web_token"]

STATIC_DIR = Path(__file__).parent / "static"
MAX_BODY = 64 * 1024
SERVER_KEY = web.AppKey("agent_world_server", object)
BACKLOG = 128


class WebError(RuntimeError):
    """The server could not start (the message says why and what to do)."""


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
    """ConfigError unless these settings can serve: a named token variable must be set."""
    web_token(cfg)


class WebServer:
    """The web side of one session. ``start`` binds and serves; ``close`` stops.

    ``token``: the access token (``web.token_env``'s); None makes a new one for this run.
    ``made_here``: ``token`` was made by this process all the same (a served replay hands
    its own to the world it forks, so the page that forked it keeps working): it is kept in
    the runtime file and shown like one made now."""

    def __init__(self, session: Session, cfg: WebConfig, *, token: str | None = None,
                 made_here: bool = False) -> None:
        self.session = session
        self.cfg = cfg
        self.token = token if token is not None else new_token()
        self.generated_token = token is None or made_here
        # Never in a log line, an input or an answer, should a client echo it.
        session.redactor.add(self.token)
        self.read_only = cfg.read_only
        self.loopback = is_loopback(cfg.host)
        self.reads_need_token = not self.loopback and not cfg.public_reads
        self.hosts = HostCheck(cfg.host, cfg.allowed_hosts)
        self.token_file: TokenFile | None = None
        loop = session.loop
        self._thinking_at = -1
        self._thinking: frozenset[int] = frozenset()
        self.feed = LiveFeed(session.world, ring_events=cfg.ring_events,
                             thinking=self.thinking, frame_budget=cfg.frame_budget,
                             defer=asyncio.get_running_loop().call_soon)
        # LLM agents waiting for an answer, of every model profile.
        llms = [p for p in (session.llm, *getattr(session, "llm_models", {}).values())
                if p is not None]
        self.series = MetricSeries(
            session.world, tick_ms=self._tick_ms,
            thinking=(lambda: sum(p.thinking() for p in llms)) if llms else None)
        self.console = Console(session, source="web", refuse=refused_on_the_web)
        self.sockets = FeedSockets(self)
        loop.observers.extend([self.feed, self.series])
        self.training = TrainingRuns(self)
        event_loop = asyncio.get_running_loop()
        self.malformed = Tally("malformed HTTP request(s)", interval_s=cfg.report_interval_s,
                               clock=event_loop.time, say=session.note)
        self.failures = Tally("request(s) the server failed on", clock=event_loop.time,
                              interval_s=cfg.report_interval_s, say=session.report_problem)
        self.refusals = Tally("connection(s) refused", interval_s=cfg.report_interval_s,
                              clock=event_loop.time, say=session.note)
        self.guard = ConnectionGuard(
            max_total=cfg.max_connections, max_per_address=cfg.max_connections_per_address,
            idle_s=cfg.idle_timeout_s, head_s=cfg.header_timeout_s, clock=event_loop.time,
            note=lambda why: self.refusals.add("at a cap", why))
        self.app = self._build_app()
        self.url: str | None = None
        self.note = ""  # said at start-up when the server is not where it was asked to be
        self._runner: web.AppRunner | None = None
        self._listening: asyncio.Server | None = None
        self._exception_handler: Any = None
        self.playback: Playback | None = None  # set by a served replay
        self.agents: AgentsEndpoint | None = None  # /agents, in a live world (start)
        self._unwatch: Callable[[], None] | None = None

    # -- parts the handlers use ---------------------------------------------------------------

    @property
    def clients(self) -> set[Client]:
        return self.sockets.clients

    @property
    def groups(self) -> dict[Subscription, Group]:
        return self.sockets.groups

    @property
    def closed_slow(self) -> int:
        return self.sockets.closed_slow

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

    @property
    def world_name(self) -> str:
        """The name the page shows: a served replay's is its recording's (its session runs
        under the operator's config, whose world is another, usually ``default``)."""
        if self.playback is not None:
            return self.playback.folder.name
        return self.session.config.world.name

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
        self.sockets.world_replaced()

    def stats(self) -> dict[str, Any]:
        """For /stats: where the viewer is, what it serves and what it refused."""
        sockets = self.sockets.stats()
        return {"url": self.url or "not started", "clients": sockets.pop("clients"),
                "groups": sockets.pop("groups"), "frames": self.feed.frames,
                "frame ms p50": self.feed.stats()["frame_ms_p50"], **sockets,
                **self.guard.stats(), "malformed requests": self.malformed.total,
                "failed requests": self.failures.total}

    # -- the app ------------------------------------------------------------------------------

    def _build_app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, middlewares=[self._guard])
        app[SERVER_KEY] = self
        api.add_routes(app, self)
        playing.add_routes(app, self)
        self.training.add_routes(app)
        app.router.add_get("/ws", self.sockets.handle)
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
        """Every request: counted by the connection guard (a request under way is not timed
        as idle), refused when it names a foreign Host or is HTTP/0.9, its body read within
        the head timeout; reads beyond loopback and every write need the token; writes need
        JSON and the page's own origin; every error leaves as JSON with a message."""
        guard = self.guard
        guard.request_started(request.protocol)
        try:
            refused = await self._refusal(request)
            if refused is not None:
                return refused
            try:
                response: web.StreamResponse = await handler(request)
            except web.HTTPException as exc:
                if exc.status >= 400 and request.path.startswith("/api"):
                    return api.error(exc.status, exc.reason)
                raise
            return response
        finally:
            guard.request_done(request.protocol)

    async def _refusal(self, request: web.Request) -> web.StreamResponse | None:
        """The answer to a request that may not go on, or None.

        A request no route takes (a wrong method, an unknown path) is answered 405 or 404
        before the write rules: a wrong method is not a badly sent command, and a 415 for it
        sent people looking for the wrong mistake."""
        if request.version < (1, 0):
            # aiohttp answers "GET /" without a version (HTTP/0.9): no headers, no Host.
            return _closing(api.error(400, "HTTP/0.9 requests are refused; send HTTP/1.1 "
                                           "(with a Host header)"))
        host = request.headers.get("Host")
        if not self.hosts.allows(host):
            return api.error(403, self.hosts.refusal(host))
        unrouted = request.match_info.http_exception
        if unrouted is not None and request.path.startswith("/api"):
            if isinstance(unrouted, web.HTTPMethodNotAllowed):
                allowed = ", ".join(sorted(unrouted.allowed_methods))
                refused = api.error(405, f"{request.method} is not allowed on "
                                         f"{request.path}; use {allowed}")
                refused.headers["Allow"] = allowed
                return refused
            return api.error(unrouted.status, unrouted.reason)
        if request.method in ("GET", "HEAD", "OPTIONS"):
            if self.reads_need_token and self._read_guarded(request.path) \
                    and not self.authorized(request):
                return api.error(401, "reading this world needs the access token (web.host "
                                      f"{self.cfg.host} is beyond loopback): send "
                                      "'Authorization: Bearer TOKEN', or set "
                                      "web.public_reads: true to open reads")
            return None
        if self.read_only:
            return api.error(403, "this world is served read-only (web.read_only); "
                                  "commands are refused")
        if not self.authorized(request):
            return api.error(401, "this command needs the access token: send "
                                  "'Authorization: Bearer TOKEN' (" + self.token_hint() + ")")
        if not self.same_origin(request):
            return api.error(403, f"origin {request.headers.get('Origin')!r} is not "
                                  "this server's; commands come from its own page")
        if request.content_type != "application/json":
            return api.error(415, f"send the command as application/json, got "
                                  f"{request.content_type!r}")
        return await self._read_body(request)

    async def _read_body(self, request: web.Request) -> web.StreamResponse | None:
        """Read a write's body now, within what is left of the head timeout (a body sent a
        byte at a time must not hold the connection); the handler then finds it read."""
        if not request.body_exists:
            return None
        try:
            await asyncio.wait_for(request.read(), self.guard.head_time_left(request.protocol))
        except TimeoutError:
            return _closing(api.error(408, f"the request's body did not arrive within "
                                           f"{self.cfg.header_timeout_s:g} s of its first "
                                           "byte (web.header_timeout_s)"))
        except web.HTTPRequestEntityTooLarge:
            return api.error(413, f"the request body is over {MAX_BODY // 1024} KB, the most "
                                  "this server reads")
        return None

    @staticmethod
    def _read_guarded(path: str) -> bool:
        """Reads that need the token where reads do: all but the page itself (it asks for
        the token), the feed (its first message carries it) and /agents (its own)."""
        return not (path in ("/", "/ws", "/agents") or path.startswith("/static/"))

    def token_hint(self) -> str:
        """Where the operator finds the token (never the token itself)."""
        if not self.generated_token:
            return f"the value of the variable {self.cfg.token_env}" if self.cfg.token_env \
                else "the token this world was given"
        if self.token_file is not None:
            return f"the world printed it at start-up on its terminal; it is in " \
                   f"{self.token_file.path}"
        return "the world printed it at start-up on its terminal"

    def token_line(self, *, terminal: bool) -> str:
        """Where the access token is, for a start-up banner. The token itself only on a
        terminal: a banner sent to a file or a pipe (a service's log) must not hold it."""
        needs = "commands from the viewer, training and /agents need it"
        if not self.generated_token:
            return (f"in ${self.cfg.token_env} ({needs})" if self.cfg.token_env
                    else f"the one this world was given ({needs})")
        where = (f"; also in {self.token_file.path}, readable only by you"
                 if self.token_file is not None else "")
        if terminal:
            return f"{self.token}  ({needs}{where})"
        if self.token_file is not None:
            return (f"in {self.token_file.path}, readable only by you ({needs}; shown here "
                    "only on a terminal)")
        return (f"not shown: this output is not a terminal and {runtime_dir(self.cfg)} "
                "could not be written; set web.token_env to give the world a token of your "
                "own")

    def token_matches(self, given: str) -> bool:
        return hmac.compare_digest(given.strip().encode(), self.token.encode())

    def authorized(self, request: web.Request) -> bool:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return self.token_matches(value)

    def same_origin(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser's cross-site request (scripts, curl)
        return urlsplit(origin).netloc.lower() == request.host.lower()

    # -- serving ------------------------------------------------------------------------------

    async def start(self) -> str:
        """Bind and serve; the URL. A port in use (another world serving) gives way to any
        free port, said in ``note``; WebError when nothing can be bound."""
        cap, lowered = connection_budget(self.cfg.max_connections)
        self.guard.max_total = cap
        runner = web.AppRunner(
            self.app, access_log=None, handle_signals=False, shutdown_timeout=1.0,
            logger=server_logger(f"agent_world.web.{id(self)}", self.malformed,
                                 self.failures))
        await runner.setup()
        host, wanted = self.cfg.host, self.cfg.port
        try:
            listening = await self._listen(runner, host, wanted)
            if listening is None:
                listening = await self._listen(runner, host, 0)
        except OSError as exc:
            await runner.cleanup()
            raise WebError(f"web: cannot listen on {host}:{wanted} ({exc.strerror or exc}); "
                           "pick another web.host or web.port, or web.enabled: false"
                           ) from None
        assert listening is not None
        self._runner, self._listening = runner, listening
        self.guard.start()
        self._watch_accept_errors()
        port = listening.sockets[0].getsockname()[1] if listening.sockets else wanted
        notes = []
        if wanted and port != wanted:
            notes.append(f"port {wanted} is in use (another world?), so this one is on {port}")
        if lowered:
            notes.append(lowered)
        self.note = "; ".join(notes)
        shown = host if ":" not in host else f"[{host}]"
        self.url = f"http://{shown}:{port}/"
        self.session.web = self
        if self.generated_token:
            self._write_token_file(port)
        if self.playback is None and self.session.config.remote.enabled:
            self.agents = AgentsEndpoint(self.session, self.session.config.remote,
                                         token=self.token)
        self.series.sample()  # the charts start with the world as it is now
        self.sockets.start()
        # A connection open across a tick is frozen with its reference cycles: the
        # collector sweeps once enough of them have closed (agent_world/gcpolicy.py).
        self._unwatch = self.session.gc.watch(self._open_transports)
        return self.url

    def _write_token_file(self, port: int) -> None:
        folder = runtime_dir(self.cfg)
        token_file = TokenFile(folder, port)
        try:
            token_file.write(url=self.url or "", token=self.token,
                             world=self.world_name)
        except OSError as exc:
            self.session.report_problem(
                f"web: cannot keep the access token in {token_file.path} "
                f"({exc.strerror or exc}); it is shown on the terminal only (set "
                "web.runtime_dir to a folder you can write, or web.token_env)")
            return
        self.token_file = token_file

    async def _listen(self, runner: web.AppRunner, host: str,
                      port: int) -> asyncio.Server | None:
        """Listen on host:port, every connection watched by the guard; None if that port is
        in use."""
        server = runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        try:
            return await loop.create_server(self.guard.factory(server), host, port,
                                            backlog=BACKLOG, reuse_address=True,
                                            family=socket.AF_UNSPEC)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE and port:
                return None
            raise

    def _watch_accept_errors(self) -> None:
        """asyncio's accept loop, out of files, logs a traceback each second: counted here
        instead (the guard keeps the connections below the limit; something else may not)."""
        loop = asyncio.get_running_loop()
        previous = loop.get_exception_handler()
        self._exception_handler = previous

        def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            exc = context.get("exception")
            if (isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE)
                    and "accept" in str(context.get("message", ""))):
                self.refusals.add("out of files", f"accept: {exc.strerror} (ulimit -n "
                                                  f"{_soft_limit()}); new clients wait")
                return
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        loop.set_exception_handler(handler)

    def _open_transports(self) -> list[object]:
        """The transports of the connections open now (the guard's)."""
        return [p.transport for p in self.guard.conns if p.transport is not None]

    async def close(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
        self.training.close()
        if self._listening is not None:
            self._listening.close()
        await self.sockets.close()
        await self.guard.stop()
        if self.agents is not None:
            await self.agents.close()
            self.agents = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._listening is not None:
            await self._listening.wait_closed()
            self._listening = None
            asyncio.get_running_loop().set_exception_handler(self._exception_handler)
            self._exception_handler = None
        if self.token_file is not None:
            self.token_file.remove()
        for tally in (self.malformed, self.failures, self.refusals):
            tally.flush()
        loop = self.session.loop
        for part in (self.feed, self.series):
            if part in loop.observers:
                loop.observers.remove(part)
        self.console.close()


def _closing(response: web.Response) -> web.Response:
    """``response``, and the connection closed after it (what came with it is not HTTP the
    server can go on reading)."""
    response.force_close()
    return response


def _soft_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
