"""``/agents``: the WebSocket where programs in any language play agents.

A connection authenticates with the server's token (the ``Authorization: Bearer`` header
when it connects, or a first ``auth`` message within ``remote.auth_within_s``: a connection
that does neither is closed, so it cannot hold a place), then claims or spawns agents
and answers their observations (``RemoteBrains``). The world never waits on a client: what
it sends waits in a bounded queue written by the connection's own task, a client that reads
too slowly or sends too much is told why and disconnected, and a bad message gets an
``error`` reply while the connection stays open. Spawning goes through a console of its own
(source ``remote``), the same command surface as the terminal's and the web's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import shlex
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import WSCloseCode, WSMsgType, web

from agent_world.commands.dispatch import Console
from agent_world.commands.parsing import AGENT_NAME
from agent_world.config import RemoteConfig
from agent_world.core.inputs import MAX_PLAN
from agent_world.ratelimit import TokenBucket
from agent_world.remote.answerer import RemoteBrains
from agent_world.remote.protocol import (
    PROTOCOL,
    Ask,
    Auth,
    Claim,
    ClientMessage,
    Decide,
    Ping,
    ProtocolError,
    Release,
    Spawn,
    parse_message,
)

if TYPE_CHECKING:
    from agent_world.app import Session

__all__ = ["AUTH_CLOSE", "FLOOD_CLOSE", "AgentsEndpoint", "Connection"]

MAX_MESSAGE = 64 * 1024
AUTH_CLOSE = 4401  # the token was missing or wrong
FLOOD_CLOSE = 4429  # more messages than remote.messages_per_s allows
SLOW_CLOSE = 4408  # the client does not read what it is sent
CLOSE_WAIT_S = 1.0


def only_spawn(name: str, _words: list[str]) -> str | None:
    """A client's console takes /spawn only (sent as a ``spawn`` message)."""
    return None if name == "spawn" else "an external agent's connection may only spawn"


