"""Agents played over ``/agents`` (the conformance test of the protocol): a real server on a
loopback port, real aiohttp WebSocket clients, the example clients (Python, and Node when it
has a WebSocket) as real programs. Authentication, every kind of bad message, flooding,
claims and spawns, observe -> decide -> a logged plan input, deadlines, disconnects and
deaths, the observation rate, and a replay that needs no client.

The world is paused and stepped by the tests. To know that everything the server sent after
a tick has arrived, a test sends ``ping`` and reads up to the ``pong``: the server answers a
connection's messages in order, after what the tick queued (``sync``), so no test waits on
the wall clock except where a deadline is the point (a small ``remote.deadline_ms``)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import importlib.util
import itertools
import os
import shutil
import subprocess
import sys
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from agent_world.cli.replay import run_replay
from agent_world.commands.dispatch import Console
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.decisions.pipeline import TRIGGER_CHECK_TICKS
from agent_world.persistence import open_world
from agent_world.remote import endpoint
from agent_world.types import ENTITY_KEYS
from tests.persistence_helpers import records
from tests.web_helpers import Served, served, web_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "remote"
TEXT = aiohttp.WSMsgType.TEXT
Msg = dict[str, Any]


def remote_config(tmp_path: Path, *, world: dict[str, Any] | None = None,
                  persistence: dict[str, Any] | None = None, **remote: Any) -> Config:
    """A served world's config; a generous message rate unless a test is about flooding
    (every ``sync`` is a ping)."""
    cfg = web_config(tmp_path, world=world).replace(
        remote={"messages_per_s": 10_000, **remote})
    return cfg.replace(persistence=persistence) if persistence else cfg


def ws_url(s: Served) -> str:
    return s.url.replace("http://", "ws://", 1) + "/agents"


def bearer(s: Served, token: str | None = None) -> dict[str, str]:
    assert s.server.agents is not None
    return {"Authorization": f"Bearer {token or s.server.agents.token}"}


async def connect(s: Served) -> tuple[aiohttp.ClientWebSocketResponse, Msg]:
    """A client authenticated with the header, and its welcome."""
    ws = await s.http.ws_connect(ws_url(s), headers=bearer(s))
    welcome = await recv(ws)
    assert welcome["type"] == "welcome", welcome
    return ws, welcome


async def send(ws: aiohttp.ClientWebSocketResponse, message: Any) -> None:
    await ws.send_str(message if isinstance(message, str) else orjson.dumps(message).decode())


async def recv(ws: aiohttp.ClientWebSocketResponse) -> Msg:
    msg = await ws.receive(timeout=10)
    assert msg.type == TEXT, (msg.type, msg.data, ws.close_code)
    out: Msg = orjson.loads(msg.data)
    return out


async def ask(ws: aiohttp.ClientWebSocketResponse, message: Any) -> Msg:
    """Send one message and read the server's next one (its reply)."""
    await send(ws, message)
    return await recv(ws)


# What ``step_until`` read past the message it looked for, for the next ``sync``.
BACKLOG: weakref.WeakKeyDictionary[aiohttp.ClientWebSocketResponse, list[Msg]] = \
    weakref.WeakKeyDictionary()


async def sync(ws: aiohttp.ClientWebSocketResponse) -> list[Msg]:
    """Everything the server sent so far: a ping, then what comes up to its pong."""
    await send(ws, {"type": "ping"})
    got = BACKLOG.pop(ws, [])
    while (msg := await recv(ws))["type"] != "pong":
        got.append(msg)
    return got


async def closed_with(ws: aiohttp.ClientWebSocketResponse) -> tuple[list[Msg], int | None]:
    """Read until the server closes: the messages before it and the close code."""
    got = []
    while True:
        msg = await ws.receive(timeout=10)
        if msg.type == TEXT:
            got.append(orjson.loads(msg.data))
            continue
        assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), msg
        return got, ws.close_code


async def step_until(s: Served, ws: aiohttp.ClientWebSocketResponse,
                     found: Callable[[Msg], bool], *, ticks: int = 100,
                     pause: float = 0.0) -> tuple[Msg, list[Msg]]:
    """Tick one at a time (``pause`` seconds between ticks) until the server sends a message
    ``found`` accepts; that message and every one before it."""
    seen: list[Msg] = []
    for _ in range(ticks):
        await s.step(1)
        got = await sync(ws)
        for i, msg in enumerate(got):
            seen.append(msg)
            if found(msg):
                BACKLOG[ws] = got[i + 1:]
                return msg, seen
        if pause:
            await asyncio.sleep(pause)
    raise AssertionError(f"not sent within {ticks} ticks; got {[m['type'] for m in seen]}")


async def eventually(check: Callable[[], bool]) -> None:
    """The server's side of a close ends a moment after the client saw the close: wait for
    ``check`` (at most 5 s)."""
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    assert check()


def is_observe(agent: int | None = None) -> Callable[[Msg], bool]:
    return lambda m: m["type"] == "observe" and agent in (None, m["agent"])


def is_(kind: str) -> Callable[[Msg], bool]:
    return lambda m: m["type"] == kind


async def claim(ws: aiohttp.ClientWebSocketResponse, agent: int, **extra: Any) -> Msg:
    reply = await ask(ws, {"type": "claim", "agent": agent, **extra})
    assert reply["type"] == "claimed" and reply["agent"] == agent, reply
    return reply


def agent_ids(s: Served) -> list[int]:
    return [eid for eid, _row in s.world.agents()]


