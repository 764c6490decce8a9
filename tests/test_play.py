"""People in the world (issue 33 items 5 and 6): taking control of an agent, ordering it with
the same actions and checks as any brain, talking to agents, giving it back (by hand, on
disconnect, when idle), one player per agent, and a replay of all of it that agrees."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from agent_world.app import Session
from agent_world.cli.replay import run_replay
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.persistence import open_world
from agent_world.userbrains.registry import load_brains
from agent_world.web.feed import PLAYED
from tests.persistence_helpers import records
from tests.web_helpers import served, web_config


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def small(seed: int = 4, agents: int = 8) -> World:
    return World.create(Config().replace(world={"size": [32, 32], "starting_agents": agents,
                                                "seed": seed}))


def step(world: World, *inputs: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    for kind, data in inputs:
        world.inbox.submit(kind, data, source="test")
    return world.step().events


def rejected(events: list[dict[str, Any]]) -> list[str]:
    return [str(e["reason"]) for e in events if e["type"] == "input_rejected"]


def free_tile_near(world: World, eid: int, dist: int = 3) -> tuple[int, int]:
    pos = world.store.get(eid, c.Position)
    for dx in range(dist, -dist - 1, -1):
        for dy in range(-dist, dist + 1):
            x, y = pos.x + dx, pos.y + dy
            if (abs(dx) + abs(dy) >= dist and world.terrain.in_bounds(x, y)
                    and not world.terrain.is_blocked(x, y)):
                return x, y
    raise AssertionError("no free tile near the agent")


# -- the core: inputs ---------------------------------------------------------------------------


def test_a_played_agent_does_only_its_players_orders_and_its_brain_is_paused() -> None:
    world = small()
    zed = world.agents()[0][0]
    assert "players" not in world.get_state()  # nobody plays: worlds hash as before
    events = step(world, ("play", {"agent": zed, "player": "ann"}))
    assert [e for e in events if e["type"] == "played"] == [
        {"type": "played", "agent": zed, "name": world.name_of(zed), "player": "ann"}]
    assert world.get_state()["players"] == {"seats": [[zed, "ann", 1]]}
    intent = world.store.get(zed, c.Intent)
    for _ in range(40):  # no order: its built-in brain does nothing for it
        world.step()
        assert intent.action is None
    x, y = free_tile_near(world, zed)
    step(world, ("act", {"agent": zed, "player": "ann",
                         "action": {"name": "move_to", "args": {"x": x, "y": y}}}))
    for _ in range(60):
        world.step()
    pos = world.store.get(zed, c.Position)
    assert (pos.x, pos.y) == (x, y)
    assert intent.action is None and intent.plan_source == "player"
    # Attacked, it does not fight back or flee: its instincts are its brain's, paused.
    other = world.agents()[1][0]
    world.store.get(zed, c.Combat).last_attacked = world.tick
    world.store.get(zed, c.Combat).last_attacker = other
    world.step()
    assert intent.action is None
    # Given back, its brain decides at once.
    events = step(world, ("release", {"agent": zed, "player": "ann", "reason": "released"}))
    assert any(e["type"] == "released" and e["reason"] == "released" for e in events)
    assert "players" not in world.get_state()
    assert intent.plan_source == "" and intent.since == world.tick  # it chose at once


def test_one_player_per_agent_and_other_plans_are_refused_with_the_players_name() -> None:
    world = small()
    zed = world.agents()[0][0]
    step(world, ("play", {"agent": zed, "player": "ann"}))
    label = world.label(zed)
    reasons = rejected(step(
        world, ("play", {"agent": zed, "player": "bob"}),
        ("act", {"agent": zed, "player": "bob", "action": {"name": "idle"}}),
        ("release", {"agent": zed, "player": "bob"}),
        ("plan", {"agent": zed, "source": "llm", "actions": [{"name": "idle"}]}),
        ("act", {"agent": zed, "player": "ann", "action": {"name": "fly"}}),
        ("play", {"agent": 99999, "player": "bob"}),
        ("play", {"agent": zed, "player": "no spaces"}),
        ("speak", {"name": "ann", "text": "", "x": 1, "y": 1})))
    assert reasons[0] == (f"{label} is played by ann (since tick 1); one player per agent: "
                          "wait until they release it")
    assert reasons[1] == reasons[0] and reasons[2] == reasons[0]
    assert reasons[3].startswith(f"{label} is played by ann: its brain is paused")
    assert reasons[4].startswith("invalid action: unknown action 'fly'")
    assert reasons[5] == "agent 99999 is not a living agent"
    assert "is not a usable name" in reasons[6]
    assert reasons[7] == "text must be 1 to 160 characters, got 0"
    # The same player asking again changes nothing; force takes it from whoever plays it.
    assert rejected(step(world, ("play", {"agent": zed, "player": "ann"}))) == []
    events = step(world, ("release", {"agent": zed, "player": "bob", "force": True,
                                      "reason": "released by bob"}))
    assert [e["player"] for e in events if e["type"] == "released"] == ["ann"]


def test_orders_pass_the_same_checks_as_a_brains_choice() -> None:
    world = small()
    zed = world.agents()[0][0]
    step(world, ("play", {"agent": zed, "player": "ann"}))
    failed = []
    for action in ({"name": "attack", "args": {"target": zed}},
                   {"name": "pickup", "args": {"target": 999_999}}):
        events = step(world, ("act", {"agent": zed, "player": "ann", "action": action}))
        failed += [(e["action"], e["reason"]) for e in events if e["type"] == "action_failed"]
    assert failed == [(f"attack(target={zed})", "cannot attack yourself"),
                      ("pickup(target=999999)", "#999999 does not exist")]


def test_a_person_is_heard_by_the_agents_in_range_and_the_one_spoken_to_knows() -> None:
    world = small(agents=12)
    zed = world.agents()[0][0]
    pos = world.store.get(zed, c.Position)
    radius = world.rules.hearing_radius
    near = {e for _d, e in world.agents_grid.near(pos.x, pos.y, radius)}
    events = step(world, ("speak", {"name": "ann", "text": "hello  there\n", "x": pos.x,
                                    "y": pos.y, "to": zed}))
    spoken = [e for e in events if e["type"] == "spoken"]
    assert spoken == [{"type": "spoken", "speaker": "ann", "text": "hello there", "x": pos.x,
                       "y": pos.y, "heard_by": len(near), "to": zed,
                       "to_name": world.name_of(zed)}]
    heard = world.store.get(zed, c.Perception).heard[-1]
    assert heard == {"tick": 1, "from": 0, "name": "ann", "text": "hello there",
                     "person": True, "to": zed}
    for eid, _row in world.agents():
        if eid not in near:
            assert all(h.get("name") != "ann" for h in world.store.get(eid, c.Perception).heard)
    # The decision layer's triggers count it as spoken to.
    from agent_world.decisions.mind import Mind, triggers

    mind = Mind(zed)
    mind.asked_tick = 0
    assert "spoken to" in triggers(world, mind, interval=10_000, source="llm")[0]


def test_the_dead_are_played_by_nobody() -> None:
    world = small()
    zed = world.agents()[0][0]
    step(world, ("play", {"agent": zed, "player": "ann"}))
    step(world, ("kill", {"target": zed}))
    assert world.players.is_empty() and "players" not in world.get_state()


# -- the session: commands, the desk -------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_console_plays_orders_talks_and_a_quiet_player_loses_the_agent(
        tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            desk = s.session.play
            clock = desk.clock = Clock()
            zed = s.world.agents()[0][0]
            reply = await s.command(f"/play {zed} as=ann")
            assert reply["reply"][0].startswith(f"ann plays {s.world.label(zed)} at tick 1")
            # Before the tick applies it, the seat is taken: a second player is refused now.
            body = await s.command(f"/play {zed} as=bob", status=409)
            assert (f"{s.world.label(zed)} is played by ann; one player per agent"
                    in body["reply"][0])
            await s.step()
            body = await s.command(f"/act {zed} wander as=bob", status=409)
            assert "is played by ann since tick 1" in body["reply"][0]
            body = await s.command(f"/act {zed} fly as=ann", status=400)
            assert "unknown action 'fly'" in body["reply"][0]
            body = await s.command(f"/act {zed} trade_offer target=3 give=apple:x as=ann",
                                   status=400)
            assert "must be a whole number" in body["reply"][0]
            await s.command(f"/act {zed} say text=\"hi all\" as=ann")
            await s.step()
            assert any(e.get("type") == "say" and e.get("agent") == zed
                       and e.get("text") == "hi all" for e in s.server.feed.ring)
            # /talk as its player: the agent speaks; as someone else: a person speaks.
            other = s.world.agents()[1][0]
            await s.command(f"/talk {zed} as=ann good day")
            await s.command(f"/talk {other} as=bob who are you")
            await s.step()
            ring = list(s.server.feed.ring)
            assert any(e.get("type") == "say" and e.get("text") == "good day" for e in ring)
            assert any(e.get("type") == "spoken" and e.get("speaker") == "bob"
                       and e.get("to") == other for e in ring)
            debug = await s.command(f"/debug {zed}")
            assert any("played by ann since tick 1" in line for line in debug["reply"])
            detail = await s.get(f"/api/agents/{zed}")
            assert detail["played_by"] == {"player": "ann", "since": 1}
            records = (await s.get("/api/entities?kind=agents"))["agents"]
            flags = {r[0]: r[4] for r in records}
            assert flags[zed] & PLAYED and not flags[other] & PLAYED
            # Idle past web.play_idle_s: the desk gives it back (a logged release input).
            clock.now += s.session.config.web.play_idle_s + 1
            await s.step(2)
            assert s.world.players.is_empty()
            released = [e for e in s.server.feed.ring if e.get("type") == "released"]
            assert released[-1]["reason"].startswith("no order for 300 s")
            assert desk.holds == {}
    run(go())


async def _hello(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    msg = await ws.receive_json(timeout=5)
    assert msg["t"] == "hello"
    return msg


def test_the_web_api_plays_and_a_closed_viewer_gives_the_agent_back(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            zed = s.world.agents()[0][0]
            url = s.url + f"/api/agents/{zed}"
            async with s.bare.post(url + "/play", json={}) as resp:
                assert resp.status == 401  # playing needs the token
            ws = await s.http.ws_connect(s.url + "/ws")
            hello = await _hello(ws)
            client = hello["client"]
            async with s.http.post(url + "/play", json={"player": "ann", "client": 999}) as r:
                assert r.status == 400 and "no connected feed client" in (await r.json())["error"]
            async with s.http.post(url + "/play", json={"player": "ann",
                                                        "client": client}) as r:
                body = await r.json()
                assert r.status == 200 and body["ok"] and body["player"] == "ann", body
            async with s.http.post(url + "/play", json={"player": "bob"}) as r:
                body = await r.json()
                assert r.status == 409 and "is played by ann" in body["reply"][0]
            await s.step()
            async with s.http.post(url + "/act", json={"player": "ann", "action": "defend",
                                                       "args": {}}) as r:
                assert r.status == 200, await r.json()
            async with s.http.post(url + "/act", json={"player": "ann", "action": "attack",
                                                       "args": {"target": "me"}}) as r:
                body = await r.json()
                assert r.status == 400 and "attack.target must be a whole number" in \
                    body["reply"][0]
            async with s.http.post(url + "/talk", json={"player": "ann", "text": ""}) as r:
                assert r.status == 400
            async with s.http.post(url + "/release", json={"player": "bob"}) as r:
                assert r.status == 409
            await s.step()
            assert s.world.players.player_of(zed) == "ann"
            await ws.close()
            for _ in range(50):  # the server notices the close
                if not s.server.clients:
                    break
                await asyncio.sleep(0.02)
            await s.step()
            assert s.world.players.is_empty()
            assert any(e.get("type") == "released" and e.get("reason") == "disconnected"
                       for e in s.server.feed.ring)
    run(go())


# -- replay ---------------------------------------------------------------------------------------


def test_a_played_session_replays_exactly(tmp_path: Path) -> None:
    config = web_config(tmp_path, world={"name": "played"}).replace(
        persistence={"hash_interval_ticks": 5, "snapshot_interval_ticks": 50})

    async def go() -> str:
        async with served(tmp_path, save=True, config=config) as s:
            zed, other = s.world.agents()[0][0], s.world.agents()[1][0]
            x, y = free_tile_near(s.world, zed, 4)
            await s.step(3)
            await s.command(f"/play {zed} as=ann")
            await s.step()
            await s.command(f"/act {zed} move_to x={x} y={y} as=ann")
            await s.command(f"/talk {other} as=bob hello you")
            await s.step(30)
            await s.command(f"/act {zed} say text=\"over here\" to={other} as=ann")
            await s.command(f"/act {zed} attack target={other} as=ann")
            await s.step(20)
            await s.command(f"/release {zed} as=ann")
            await s.step(20)
            s.session.loop.stop()
            return s.world.state_hash()

    final = run(go())
    folder = tmp_path / "saves" / "played"
    inputs = [r["type"] for r in records(folder) if r.get("kind") == "input"]
    assert [t for t in inputs if t in ("play", "act", "speak", "release")] == [
        "play", "act", "speak", "act", "act", "release"]
    assert run_replay(folder, config, to=None, playback=None) == 0
    resumed = open_world(config)
    try:
        assert resumed.world.state_hash() == final
    finally:
        resumed.close()


# -- a brain that is not built in pauses too -------------------------------------------------------


BRAIN = '''
from agent_world.agents import Brain, Decision

class Walker(Brain):
    def decide(self, obs, actions):
        return [Decision("wander", {"ticks": 3})]
'''


def test_a_played_agents_own_decision_pipeline_asks_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "brains"
    folder.mkdir()
    (folder / "play_walker.py").write_text(BRAIN)
    config = web_config(tmp_path).replace(brains={
        "registered": {"walker": "play_walker:Walker"}, "path": str(folder),
        "deadline_ms": 500, "min_gap_ticks": 1, "think_interval_ticks": 5})
    world = World.create(config)
    session = Session(config, world, brains=load_brains(config.brains))
    try:
        world.inbox.submit("spawn", {"kind": "agent", "name": "Walk", "brain": "walker"})
        brains = session.brains
        assert brains is not None

        async def ticks(n: int, until: Any = None) -> None:
            began = time.monotonic()
            for _ in range(n):
                await session.loop.run(max_ticks=1, paced=False)
                await asyncio.sleep(0.002)
                if (until is not None and until()) or time.monotonic() - began > 20:
                    return

        run(ticks(400, lambda: brains.metrics.applied >= 2))
        assert brains.metrics.applied >= 2
        walk = world.population.find("Walk")
        assert walk is not None
        world.inbox.submit("play", {"agent": walk, "player": "ann"})
        run(ticks(3))
        applied = brains.metrics.applied
        run(ticks(100))
        assert brains.metrics.applied == applied  # nothing asked, nothing applied
        assert world.store.get(walk, c.Intent).action is None
        world.inbox.submit("release", {"agent": walk, "player": "ann"})
        run(ticks(400, lambda: brains.metrics.applied > applied))
        assert brains.metrics.applied > applied  # back: it thinks again
    finally:
        session.close()
        sys.modules.pop("play_walker", None)
