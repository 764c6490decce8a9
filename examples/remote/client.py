"""A client for Agent World's ``/agents`` WebSocket: play agents of a running world from
your own program (docs/agents.md, "Agents in any language").

It needs only aiohttp. Use it as a library::

    from client import AgentClient, forager

    async with AgentClient("ws://127.0.0.1:8765/agents", token) as client:
        await client.spawn("Zed")            # or: await client.claim(12)
        await client.run(forager)            # until the connection closes or stop()

or from the command line, playing the simple forager below::

    python examples/remote/client.py --url ws://127.0.0.1:8765/agents --token TOKEN \\
        --spawn Zed --spawn Ida --claim 12 --every-ticks 10

(the token may also come from the environment variable ``AGENT_WORLD_TOKEN``; without
either, it is read from the file the world keeps it in, ``web-PORT.json`` in the runtime
folder: ``$AGENT_WORLD_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/agent-world``, else
``~/.local/share/agent-world/runtime``).

How it works: every message is one JSON object with a ``type``. After the token is
accepted the server says ``welcome``; the client claims agents (``claim``) or spawns new ones
(``spawn``). Whenever one of its agents should decide, the server sends ``observe`` with a
request id and the agent's observation; the client answers ``decide`` with that request id
and a decision (``{"action": NAME, "args": {...}, "reasoning": "..."}`` or a list of up to
``max_actions`` of them), which the world applies at its next tick. An answer later than
``deadline_ms`` is ``expired`` (the agent used its built-in brain for that decision); an
invalid one is ``rejected`` with the reason. ``python main.py schema --part actions`` lists
the actions and their arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import logging
import os
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp

__all__ = ["FOOD", "AgentClient", "Answer", "ClientStats", "Disconnected", "RemoteError",
           "forager", "main"]

log = logging.getLogger("agent_world_client")

Message = dict[str, Any]
Answer = Message | list[Message] | None  # a decision, a plan of them, or None: no answer
Decide = Callable[[Message], Answer | Awaitable[Answer]]

FOOD = ("berries", "apple", "bread", "meat")  # the world's food, by kind
HUNGRY = 40.0  # hunger (0 fed .. 100 starving) at which the forager eats what it carries
REPLY_TIMEOUT_S = 10.0
DEFAULT_URL = "ws://127.0.0.1:8765/agents"
TOKEN_ENV = "AGENT_WORLD_TOKEN"


class RemoteError(Exception):
    """The server refused something (the text is its ``error`` message)."""


class Disconnected(RemoteError):
    """The connection closed (``code`` is the WebSocket close code, when there was one)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ClientStats:
    """What happened on one connection, counted."""

    observed: int = 0  # observe messages received
    decided: int = 0  # decide messages sent
    skipped: int = 0  # observations left unanswered (decide returned None, or too late)
    accepted: int = 0
    rejected: int = 0
    expired: int = 0
    released: int = 0  # agents let go (by us, or because they died)
    errors: int = 0  # error messages from the server
    decide_failures: int = 0  # the decide function raised


@dataclass
class _Waiter:
    """A reply a request waits for. The server answers a connection's messages in order, so
    an ``error`` is the reply of the oldest request waiting for an immediate answer; a
    ``later`` waiter (a spawned agent's claim, made at the next tick) takes only an error
    about a claim, and only when no immediate one waits."""

    accepts: Callable[[Message], bool]
    future: asyncio.Future[Message]
    later: bool = False

    def takes(self, msg: Message) -> bool:
        if self.future.done():
            return False
        if msg.get("type") != "error":
            return self.accepts(msg)
        return not self.later or str(msg.get("message", "")).startswith("claim:")


@dataclass
class _Bucket:
    """Our own allowance of messages per second, so the server never has to cut us off."""

    rate: float = 10.0
    allowance: float = 10.0
    at: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def take(self) -> None:
        async with self.lock:
            loop = asyncio.get_running_loop()
            while True:
                now = loop.time()
                self.allowance = min(self.rate, self.allowance + (now - self.at) * self.rate)
                self.at = now
                if self.allowance >= 1:
                    self.allowance -= 1
                    return
                await asyncio.sleep((1 - self.allowance) / self.rate)