@contextlib.asynccontextmanager
async def world(tmp_path: Path, *, save: bool = False, **settings: Any
                ) -> AsyncIterator[Served]:
    async with served(tmp_path, save=save, config=remote_config(tmp_path, **settings)) as s:
        assert s.server.agents is not None and s.session.remote is s.server.agents.brains
        yield s


# -- authentication ----------------------------------------------------------------------------


def test_the_token_in_the_header_or_the_first_message_opens_the_door(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path) as s:
            await s.step(3)
            ws, welcome = await connect(s)
            assert welcome == {"type": "welcome", "protocol": 1, "client": "client-1",
                               "world": s.session.config.world.name, "tick": 3,
                               "tick_rate": s.session.config.world.tick_rate,
                               "deadline_ms": 2000, "max_actions": 8, "max_agents": 100,
                               "messages_per_s": 10_000}
            assert await ask(ws, {"type": "ping"}) == {"type": "pong", "tick": 3}
            by_message = await s.bare.ws_connect(ws_url(s))
            assert s.server.agents is not None
            hello = await ask(by_message, {"type": "auth", "token": s.server.agents.token})
            assert hello["type"] == "welcome" and hello["client"] == "client-2"
            assert (await ask(by_message, {"type": "ping"}))["type"] == "pong"
            assert s.session.remote.connections == 2 and len(s.session.remote.links) == 2
            assert s.session.remote.refused_auth == 0
            await ws.close()
            await by_message.close()
    asyncio.run(go())


@pytest.mark.parametrize(("how", "named"), [
    ("wrong token in the first message", "unauthorized: wrong token"),
    # A wrong header is refused at once (a user's client waited 10 s for nothing).
    ("wrong token in the header, then nothing", "wrong token (the Authorization header)"),
    ("nothing at all", "none came within"),
    ("a ping first", "the first message must be"),
    ("a claim first", "the first message must be"),
    ("not JSON first", "the first message must be"),
    ("a binary frame first", "the first message must be"),
])
def test_a_missing_or_wrong_token_is_refused_with_4401(
        tmp_path: Path, how: str, named: str) -> None:
    async def go() -> None:
        async with world(tmp_path, auth_within_s=0.2) as s:
            headers = bearer(s, "not-the-token") if "header" in how else {}
            ws = await s.bare.ws_connect(ws_url(s), headers=headers)
            if how.startswith("wrong token in the first"):
                await send(ws, {"type": "auth", "token": "not-the-token"})
            elif how == "a ping first":
                await send(ws, {"type": "ping"})
            elif how == "a claim first":
                await send(ws, {"type": "claim", "agent": agent_ids(s)[0]})
            elif how == "not JSON first":
                await send(ws, "hello?")
            elif how == "a binary frame first":
                await ws.send_bytes(b"\x00\x01")
            got, code = await closed_with(ws)
            assert code == endpoint.AUTH_CLOSE == 4401
            assert len(got) == 1 and got[0]["type"] == "error", got
            assert got[0]["message"].startswith("unauthorized: ")
            assert named in got[0]["message"], got
            remote = s.session.remote
            await eventually(lambda: remote.refused_auth == 1)
            assert remote.connections == 0 and not remote.links
            ok, _welcome = await connect(s)  # the server carries on
            await ok.close()
    asyncio.run(go())


def test_more_clients_than_max_clients_are_turned_away(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path, max_clients=1) as s:
            ws, _welcome = await connect(s)
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await s.http.ws_connect(ws_url(s), headers=bearer(s))
            assert refused.value.status == 503
            assert (await ask(ws, {"type": "ping"}))["type"] == "pong"
            await ws.close()
    asyncio.run(go())


# -- bad messages ------------------------------------------------------------------------------


@pytest.mark.parametrize(("message", "named"), [
    ("not json at all", "not JSON"),
    ("[1, 2, 3]", "a message is a JSON object"),
    ('"ping"', "a message is a JSON object"),
    ({"kind": "ping"}, "unknown message type None"),
    ({"type": "dance"}, "unknown message type 'dance'"),
    ({"type": "claim"}, "claim: 'agent' must be a whole number"),
    ({"type": "claim", "agent": "7"}, "claim: 'agent' must be a whole number"),
    ({"type": "claim", "agent": True}, "claim: 'agent' must be a whole number"),
    ({"type": "claim", "agent": 1.5}, "claim: 'agent' must be a whole number"),
    ({"type": "claim", "agent": -3}, "claim: 'agent' must be at least 0"),
    ({"type": "claim", "agent": 2**60}, "claim: 'agent' must be at most 9007199254740992"),
    ({"type": "claim", "agent": 1, "every_ticks": 0}, "'every_ticks' must be at least 1"),
    ({"type": "spawn"}, "spawn: 'name' must be a non-empty string"),
    ({"type": "spawn", "name": ""}, "spawn: 'name' must be a non-empty string"),
    ({"type": "spawn", "name": "Al", "x": 3}, "give both 'x' and 'y'"),
    ({"type": "spawn", "name": "Al", "personality": 4}, "'personality' must be a non-empty"),
    ({"type": "decide", "request": 1, "decision": {}}, "decide: 'agent' must be"),
    ({"type": "decide", "agent": 1, "decision": {}}, "decide: 'request' must be"),
    ({"type": "decide", "agent": 1, "request": 0, "decision": {}}, "'request' must be at "
                                                                   "least 1"),
    ({"type": "decide", "agent": 1, "request": 1}, "decide: 'decision' is missing"),
    ({"type": "release"}, "release: 'agent' must be a whole number"),
    ({"type": "release", "agent": 1}, "release: agent #1 is not yours"),
    ({"type": "auth", "token": "again"}, "already authenticated"),
    (b'{"type": "ping"}', "send JSON text messages"),
])
def test_a_bad_message_gets_an_error_naming_it_and_the_connection_carries_on(
        tmp_path: Path, message: Any, named: str) -> None:
    async def go() -> None:
        async with world(tmp_path) as s:
            ws, _welcome = await connect(s)
            if isinstance(message, bytes):
                await ws.send_bytes(message)
            else:
                await send(ws, message)
            reply = await recv(ws)
            assert reply["type"] == "error" and named in reply["message"], reply
            assert await ask(ws, {"type": "ping"}) == {"type": "pong", "tick": 0}
            assert not ws.closed and s.session.remote.links
            await ws.close()
    asyncio.run(go())