class Connection:
    """One client: its messages out (a bounded queue and the task writing it) and its
    allowance of messages in (a token bucket)."""

    def __init__(self, ws: web.WebSocketResponse, request: web.Request, name: str, *,
                 queue_size: int, rate: float, clock: Callable[[], float]) -> None:
        self.ws = ws
        self.name = name
        self.address = request.remote or "?"  # spawned agents count against it until they die
        self.transport = request.transport
        self.queue_size = queue_size
        self.bucket = TokenBucket(rate, clock=clock)
        self.frames: deque[bytes] = deque()
        self.closing: str | None = None
        self.received = 0
        self.sent = 0
        self._ready = asyncio.Event()
        self._writer = asyncio.create_task(self._write(), name=f"agents-{name}")

    def send(self, message: dict[str, Any]) -> None:
        if self.closing is not None:
            return
        if len(self.frames) >= self.queue_size:
            asyncio.get_running_loop().create_task(self.close(
                f"too slow: {len(self.frames)} messages wait for you to read them",
                SLOW_CLOSE))
            return
        self.frames.append(orjson.dumps(message, option=orjson.OPT_NON_STR_KEYS))
        self._ready.set()

    def allowed(self) -> bool:
        """Take one message from the allowance; False once it is spent."""
        return self.bucket.take()

    async def _write(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self.frames:
                frame = self.frames.popleft()
                try:
                    await self.ws.send_frame(frame, WSMsgType.TEXT)
                except (ConnectionError, RuntimeError):
                    return  # gone; the reader notices and cleans up
                self.sent += 1

    async def close(self, reason: str, code: int) -> None:
        """Say why, then close (cut off if the client does not take the close frame)."""
        if self.closing is not None:
            return
        self.closing = reason
        self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._writer
        try:
            await asyncio.wait_for(self.ws.send_frame(
                orjson.dumps({"type": "error", "message": reason}), WSMsgType.TEXT),
                CLOSE_WAIT_S)
            await asyncio.wait_for(self.ws.close(code=code, message=reason.encode()[:120],
                                                 drain=False), CLOSE_WAIT_S)
        except (TimeoutError, ConnectionError, RuntimeError):
            if self.transport is not None:
                self.transport.abort()

    async def stop(self) -> None:
        if not self._writer.done():
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._writer


class AgentsEndpoint:
    """The ``/agents`` route of a live world's web server."""

    def __init__(self, session: Session, cfg: RemoteConfig, *, token: str,
                 max_message: int = MAX_MESSAGE) -> None:
        self.session = session
        self.cfg = cfg
        self.token = token  # the web server's: an external agent always needs it
        session.redactor.add(self.token)  # never in a log line or an input, if it leaks
        self.max_message = max_message
        self.brains = RemoteBrains(cfg, session.world,
                                   settings=session.config.decisions.of("remote"))
        self.console = Console(session, source="remote", refuse=only_spawn)
        self.connections: set[Connection] = set()
        self._serial = 0
        session.attach_kind("remote", self.brains)

    async def close(self) -> None:
        for conn in list(self.connections):
            await conn.close("the world is stopping", WSCloseCode.GOING_AWAY)
        self.brains.close()
        self.session.detach_kind("remote", self.brains)
        self.console.close()

    def _authorized(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.token.encode())

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if len(self.connections) >= self.cfg.max_clients:
            raise web.HTTPServiceUnavailable(
                reason=f"{len(self.connections)} external-agent clients are connected, the "
                       "most remote.max_clients allows; try again later")
        ws = web.WebSocketResponse(compress=False, max_msg_size=self.max_message,
                                   heartbeat=30)
        if not ws.can_prepare(request).ok:
            raise web.HTTPBadRequest(reason="/agents is a WebSocket: connect with a "
                                            "WebSocket client (docs/agents.md)")
        scheme, _, header_token = request.headers.get("Authorization", "").partition(" ")
        await ws.prepare(request)
        loop = asyncio.get_running_loop()
        self._serial += 1
        conn = Connection(ws, request, f"client-{self._serial}",
                          queue_size=4 * self.cfg.max_agents_per_client + 16,
                          rate=self.cfg.messages_per_s, clock=loop.time)
        header = request.headers.get("Authorization") is not None
        authed = scheme.lower() == "bearer" and self._authorized(header_token.strip())
        try:
            if header and not authed:
                # A token was given and it is wrong: say so now. Waiting for an auth
                # message instead left the client waiting AUTH_WAIT_S for nothing.
                await conn.close("unauthorized: wrong token (the Authorization header); "
                                 "use the token the world printed at start-up",
                                 AUTH_CLOSE)
                self.brains.refused_auth += 1
                return ws
            if not authed and not await self._await_auth(ws, conn):
                self.brains.refused_auth += 1
                return ws
            self.connections.add(conn)
            self.brains.connect(conn)
            world = self.session.world
            conn.send({"type": "welcome", "protocol": PROTOCOL, "client": conn.name,
                       "world": self.session.config.world.name, "tick": world.tick,
                       "tick_rate": self.session.config.world.tick_rate,
                       "deadline_ms": self.brains.deadline_ms, "max_actions": MAX_PLAN,
                       "max_agents": self.cfg.max_agents_per_client,
                       "messages_per_s": self.cfg.messages_per_s})
            async for msg in ws:
                if conn.closing is not None:
                    break
                if not conn.allowed():
                    self.brains.closed_flooding += 1
                    await conn.close(f"flooding: more than {self.cfg.messages_per_s} messages "
                                     "a second (remote.messages_per_s)", FLOOD_CLOSE)
                    break
                if msg.type != WSMsgType.TEXT:
                    conn.send({"type": "error", "message": "send JSON text messages"})
                    continue
                conn.received += 1
                await self._on_message(conn, msg.data)
        finally:
            self.connections.discard(conn)
            self.brains.disconnect(conn)
            await conn.stop()
        return ws

    async def _await_auth(self, ws: web.WebSocketResponse, conn: Connection) -> bool:
        """The first message must be ``auth`` with the token (when the header had none)."""
        wait = self.cfg.auth_within_s
        reason = (f"send {{\"type\": \"auth\", \"token\": ...}} first (or the header "
                  f"'Authorization: Bearer TOKEN'); none came within {wait:g} s "
                  "(remote.auth_within_s)")
        try:
            msg = await ws.receive(timeout=wait)
        except TimeoutError:
            await conn.close(f"unauthorized: {reason}", AUTH_CLOSE)
            return False
        first: ClientMessage | None = None
        if msg.type == WSMsgType.TEXT:
            with contextlib.suppress(ProtocolError):
                first = parse_message(msg.data)
            if isinstance(first, Auth) and self._authorized(first.token):
                return True
        reason = ("wrong token" if isinstance(first, Auth) else
                  "the first message must be {\"type\": \"auth\", \"token\": ...}")
        await conn.close(f"unauthorized: {reason}", AUTH_CLOSE)
        return False

    async def _on_message(self, conn: Connection, text: str) -> None:
        try:
            msg: ClientMessage = parse_message(text)
            reply = await self._dispatch(conn, msg)
        except ProtocolError as exc:
            reply = {"type": "error", "message": str(exc)}
        if reply is not None:
            conn.send(reply)

    async def _dispatch(self, conn: Connection, msg: ClientMessage) -> dict[str, Any] | None:
        brains = self.brains
        if isinstance(msg, Decide):
            return brains.decide(conn, msg)
        if isinstance(msg, Claim):
            return brains.claim(conn, msg.agent, msg.every_ticks)
        if isinstance(msg, Spawn):
            return await self._spawn(conn, msg)
        if isinstance(msg, Release):
            brains.release(conn, msg.agent)
            return None
        if isinstance(msg, Ping):
            return {"type": "pong", "tick": self.session.world.tick}
        if isinstance(msg, Ask):
            return self._ask(conn, msg)
        return {"type": "error", "message": "already authenticated"}

    def _ask(self, conn: Connection, msg: Ask) -> dict[str, Any]:
        """An interview through the same owner as ``/ask``: ``asked`` now, ``answer`` (the
        interview, as ``GET /api/interviews/{id}`` shows it) when it ends."""
        try:
            interview = self.session.talk.ask(
                msg.agent, msg.question, remember=msg.remember, source="remote",
                listener=lambda done: conn.send({"type": "answer", **done.to_dict()}))
        except ValueError as exc:  # a TalkError (talk sits above this layer): why not taken
            raise ProtocolError(f"ask: {exc}") from None
        return {"type": "asked", "interview": interview.id, "agent": msg.agent}

    async def _spawn(self, conn: Connection, msg: Spawn) -> dict[str, Any]:
        if not AGENT_NAME.fullmatch(msg.name):
            raise ProtocolError(f"spawn: {msg.name[:40]!r} is not a usable name: 1-24 "
                                "letters, digits, _ ' or -, starting with a letter")
        held = self.brains.held(conn)
        if held >= self.cfg.max_agents_per_client:
            raise ProtocolError(f"spawn: you hold {held} agents (counting those being "
                                "spawned, and those spawned from your address that still "
                                "live), the most remote.max_agents_per_client allows")
        too_many = self.brains.spawn_refusal(conn)
        if too_many is not None:
            raise ProtocolError(f"spawn: {too_many}")
        words = ["/spawn", "agent", msg.name]
        if msg.x is not None:
            words += [str(msg.x), str(msg.y)]
        if msg.personality is not None:
            words.append(f"personality={msg.personality}")
        words.append("brain=remote")
        reply = await self.console.execute(shlex.join(words))
        if not self.console.last_ok:
            raise ProtocolError("spawn: " + " ".join(reply).removeprefix("error: "))
        self.brains.expect_spawn(conn, msg.name, msg.every_ticks)
        self.brains.spawned_now(conn)
        return {"type": "spawning", "name": msg.name,
                "reply": " ".join(reply)}