class AgentClient:
    """One connection to a world's ``/agents``: claim or spawn agents, then ``run`` a decide
    function answering their observations.

    ``auth="header"`` sends the token in the ``Authorization`` header when connecting;
    ``auth="message"`` sends it as the first message (what a browser must do). A
    ``session`` may be given (it is then not closed here)."""

    def __init__(self, url: str, token: str, *, auth: Literal["header", "message"] = "header",
                 session: aiohttp.ClientSession | None = None,
                 reply_timeout: float = REPLY_TIMEOUT_S) -> None:
        self.url = url
        self.token = token
        self.auth = auth
        self.reply_timeout = reply_timeout
        self.welcome: Message = {}
        self.agents: dict[int, str] = {}  # agents we play: id -> name
        self.stats = ClientStats()
        self.errors: deque[str] = deque(maxlen=20)  # the server's latest error messages
        self.rejections: deque[Message] = deque(maxlen=20)  # the latest rejected answers
        self.close_code: int | None = None  # the WebSocket close code, once closed
        self._session = session
        self._own_session = session is None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiters: list[_Waiter] = []
        self._inbox: asyncio.Queue[Message | None] = asyncio.Queue()
        self._expired: set[tuple[int, int]] = set()  # (agent, request) given up on
        self._bucket = _Bucket()
        self._stop = False
        self._closed = False

    # -- connecting ---------------------------------------------------------------------------

    async def __aenter__(self) -> AgentClient:
        await self.connect()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def connect(self) -> Message:
        """Connect and authenticate; the server's ``welcome``. RemoteError if the server
        refuses (a wrong token, no external agents on this server) or says nothing in
        ``reply_timeout``; the connection and our own session are closed again then."""
        if self._session is None:
            self._session = aiohttp.ClientSession()
        try:
            return await self._connect(self._session)
        except BaseException:
            # ``async with`` never reaches __aexit__ when __aenter__ fails: close here, or
            # the session is left for the garbage collector ("Unclosed client session").
            await self.close()
            raise

    async def _connect(self, session: aiohttp.ClientSession) -> Message:
        headers = {"Authorization": f"Bearer {self.token}"} if self.auth == "header" else {}
        try:
            ws = await session.ws_connect(self.url, headers=headers, autoping=True)
        except aiohttp.WSServerHandshakeError as exc:
            raise RemoteError(f"{self.url} refused the connection: {exc.status} "
                              f"{exc.message}") from None
        self._ws = ws
        if self.auth == "message":
            await ws.send_str(json.dumps({"type": "auth", "token": self.token}))
        try:
            first = await ws.receive(timeout=self.reply_timeout)
        except TimeoutError:
            raise Disconnected(f"{self.url} said nothing within {self.reply_timeout:g} s of "
                               "connecting (no welcome, no error); is it a world's /agents "
                               "address?") from None
        if first.type != aiohttp.WSMsgType.TEXT:
            raise Disconnected(f"closed before the welcome ({first.type.name})", ws.close_code)
        welcome: Message = json.loads(first.data)
        if welcome.get("type") != "welcome":
            reason = str(welcome.get("message", welcome))
            with contextlib.suppress(asyncio.TimeoutError):
                await ws.receive(timeout=self.reply_timeout)  # the close that follows
            self.close_code = ws.close_code
            raise Disconnected(reason, ws.close_code)
        self.welcome = welcome
        rate = float(welcome.get("messages_per_s", 10))
        self._bucket = _Bucket(rate=rate, allowance=rate,
                               at=asyncio.get_running_loop().time())
        self._reader = asyncio.create_task(self._read(ws), name="agent-client-reader")
        log.info("connected to world %r at tick %s as %s", welcome.get("world"),
                 welcome.get("tick"), welcome.get("client"))
        return welcome

    async def close(self) -> None:
        """Close the connection (our agents go back to their built-in brains)."""
        self._closed = True
        self.stop()
        if self._ws is not None and not self._ws.closed:
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._ws is not None and self.close_code is None:
            self.close_code = self._ws.close_code
        if self._own_session and self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def closed(self) -> bool:
        return self._closed or self._ws is None or self._ws.closed

    # -- requests -----------------------------------------------------------------------------

    async def claim(self, agent: int, every_ticks: int | None = None) -> Message:
        """Play agent ``agent`` (a living built-in one); the server's ``claimed`` message.
        ``every_ticks`` asks for an observation at least that often."""
        msg: Message = {"type": "claim", "agent": agent}
        if every_ticks is not None:
            msg["every_ticks"] = every_ticks
        return await self._request(
            msg, lambda m: m.get("type") == "claimed" and m.get("agent") == agent)

    async def spawn(self, name: str, x: int | None = None, y: int | None = None,
                    personality: str | None = None, every_ticks: int | None = None,
                    *, wait_s: float | None = 60.0) -> int:
        """Spawn a new agent for us to play; its id, once the world's next tick made it
        (up to ``wait_s`` seconds; None: no limit. A paused world makes nothing)."""
        msg: Message = {"type": "spawn", "name": name}
        if x is not None and y is not None:
            msg.update(x=x, y=y)
        if personality is not None:
            msg["personality"] = personality
        if every_ticks is not None:
            msg["every_ticks"] = every_ticks
        lower = name.lower()
        loop = asyncio.get_running_loop()
        spawning = _Waiter(lambda m: m.get("type") == "spawning"
                           and str(m.get("name", "")).lower() == lower, loop.create_future())
        claimed = _Waiter(lambda m: m.get("type") == "claimed"
                          and str(m.get("name", "")).lower() == lower, loop.create_future(),
                          later=True)
        self._waiters += [spawning, claimed]  # both before sending: in the order they come
        try:
            await self._send(msg)
            self._check(await asyncio.wait_for(spawning.future, self.reply_timeout))
            reply = self._check(await asyncio.wait_for(claimed.future, wait_s))
        finally:
            self._forget(spawning, claimed)
        return int(reply["agent"])

    async def release(self, agent: int) -> None:
        """Stop playing ``agent`` (it goes back to its built-in brain)."""
        await self._request({"type": "release", "agent": agent},
                            lambda m: m.get("type") == "released" and m.get("agent") == agent)

    async def ping(self) -> int:
        """The world's tick, asked of the server."""
        reply = await self._request({"type": "ping"}, lambda m: m.get("type") == "pong")
        return int(reply["tick"])

    async def _request(self, msg: Message, accepts: Callable[[Message], bool]) -> Message:
        waiter = _Waiter(accepts, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        try:
            await self._send(msg)
            return self._check(await asyncio.wait_for(waiter.future, self.reply_timeout))
        finally:
            self._forget(waiter)

    def _forget(self, *waiters: _Waiter) -> None:
        for waiter in waiters:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            waiter.future.cancel()

    @staticmethod
    def _check(reply: Message) -> Message:
        if reply.get("type") == "error":
            raise RemoteError(str(reply.get("message")))
        return reply

    async def _send(self, msg: Message) -> None:
        if self._ws is None or self._ws.closed:
            raise Disconnected("not connected", self.close_code)
        await self._bucket.take()
        await self._ws.send_str(json.dumps(msg))

    # -- playing ------------------------------------------------------------------------------

    async def run(self, decide: Decide, *, max_decisions: int | None = None,
                  stop_without_agents: bool = False) -> None:
        """Answer every observation with ``decide(message)`` (a function or a coroutine
        function) until the connection closes, ``stop()`` is called, ``max_decisions``
        answers were sent, or (``stop_without_agents``) we play no agent any more.

        ``decide`` gets the whole ``observe`` message (``agent``, ``tick``, ``reasons``,
        ``observation``, ``events``) and returns a decision, a list of them, or None to
        leave this one to the agent's built-in brain. One that raises is logged and skipped.
        Answers go one at a time, in the order observations came: keep ``decide`` well
        within ``deadline_ms``."""
        if self._ws is None:
            raise RemoteError("connect() first")
        self._stop = False
        while not self._stop:
            if stop_without_agents and not self.agents:
                log.info("no agent left to play")
                return
            msg = await self._inbox.get()
            if msg is None:
                if self.closed:
                    return
                continue
            if msg.get("type") == "released":
                continue
            await self._answer(decide, msg)
            if max_decisions is not None and self.stats.decided >= max_decisions:
                # The server answers in order: once the pong is back, so are the replies
                # to our decisions (accepted or rejected).
                with contextlib.suppress(RemoteError, TimeoutError):
                    await self.ping()
                return

    def stop(self) -> None:
        """Make ``run`` return (after the decision under way, if any)."""
        self._stop = True
        self._inbox.put_nowait(None)

    async def _answer(self, decide: Decide, msg: Message) -> None:
        agent, request = int(msg["agent"]), int(msg["request"])
        try:
            answer = decide(msg)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception:
            self.stats.decide_failures += 1
            log.exception("decide failed for agent #%s (request %s)", agent, request)
            return
        if answer is None:
            self.stats.skipped += 1
            return
        if (agent, request) in self._expired or agent not in self.agents:
            self.stats.skipped += 1  # too late, or the agent is gone: no use sending it
            log.info("dropped the answer to request %s of #%s: too late", request, agent)
            return
        try:
            await self._send({"type": "decide", "agent": agent, "request": request,
                              "decision": answer})
        except (Disconnected, ConnectionError) as exc:
            log.warning("could not answer request %s of #%s: %s", request, agent, exc)
            return
        self.stats.decided += 1

    # -- what comes in ------------------------------------------------------------------------

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        try:
            async for frame in ws:
                if frame.type != aiohttp.WSMsgType.TEXT:
                    log.warning("ignored a %s frame from the server", frame.type.name)
                    continue
                try:
                    msg = json.loads(frame.data)
                except ValueError:
                    log.warning("the server sent something that is not JSON: %.80s",
                                frame.data)
                    continue
                if isinstance(msg, dict):
                    self._on_message(msg)
        finally:
            self.close_code = ws.close_code
            gone = Disconnected(f"the connection closed (code {ws.close_code})",
                                ws.close_code)
            for waiter in self._waiters:
                if not waiter.future.done():
                    waiter.future.set_exception(gone)
            self._waiters.clear()
            self._inbox.put_nowait(None)
            level = logging.INFO if ws.close_code in (None, 1000, 1001) else logging.WARNING
            log.log(level, "disconnected (code %s)%s", ws.close_code,
                    f": {self.errors[-1]}" if self.errors else "")

    def _on_message(self, msg: Message) -> None:
        kind = msg.get("type")
        stats = self.stats
        if kind == "observe":
            stats.observed += 1
            self._inbox.put_nowait(msg)
            return
        if kind == "claimed":
            self.agents[int(msg["agent"])] = str(msg.get("name", ""))
            log.info("playing %s#%s (observed at least every %s ticks)", msg.get("name"),
                     msg.get("agent"), msg.get("every_ticks"))
        elif kind == "accepted":
            stats.accepted += 1
        elif kind == "rejected":
            stats.rejected += 1
            self.rejections.append(msg)
            log.warning("answer to request %s of #%s rejected: %s", msg.get("request"),
                        msg.get("agent"), msg.get("reason"))
        elif kind == "expired":
            stats.expired += 1
            self._expired.add((int(msg["agent"]), int(msg["request"])))
            log.warning("request %s of #%s expired: %s", msg.get("request"), msg.get("agent"),
                        msg.get("reason"))
        elif kind == "released":
            stats.released += 1
            name = self.agents.pop(int(msg["agent"]), "")
            log.info("released %s#%s: %s", name, msg.get("agent"), msg.get("reason"))
            self._inbox.put_nowait(msg)
        elif kind == "error":
            stats.errors += 1
            self.errors.append(str(msg.get("message")))
            log.warning("server error: %s", msg.get("message"))
        waiting = sorted(self._waiters, key=lambda w: w.later)  # immediate replies first
        taker = next((w for w in waiting if w.takes(msg)), None)
        if taker is not None:
            taker.future.set_result(msg)
            self._waiters.remove(taker)


# -- a simple player ---------------------------------------------------------------------------


def forager(message: Message) -> Answer:
    """Eat when hungry and carrying food; else fetch the nearest food in sight; else wander."""
    obs = message["observation"]
    me = obs["me"]
    carried = [kind for kind in FOOD if me["items"].get(kind, 0) > 0]
    if me["hunger"] >= HUNGRY and carried:
        return {"action": "eat", "args": {"item": carried[0]},
                "reasoning": f"hungry ({me['hunger']:.0f}) and carrying {carried[0]}"}
    food = [item for item in obs["items"] if item["kind"] in FOOD]
    if food:
        nearest = min(food, key=lambda item: (item["distance"], item["id"]))
        return {"action": "pickup", "args": {"target": nearest["id"]},
                "reasoning": f"{nearest['kind']} {nearest['distance']} tiles away"}
    return {"action": "wander", "args": {"ticks": 20}, "reasoning": "no food in sight"}


def describe(answer: Answer) -> str:
    """``pickup(target=36) — apple 4 tiles away`` for a line of output."""
    steps = answer if isinstance(answer, list) else [answer] if answer else []
    parts = []
    for step in steps:
        args = ", ".join(f"{k}={v}" for k, v in (step.get("args") or {}).items())
        text = f"{step.get('action')}({args})"
        if step.get("reasoning"):
            text += f" — {step['reasoning']}"
        parts.append(text)
    return "; ".join(parts) or "nothing"


def _printing(decide: Decide, names: dict[int, str]) -> Decide:
    async def wrapped(message: Message) -> Answer:
        answer = decide(message)
        if inspect.isawaitable(answer):
            answer = await answer
        agent = message["agent"]
        print(f"t={message['tick']} {names.get(agent, '')}#{agent}: {describe(answer)}",
              flush=True)
        return answer
    return wrapped


# -- the command line --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Play agents of a running Agent World over its /agents WebSocket with a "
                    "simple forager (eat when hungry, fetch food in sight, else wander).")
    parser.add_argument("--url", default=os.environ.get("AGENT_WORLD_URL", DEFAULT_URL),
                        help=f"the world's /agents WebSocket (default {DEFAULT_URL})")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV),
                        help=f"the access token (default: ${TOKEN_ENV})")
    parser.add_argument("--spawn", action="append", default=[], metavar="NAME",
                        help="spawn a new agent with this name and play it (repeatable)")
    parser.add_argument("--claim", action="append", default=[], type=int, metavar="ID",
                        help="play this living built-in agent (repeatable)")
    parser.add_argument("--every-ticks", type=int, default=None, metavar="N",
                        help="ask for an observation at least every N ticks")
    parser.add_argument("--max-decisions", type=int, default=None, metavar="N",
                        help="stop after answering N observations")
    parser.add_argument("--auth", choices=("header", "message"), default="header",
                        help="send the token as a header (default) or as the first message")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    return parser