BAD_DECISIONS = [
    ("wander", "a decision must be an object, got str"),
    (42, "a decision must be an object, got int"),
    ({"args": {}}, "a decision needs a string 'action'"),
    ({"action": 5}, "a decision needs a string 'action'"),
    ({"action": "fly"}, "fly"),
    ({"action": "wander", "args": [1]}, "'args' must be an object"),
    ({"action": "wander", "args": {"ticks": "long"}}, "ticks"),
    ({"action": "wander", "args": {"speed": 3}}, "speed"),
    ({"action": "pickup", "args": {}}, "target"),
    ({"action": "rest", "reasoning": 7}, "'reasoning' must be text"),
    ([], "an empty plan"),
    ([{"action": "rest"}, "eat"], "plan[1]"),
    ([{"action": "idle"}] * 9, "a plan of 9 decisions; at most 8"),
]


def test_bad_decisions_are_rejected_with_the_reason_and_the_agent_falls_back(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path, min_gap_ticks=1) as s:
            ws, _welcome = await connect(s)
            mine, other = agent_ids(s)[:2]
            await claim(ws, mine, every_ticks=1)
            for decision, named in BAD_DECISIONS:
                observed, _ = await step_until(s, ws, is_observe(mine))
                reply = await ask(ws, {"type": "decide", "agent": mine,
                                       "request": observed["request"], "decision": decision})
                assert reply["type"] == "rejected" and reply["agent"] == mine, reply
                assert reply["request"] == observed["request"]
                assert named in reply["reason"], (decision, reply)
            # Another's agent, and a request that is not open: refused, nothing applied.
            observed, _ = await step_until(s, ws, is_observe(mine))
            assert s.session.remote.faults == {"invalid": len(BAD_DECISIONS)}
            assert s.session.remote.metrics.fallbacks == len(BAD_DECISIONS)
            rid = observed["request"]
            reply = await ask(ws, {"type": "decide", "agent": other, "request": rid,
                                   "decision": {"action": "rest"}})
            assert reply["type"] == "error" and f"agent #{other} is not yours" in \
                reply["message"]
            reply = await ask(ws, {"type": "decide", "agent": mine, "request": rid + 100,
                                   "decision": {"action": "rest"}})
            assert reply["type"] == "rejected" and "no open request" in reply["reason"]
            good = await ask(ws, {"type": "decide", "agent": mine, "request": rid,
                                  "decision": {"action": "rest", "args": {"ticks": 50}}})
            assert good["type"] == "accepted"
            stale = await ask(ws, {"type": "decide", "agent": mine, "request": rid,
                                   "decision": {"action": "rest"}})
            assert stale["type"] == "rejected" and "no open request" in stale["reason"]
            await s.step(1)
            intent = s.world.store.get(mine, c.Intent)
            assert intent.plan_source == "remote" and intent.action is not None
            assert intent.action.name == "rest"
            assert s.session.remote.metrics.applied == 1
            assert (await ask(ws, {"type": "ping"}))["type"] == "pong"
            await ws.close()
    asyncio.run(go())


def test_a_flooding_client_is_cut_off_while_the_world_and_others_carry_on(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path, messages_per_s=5) as s:
            calm, _welcome = await connect(s)
            flood, _welcome = await connect(s)
            for _ in range(40):
                await send(flood, {"type": "ping"})
            got, code = await closed_with(flood)
            assert code == endpoint.FLOOD_CLOSE == 4429
            errors = [m for m in got if m["type"] == "error"]
            assert len(errors) == 1 and "flooding: more than 5 messages a second" in \
                errors[0]["message"]
            assert s.session.remote.closed_flooding == 1
            await eventually(lambda: len(s.session.remote.links) == 1)
            await s.step(10)
            assert s.world.tick == 10
            assert await ask(calm, {"type": "ping"}) == {"type": "pong", "tick": 10}
            await calm.close()
    asyncio.run(go())


# -- claims and spawns -------------------------------------------------------------------------


def test_claim_observe_decide_applies_a_logged_plan(tmp_path: Path) -> None:
    name = remote_config(tmp_path).world.name
    applied: list[int] = []

    async def go() -> None:
        async with world(tmp_path, save=True) as s:
            ws, _welcome = await connect(s)
            eid = agent_ids(s)[0]
            claimed = await claim(ws, eid)
            assert claimed == {"type": "claimed", "agent": eid, "name": s.world.name_of(eid),
                               "tick": 0, "every_ticks": 50}
            assert s.session.remote.claims == {eid: next(iter(s.session.remote.links))}
            observed, before = await step_until(s, ws, is_observe(eid))
            assert not before[:-1]
            assert observed["tick"] == s.world.tick and observed["reasons"] == ["first thought"]
            assert observed["deadline_ms"] == 2000 and isinstance(observed["events"], list)
            obs = observed["observation"]
            assert set(obs) >= {"tick", "me", "agents", "items", "objects", "heard", "offers",
                                "prices", "memory", "custom"}
            me = obs["me"]
            assert me["id"] == eid and me["name"] == s.world.name_of(eid)
            pos = s.world.store.get(eid, c.Position)
            assert (me["x"], me["y"]) == (pos.x, pos.y)
            assert {"health", "hunger", "energy", "gold", "items"} <= set(me)
            reply = await ask(ws, {"type": "decide", "agent": eid,
                                   "request": observed["request"],
                                   "decision": [{"action": "wander", "args": {"ticks": 30},
                                                 "reasoning": "stretching my legs"},
                                                {"action": "rest"}]})
            assert reply == {"type": "accepted", "agent": eid, "request": observed["request"],
                             "applies_at_tick": s.world.tick + 1}
            await s.step(1)
            applied.append(s.world.tick)
            intent = s.world.store.get(eid, c.Intent)
            assert intent.plan_source == "remote"
            assert intent.action is not None and intent.action.name == "wander"
            assert [a.name for a in intent.plan] == ["rest"]
            stats = s.session.remote.stats()
            assert stats["decisions applied"] == 1 and stats["faults"] == "none"
            assert stats["agents"] == 1 and stats["observations"] == 1
            debug = s.session.remote.describe_entity(eid)
            assert debug[0].startswith("played by client-1") and "wander(ticks=30)" in debug[1]
            await ws.close()
    asyncio.run(go())
    plans = [r for r in records(tmp_path / "saves" / name)
             if r.get("kind") == "input" and r.get("type") == "plan"]
    assert len(plans) == 1, plans
    plan = plans[0]
    assert plan["source"] == "remote" and plan["tick"] == applied[0]
    assert plan["data"]["client"] == "client-1" and plan["data"]["request"] == 1
    assert plan["data"]["actions"] == [{"name": "wander", "args": {"ticks": 30}},
                                       {"name": "rest", "args": {}}]
    assert plan["data"]["thought"] == "stretching my legs"


def test_claims_that_cannot_be_had_are_refused(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path, max_agents_per_client=2) as s:
            s.world.inbox.submit("spawn", {"kind": "agent", "name": "Lex", "brain": "llm"},
                                 source="console")
            s.world.inbox.submit("spawn", {"kind": "agent", "name": "Uma",
                                           "brain": "forager"}, source="console")
            await s.step(1)
            lex, uma = s.world.population.find("Lex"), s.world.population.find("Uma")
            assert lex is not None and uma is not None
            ws, _welcome = await connect(s)
            rival, _welcome = await connect(s)
            a, b, d, e = agent_ids(s)[:4]
            for agent, named in ((999_999, "no living agent #999999"),
                                 (0, "no living agent #0"),
                                 (lex, f"agent #{lex} thinks with llm"),
                                 (uma, f"agent #{uma} thinks with forager")):
                reply = await ask(ws, {"type": "claim", "agent": agent})
                assert reply["type"] == "error" and named in reply["message"], reply
            await claim(ws, a)
            reply = await ask(ws, {"type": "claim", "agent": a})
            assert reply["type"] == "error" and "is yours already" in reply["message"]
            reply = await ask(rival, {"type": "claim", "agent": a})
            assert reply["type"] == "error" and "claimed by another client" in reply["message"]
            await claim(ws, b)
            reply = await ask(ws, {"type": "claim", "agent": d})
            assert reply["type"] == "error" and "you hold 2 agents" in reply["message"]
            assert "max_agents_per_client" in reply["message"]
            reply = await ask(ws, {"type": "spawn", "name": "Extra"})
            assert reply["type"] == "error" and "spawn: you hold 2 agents" in reply["message"]
            await claim(rival, d)
            await claim(rival, e)
            # A release frees a place; the agent can then be had by another client.
            released = await ask(ws, {"type": "release", "agent": b})
            assert released == {"type": "released", "agent": b, "reason": "you released it"}
            reply = await ask(ws, {"type": "release", "agent": b})
            assert reply["type"] == "error" and "is not yours" in reply["message"]
            reply = await ask(rival, {"type": "claim", "agent": b})
            assert "you hold 2 agents" in reply["message"]  # the rival is full too
            await ask(rival, {"type": "release", "agent": e})
            await claim(rival, b)
            remote = s.session.remote
            assert set(remote.claims) == {a, b, d}
            assert set(remote.minds) == {a, b, d}
            await ws.close()
            await rival.close()
    asyncio.run(go())


def test_spawn_makes_an_agent_claimed_at_the_next_tick(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path) as s:
            ws, _welcome = await connect(s)
            reply = await ask(ws, {"type": "spawn", "name": "Zed", "x": 5, "y": 6,
                                   "personality": "gatherer", "every_ticks": 10})
            assert reply["type"] == "spawning" and reply["name"] == "Zed", reply
            assert "brain=remote" in reply["reply"]
            assert s.world.population.find("Zed") is None  # not before the tick
            claimed, _ = await step_until(s, ws, is_("claimed"), ticks=1)
            zed = s.world.population.find("Zed")
            assert zed is not None
            assert claimed == {"type": "claimed", "agent": zed, "name": "Zed", "tick": 1,
                               "every_ticks": 10}
            row = s.world.store.get(zed, c.Agent)
            assert row.brain == "remote" and row.personality == "gatherer"
            pos = s.world.store.get(zed, c.Position)
            assert (pos.x, pos.y) == (5, 6)
            observed, _ = await step_until(s, ws, is_observe(zed))
            assert observed["observation"]["me"]["name"] == "Zed"
            for spawn, named in (({"name": "1zed"}, "is not a usable name"),
                                 ({"name": "Zed Two"}, "is not a usable name"),
                                 ({"name": "A" * 30}, "is not a usable name"),
                                 ({"name": "Zed"}, "an agent named 'Zed' already lives"),
                                 ({"name": "Ann", "x": 500, "y": 3}, "(500, 3) is off the map"),
                                 ({"name": "Ann", "personality": "nope"},
                                  "unknown personality 'nope'")):
                reply = await ask(ws, {"type": "spawn", **spawn})
                assert reply["type"] == "error", (spawn, reply)
                assert reply["message"].startswith("spawn: ") and named in reply["message"]
            assert s.world.population.find("Zed") == zed
            await ws.close()
    asyncio.run(go())