async def play(url: str, token: str, *, spawn: Iterable[str] = (), claim: Iterable[int] = (),
               every_ticks: int | None = None, max_decisions: int | None = None,
               auth: Literal["header", "message"] = "header",
               decide: Decide = forager) -> AgentClient:
    """Connect, take the agents and play them with ``decide`` until the connection closes,
    ``max_decisions`` were made or no agent is left; the client (closed), for its figures."""
    client = AgentClient(url, token, auth=auth)
    async with client:
        for agent in claim:
            await client.claim(agent, every_ticks)
        for name in spawn:
            await client.spawn(name, every_ticks=every_ticks)
        await client.run(_printing(decide, client.agents), max_decisions=max_decisions,
                         stop_without_agents=True)
    return client


def token_file(url: str) -> Path:
    """Where a world serving ``url`` keeps the token it made (its ``web-PORT.json``)."""
    folder = os.environ.get("AGENT_WORLD_RUNTIME_DIR")
    if folder:
        base = Path(folder).expanduser()
    elif os.environ.get("XDG_RUNTIME_DIR"):
        base = Path(os.environ["XDG_RUNTIME_DIR"]) / "agent-world"
    else:
        base = Path.home() / ".local" / "share" / "agent-world" / "runtime"
    return base / f"web-{urlsplit(url).port or 80}.json"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(message)s")
    if not args.token:
        kept = token_file(args.url)
        try:
            args.token = json.loads(kept.read_text(encoding="utf-8"))["token"]
        except (OSError, ValueError, KeyError, TypeError):
            print(f"error: give --token TOKEN (or set {TOKEN_ENV}); a world that made its "
                  f"own keeps it in {kept}, which cannot be read", file=sys.stderr)
            return 2
    if not args.spawn and not args.claim:
        print("error: nothing to play: give --spawn NAME or --claim ID", file=sys.stderr)
        return 2
    try:
        client = asyncio.run(play(args.url, args.token, spawn=args.spawn, claim=args.claim,
                                  every_ticks=args.every_ticks,
                                  max_decisions=args.max_decisions, auth=args.auth))
    except KeyboardInterrupt:
        return 130
    except (RemoteError, aiohttp.ClientError, OSError, TimeoutError) as exc:
        # Some of these carry no message (a bare TimeoutError): name the kind then.
        print(f"error: {str(exc) or type(exc).__name__}", file=sys.stderr)
        return 1
    s = client.stats
    print(f"done: {s.decided} decisions sent, {s.accepted} accepted, {s.rejected} rejected, "
          f"{s.expired} expired (connection closed with code {client.close_code})",
          flush=True)
    return 0 if client.close_code in (None, 1000, 1001) else 1


if __name__ == "__main__":
    sys.exit(main())