def test_spawning_and_releasing_cannot_fill_the_world(tmp_path: Path) -> None:
    # Issue 30: a client that spawned and released at its message allowance added agents
    # without limit (released agents stay), up to world.max_agents. They now count against
    # the client's address until they die, across reconnections.
    async def go() -> None:
        async with world(tmp_path, max_agents_per_client=3) as s:
            ws, _welcome = await connect(s)
            spawned = []
            for name in ("Ana", "Ben", "Cyd"):
                assert (await ask(ws, {"type": "spawn", "name": name}))["type"] == "spawning"
                claimed, _ = await step_until(s, ws, is_("claimed"), ticks=1)
                spawned.append(claimed["agent"])
                released = await ask(ws, {"type": "release", "agent": claimed["agent"]})
                assert released["type"] == "released"
            remote = s.session.remote
            assert sorted(remote.unclaimed_spawns("127.0.0.1")) == sorted(spawned)
            reply = await ask(ws, {"type": "spawn", "name": "Dee"})
            assert reply["type"] == "error" and "you hold 3 agents" in reply["message"]
            assert "spawned from your address that still live" in reply["message"]
            await ws.close()
            again, _welcome = await connect(s)  # a new connection is no way round it
            reply = await ask(again, {"type": "spawn", "name": "Dee"})
            assert reply["type"] == "error" and "you hold 3 agents" in reply["message"]
            builtin = next(e for e in agent_ids(s) if e not in spawned)
            reply = await ask(again, {"type": "claim", "agent": builtin})
            assert reply["type"] == "error" and "you hold 3 agents" in reply["message"]
            # Its own spawns it may take back; and a death frees a place.
            await claim(again, spawned[0])
            console = Console(s.session)
            try:
                await console.execute(f"/kill {s.world.name_of(spawned[1])}")
                assert console.last_ok
            finally:
                console.close()
            await s.step(1)
            await sync(again)  # (the claimed agent's first observation)
            assert (await ask(again, {"type": "spawn", "name": "Dee"}))["type"] == "spawning"
            await again.close()
    asyncio.run(go())


def test_an_address_spawns_at_most_its_hourly_share(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path, spawns_per_hour=2) as s:
            ws, _welcome = await connect(s)
            for name in ("Eve", "Fay"):
                assert (await ask(ws, {"type": "spawn", "name": name}))["type"] == "spawning"
            reply = await ask(ws, {"type": "spawn", "name": "Gus"})
            assert reply["type"] == "error", reply
            assert ("2 agents were spawned from 127.0.0.1 in the last hour, the most "
                    "remote.spawns_per_hour allows") in reply["message"]
            await ws.close()
    asyncio.run(go())


# -- deadlines, disconnects, deaths, rates -----------------------------------------------------


def test_an_unanswered_observation_expires_and_is_counted(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path, deadline_ms=20) as s:
            ws, welcome = await connect(s)
            assert welcome["deadline_ms"] == 20
            eid = agent_ids(s)[0]
            await claim(ws, eid)
            observed, _ = await step_until(s, ws, is_observe(eid))
            assert observed["deadline_ms"] == 20
            expired, _ = await step_until(s, ws, is_("expired"), pause=0.03)
            assert expired["agent"] == eid and expired["request"] == observed["request"]
            assert "no answer within 20 ms" in expired["reason"]
            remote = s.session.remote
            assert remote.faults == {"timeout": 1}
            stats = remote.stats()
            assert stats["faults"] == {"timeout": 1} and stats["fallbacks"] == 1
            assert stats["waiting for an answer"] == 0
            late = await ask(ws, {"type": "decide", "agent": eid,
                                  "request": observed["request"],
                                  "decision": {"action": "rest"}})
            assert late["type"] == "rejected" and "no open request" in late["reason"]
            assert remote.metrics.applied == 0
            assert "timeout" in remote.describe_entity(eid)[-1]
            await ws.close()
    asyncio.run(go())


def test_a_disconnect_releases_the_agents_and_the_world_runs_on(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path) as s:
            ws, _welcome = await connect(s)
            first, second = agent_ids(s)[:2]
            await claim(ws, first)
            await claim(ws, second)
            await step_until(s, ws, is_observe())  # requests open when it goes
            remote = s.session.remote
            assert remote.claims and remote.queue.in_flight
            await ws.close()
            await eventually(lambda: not remote.links)
            assert remote.claims == {} and remote.links == {} and remote.minds == {}
            assert remote.queue.in_flight == 0 and remote.stats()["waiting for an answer"] == 0
            assert s.server.agents is not None and not s.server.agents.connections
            tick = s.world.tick
            await s.step(30)
            assert s.world.tick == tick + 30
            assert s.world.alive(first) and s.world.alive(second)
            again, _welcome = await connect(s)
            await claim(again, first)  # free to be had again
            await again.close()
    asyncio.run(go())


def test_a_death_releases_the_agent(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path) as s:
            ws, _welcome = await connect(s)
            eid = agent_ids(s)[0]
            await claim(ws, eid)
            await step_until(s, ws, is_observe(eid))  # dies with a request open
            console = Console(s.session)
            try:
                reply = await console.execute(f"/kill {s.world.name_of(eid)}")
                assert console.last_ok, reply
            finally:
                console.close()
            released, _ = await step_until(s, ws, is_("released"), ticks=3)
            assert released == {"type": "released", "agent": eid, "reason": "died",
                                "tick": s.world.tick}
            assert not s.world.alive(eid)
            remote = s.session.remote
            assert remote.claims == {} and remote.minds == {} and remote.links
            refused = await ask(ws, {"type": "claim", "agent": eid})
            assert refused["type"] == "error" and "no living agent" in refused["message"]
            await s.step(5)
            assert await sync(ws) == []  # nothing more about it
            await ws.close()
    asyncio.run(go())


def test_a_client_interviews_any_agent_and_gets_the_answer_when_it_comes(
        tmp_path: Path) -> None:
    """``ask`` is /ask over the socket: the same owner, the same checks, the answer sent when
    the interview ends (here a built-in brain's plain answer) and logged as an input."""
    async def go() -> None:
        async with world(tmp_path) as s:
            ws, _welcome = await connect(s)
            eid = agent_ids(s)[0]
            asked = await ask(ws, {"type": "ask", "agent": eid, "question": "How are you?"})
            assert asked["type"] == "asked" and asked["agent"] == eid, asked
            answer, _ = await step_until(s, ws, is_("answer"), ticks=20)
            assert answer["id"] == asked["interview"] and answer["state"] == "answered"
            assert answer["source"] == "remote" and answer["answer"], answer
            assert s.session.talk.get(asked["interview"]) is not None
            for bad, why in (({"agent": eid, "question": ""}, "'question'"),
                             ({"agent": 999_999, "question": "Hi?"}, "not a living agent"),
                             ({"agent": eid, "question": "Hi?", "remember": "yes"},
                              "'remember' must be true or false")):
                refused = await ask(ws, {"type": "ask", **bad})
                assert refused["type"] == "error" and why in refused["message"], refused
            await ws.close()
    asyncio.run(go())


def test_every_ticks_sets_the_rate_of_observations(tmp_path: Path) -> None:
    async def go() -> None:
        # One agent alone: nothing but the interval makes it think.
        async with world(tmp_path, world={"starting_agents": 1}) as s:
            ws, _welcome = await connect(s)
            eid = agent_ids(s)[0]
            assert (await claim(ws, eid, every_ticks=10))["every_ticks"] == 10
            ticks = []
            for _ in range(60):
                await s.step(1)
                for msg in await sync(ws):
                    if msg["type"] == "observe":
                        ticks.append(msg["tick"])
                        assert msg["reasons"] == (["first thought"] if len(ticks) == 1
                                                  else ["interval"]), msg["reasons"]
                        reply = await ask(ws, {"type": "decide", "agent": eid,
                                               "request": msg["request"],
                                               "decision": {"action": "idle",
                                                            "args": {"ticks": 100}}})
                        assert reply["type"] == "accepted"
            assert len(ticks) >= 5, ticks
            gaps = [b - a for a, b in itertools.pairwise(ticks)]
            # The first comes at once; then the agent's slot of every TRIGGER_CHECK_TICKS.
            assert 10 <= gaps[0] < 10 + TRIGGER_CHECK_TICKS and set(gaps[1:]) == {10}, ticks
            # Faster than remote.min_gap_ticks is not given.
            await ask(ws, {"type": "release", "agent": eid})
            assert (await claim(ws, eid, every_ticks=2))["every_ticks"] == 5
            await ws.close()
    asyncio.run(go())


def test_a_replay_needs_no_client(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = remote_config(tmp_path, persistence={"hash_interval_ticks": 10})
    final: list[str] = []

    async def go() -> None:
        async with served(tmp_path, save=True, config=cfg) as s:
            ws, _welcome = await connect(s)
            claimed_agent = agent_ids(s)[0]
            await claim(ws, claimed_agent, every_ticks=5)
            await send(ws, {"type": "spawn", "name": "Rex", "every_ticks": 5})
            answered = 0
            events: list[tuple[int, Msg]] = []
            for n in range(120):
                await s.step(1)
                for msg in await sync(ws):
                    if msg["type"] == "observe":
                        events += [(msg["agent"], e) for e in msg["events"]]
                        me = msg["observation"]["me"]
                        decision = ({"action": "say", "args": {"text": f"tick {msg['tick']}"}}
                                    if n % 3 else
                                    {"action": "move_to",
                                     "args": {"x": (me["x"] + 3) % 32, "y": me["y"]}})
                        await send(ws, {"type": "decide", "agent": msg["agent"],
                                        "request": msg["request"], "decision": decision})
                        answered += 1
            assert answered >= 20
            # Each observation brings the events naming its agent since the last one.
            assert any(e["type"] == "say" and e["agent"] == agent for agent, e in events)
            assert all(agent in [e.get(k) for k in ENTITY_KEYS] for agent, e in events)
            await s.step(1)
            assert s.session.remote.metrics.applied == answered
            await ws.close()
            final.append(s.world.state_hash())
    asyncio.run(go())
    folder = tmp_path / "saves" / cfg.world.name
    plans = [r for r in records(folder) if r.get("kind") == "input" and r.get("type") == "plan"]
    assert len(plans) >= 20 and {p["source"] for p in plans} == {"remote"}
    capsys.readouterr()
    assert run_replay(folder, cfg, to=None, playback=None) == 0
    assert "OK" in capsys.readouterr().out
    resumed = open_world(cfg)
    try:
        assert resumed.world.state_hash() == final[0]
    finally:
        resumed.close()


# -- the example clients -----------------------------------------------------------------------


def example_client() -> ModuleType:
    spec = importlib.util.spec_from_file_location("remote_example_client",
                                                  EXAMPLES / "client.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_python_example_client_plays(tmp_path: Path) -> None:
    client_mod = example_client()

    async def go() -> None:
        async with world(tmp_path, world={"starting_agents": 4}) as s:
            assert s.server.agents is not None
            client = client_mod.AgentClient(ws_url(s), s.server.agents.token)
            async with client:
                assert client.welcome["type"] == "welcome"
                assert await client.ping() == 0
                builtin = agent_ids(s)[0]
                assert (await client.claim(builtin, every_ticks=5))["agent"] == builtin
                with pytest.raises(client_mod.RemoteError, match="is yours already"):
                    await client.claim(builtin)
                spawning = asyncio.create_task(client.spawn("Pyra", every_ticks=5))
                while not spawning.done():
                    await s.step(1)
                    await asyncio.sleep(0.01)
                pyra = spawning.result()
                assert pyra == s.world.population.find("Pyra")
                assert client.agents == {builtin: s.world.name_of(builtin), pyra: "Pyra"}
                with pytest.raises(client_mod.RemoteError, match="not a usable name"):
                    await client.spawn("9lives")
                decided: list[Msg] = []

                async def decide(message: Msg) -> Any:
                    decided.append(message)
                    return client_mod.forager(message)

                playing = asyncio.create_task(client.run(decide))
                for _ in range(300):
                    if client.stats.accepted >= 6:
                        break
                    await s.step(1)
                    await asyncio.sleep(0.01)
                client.stop()
                await asyncio.wait_for(playing, 5)
                await s.step(1)  # the last accepted decision applies
                assert s.session.remote.metrics.applied >= 6
                stats = client.stats
                assert stats.accepted >= 6 and stats.rejected == 0 and stats.errors == 2
                assert {m["agent"] for m in decided} == {builtin, pyra}
                await client.release(builtin)
                assert client.agents == {pyra: "Pyra"}
            assert client.closed
            remote = s.session.remote
            await eventually(lambda: not remote.links)
            assert remote.metrics.applied >= 6 and not remote.claims
    asyncio.run(go())


def test_the_example_foragers_choices() -> None:
    forager = example_client().forager

    def observe(hunger: float, items: dict[str, int], seen: list[Msg]) -> Msg:
        return {"observation": {"me": {"hunger": hunger, "items": items}, "items": seen}}

    apple = {"id": 7, "kind": "apple", "distance": 3}
    wood = {"id": 3, "kind": "wood", "distance": 1}
    meat = {"id": 9, "kind": "meat", "distance": 2}
    assert forager(observe(70, {"bread": 1}, [apple]))["action"] == "eat"
    assert forager(observe(70, {"bread": 1}, [apple]))["args"] == {"item": "bread"}
    assert forager(observe(10, {"bread": 1}, [wood, apple, meat]))["args"] == {"target": 9}
    assert forager(observe(70, {"wood": 2}, [wood]))["action"] == "wander"


def test_the_python_example_from_the_command_line(tmp_path: Path) -> None:
    async def go() -> None:
        async with world(tmp_path, world={"starting_agents": 3}) as s:
            assert s.server.agents is not None
            env = {**os.environ, "AGENT_WORLD_TOKEN": s.server.agents.token}
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(EXAMPLES / "client.py"), "--url", ws_url(s),
                "--spawn", "Clio", "--every-ticks", "5", "--max-decisions", "3",
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = await drive(s, proc)
            assert proc.returncode == 0, (out, err)
            lines = out.splitlines()
            decisions = [line for line in lines if line.startswith("t=")]
            assert len(decisions) == 3 and all("Clio#" in line for line in decisions)
            assert lines[-1].startswith("done: 3 decisions sent, 3 accepted, 0 rejected")
            assert s.session.remote.metrics.applied >= 2  # the last applies at the next tick

            # No token given: it is read from the file the world keeps it in.
            assert s.server.token_file is not None
            env = {k: v for k, v in os.environ.items() if k != "AGENT_WORLD_TOKEN"}
            env["AGENT_WORLD_RUNTIME_DIR"] = str(s.server.token_file.path.parent)
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(EXAMPLES / "client.py"), "--url", ws_url(s),
                "--spawn", "Tia", "--max-decisions", "1",
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = await drive(s, proc)
            assert proc.returncode == 0 and "done: 1 decisions sent" in out, (out, err)

            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(EXAMPLES / "client.py"), "--url", ws_url(s),
                "--token", "wrong", "--claim", "1", "--auth", "message",
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = await drive(s, proc)
            assert proc.returncode == 1 and "unauthorized: wrong token" in err, (out, err)

            # The token in the header (the default), wrong: one line naming it, the
            # session closed (no "Unclosed client session", no event-loop traceback).
            proc = await asyncio.create_subprocess_exec(
                sys.executable, str(EXAMPLES / "client.py"), "--url", ws_url(s),
                "--token", "wrong", "--spawn", "Nix",
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = await drive(s, proc)
            assert proc.returncode == 1, (out, err)
            assert err.splitlines() == [
                "error: unauthorized: wrong token (the Authorization header); use the token "
                "the world printed at start-up"], err
    asyncio.run(go())


def test_the_python_client_closes_its_session_when_nothing_answers(tmp_path: Path) -> None:
    # A server that accepts the WebSocket and says nothing: connect() gives up after its
    # reply timeout with a message, and leaves no session open.
    async def go() -> None:
        async def silent(request: web.Request) -> web.WebSocketResponse:
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            async for _msg in ws:
                pass
            return ws

        app = web.Application()
        app.router.add_get("/agents", silent)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        client_mod = example_client()
        client = client_mod.AgentClient(f"ws://127.0.0.1:{port}/agents", "t",
                                        reply_timeout=0.2)
        try:
            with pytest.raises(client_mod.Disconnected, match=r"said nothing within 0\.2 s"):
                async with client:
                    raise AssertionError("connected to a silent server")
            assert client._session is None and client.closed
        finally:
            await runner.cleanup()
    asyncio.run(go())


async def drive(s: Served, proc: asyncio.subprocess.Process, *, ticks: int = 1500
                ) -> tuple[str, str]:
    """Step the world while a client program plays, until it exits (killed if it does not
    within ``ticks``); its output."""
    for _ in range(ticks):
        if proc.returncode is not None:
            break
        await s.step(1)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 0.01)
    else:
        proc.kill()
    out, err = await proc.communicate()
    return out.decode(), err.decode()


def node_command() -> list[str]:
    """How to run Node with a global WebSocket here; skips the test if it cannot be."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    probe = "process.exit(typeof globalThis.WebSocket === 'function' ? 0 : 3)"
    for flags in ([], ["--experimental-websocket"]):
        done = subprocess.run([node, *flags, "-e", probe], capture_output=True, timeout=30,
                              check=False)
        if done.returncode == 0:
            return [node, *flags]
    pytest.skip("this Node has no WebSocket, even with --experimental-websocket "
                "(Node 22+ has it)")


def test_the_node_example_client_plays(tmp_path: Path) -> None:
    command = node_command()
    script = str(EXAMPLES / "node_client.mjs")

    async def go() -> None:
        async with world(tmp_path, world={"starting_agents": 3}) as s:
            assert s.server.agents is not None
            proc = await asyncio.create_subprocess_exec(
                *command, script, ws_url(s), s.server.agents.token, "Nod", "3",
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = await drive(s, proc)
            assert proc.returncode == 0, (out, err)
            nod = s.world.population.find("Nod")
            assert nod is not None and s.world.store.get(nod, c.Agent).brain == "remote"
            decisions = [line for line in out.splitlines() if line.startswith("t=")]
            assert len(decisions) == 3 and all(f"Nod#{nod}: " in d for d in decisions), out
            assert "3 decisions, 3 accepted" in out
            # Applied and counted while it was connected (the last may apply after it left).
            assert s.session.remote.metrics.applied >= 2
            await eventually(lambda: not s.session.remote.claims)  # let go when it closed

            proc = await asyncio.create_subprocess_exec(
                *command, script, ws_url(s), "wrong", "Nix",
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = await drive(s, proc)
            assert proc.returncode == 1 and "unauthorized: wrong token" in err, (out, err)
            assert "code 4401" in out
    asyncio.run(go())


def test_the_node_example_says_what_it_needs(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = str(EXAMPLES / "node_client.mjs")
    bare = subprocess.run([node, script, "ws://127.0.0.1:9/agents", "t", "N"],
                          capture_output=True, text=True, timeout=30, check=False)
    if "no global WebSocket" in bare.stderr:  # Node 20 and 21 without the flag
        assert bare.returncode == 2 and "Node 22+" in bare.stderr
        assert "--experimental-websocket" in bare.stderr
    usage = subprocess.run([*node_command(), script], capture_output=True, text=True,
                           timeout=30, check=False)
    assert usage.returncode == 2 and "usage: node node_client.mjs" in usage.stderr


def test_a_decision_holding_the_token_and_control_characters_leaks_nowhere(
        tmp_path: Path) -> None:
    """The default config (no LLM key, no web.token_env): the run's generated /agents token
    in a client's reasoning reaches no file of the save or the logs and no API read, and
    ESC, BEL, NUL and backspace never reach a log line or the operator's terminal."""
    hostile = "\x1b[2J\x1b[31mred\x07\x00\x08"
    async def go() -> str:
        async with world(tmp_path, save=True, min_gap_ticks=1) as s:
            assert s.server.agents is not None
            token = s.server.agents.token
            ws, _welcome = await connect(s)
            mine = agent_ids(s)[0]
            await claim(ws, mine, every_ticks=1)
            observed, _ = await step_until(s, ws, is_observe(mine))
            reply = await ask(ws, {"type": "decide", "agent": mine,
                                   "request": observed["request"], "decision": {
                                       "action": "rest", "args": {"ticks": 5},
                                       "reasoning": f"the key is {token} {hostile} ok"}})
            assert reply["type"] == "accepted", reply
            await s.step(3)
            events = (await s.get("/api/events?kind=input&limit=5000"))["events"]
            plans = [e for e in events if e["type"] == "plan" and e["data"].get("source")
                     == "remote"]
            assert plans and plans[-1]["data"]["thought"] == \
                "the key is [REDACTED] [2J [31mred ok"
            assert token not in orjson.dumps(events).decode()
            await ws.close()
            return token
    token = asyncio.run(go())
    written = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    texts = {path: (gzip.decompress(data) if path.name.endswith(".gz") else data)
             for path, data in written.items()}
    assert any(b"[REDACTED]" in text for text in texts.values())
    for path, text in texts.items():
        assert token.encode() not in text, path
        assert b"\x1b" not in text and b"\x07" not in text, path
