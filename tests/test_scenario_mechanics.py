"""The scenario mechanics: hazard tiles, recipes and the craft action, teams with capture
points and a team channel. Each is world state (saved, hashed, replayed), off in the default
world, and known to the built-in brains and to every brain's observation."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from agent_world.app import Session
from agent_world.commands import Console
from agent_world.config import Config, ConfigError
from agent_world.contract.observation import observe
from agent_world.core import components as c
from agent_world.core.pathfinding import AVOID_COST, find_path
from agent_world.core.world import World, WorldError
from agent_world.llm.prompts import WorldFacts, action_lines
from agent_world.types import FakeClock
from tests.helpers import act, add_agent, give_plan, goods_of, of_type, run, small_world

CHAIN = {"club": "wood*2", "spear": "club + stone"}


def _hazard(world: World, x: int, y: int) -> int:
    return world.spawn_object("hazard", x, y)


# -- the default world has none of it -------------------------------------------------------


def test_the_default_world_has_no_hazards_recipes_points_or_teams() -> None:
    world = World.create(Config(), seed=5)
    for _ in range(300):
        world.step()
    assert not world.ground.hazard_tiles and not world.ground.capture_points and not world.recipes
    assert not world.population.teams
    assert "teams" not in json.loads(world.state_bytes())
    facts = WorldFacts.of(world)
    assert facts.scene == ()
    lines = action_lines(facts.scene_actions)
    assert "- craft:" not in lines and "- team_say:" not in lines
    world.close()


# -- hazards ----------------------------------------------------------------------------------


def test_a_hazard_hurts_every_tick_an_agent_stands_on_it() -> None:
    world = small_world(game={"hazard_damage": 2.5})
    _hazard(world, 5, 5)
    victim = add_agent(world, "Victim", 5, 5)
    bystander = add_agent(world, "Bystander", 6, 5)
    give_plan(world, victim, act("idle", ticks=50))
    give_plan(world, bystander, act("idle", ticks=50))
    events = run(world, 4)
    hurt = of_type(events, "hazard")
    assert [e["agent"] for e in hurt] == [victim] * 4
    needs = world.store.get(victim, c.Needs)
    assert needs.health == pytest.approx(needs.max_health - 10, abs=0.5)
    assert world.store.get(bystander, c.Needs).health == needs.max_health
    figures = world.metrics.of(victim)
    assert figures["hazard_damage"] == figures["damage_taken"] == 10
    assert any("thorns at (5, 5)" in m["text"]
               for m in world.store.get(victim, c.Memory).recent)


def test_a_hazard_can_kill() -> None:
    world = small_world(game={"hazard_damage": 40.0})
    _hazard(world, 3, 3)
    victim = add_agent(world, "Victim", 3, 3)
    give_plan(world, victim, act("idle", ticks=50))
    events = run(world, 5)
    assert [e["agent"] for e in of_type(events, "death")] == [victim]
    assert not world.alive(victim)


def test_a_tile_stops_hurting_only_when_its_last_hazard_is_gone() -> None:
    world = small_world()
    first, second = _hazard(world, 4, 4), _hazard(world, 4, 4)
    bush = world.spawn_object("berry_bush", 4, 4)
    tile = 4 * world.terrain.width + 4
    world.remove_entity(bush)
    world.remove_entity(first)
    assert tile in world.ground.hazard_tiles
    world.remove_entity(second)
    assert tile not in world.ground.hazard_tiles


def test_routes_go_round_hazards_when_the_way_round_is_short() -> None:
    width = height = 9
    blocked = bytearray(width * height)
    wall = {4 * width + 4, 3 * width + 4, 5 * width + 4}  # a short hazard wall across x=4
    straight, _ = find_path(blocked, width, height, (1, 4), (7, 4))
    assert any(tile in wall for tile in straight)
    around, complete = find_path(blocked, width, height, (1, 4), (7, 4), avoid=wall)
    assert complete and not any(tile in wall for tile in around)
    assert len(around) <= len(straight) + AVOID_COST
    # A hazard on the goal itself is still reached.
    onto, complete = find_path(blocked, width, height, (1, 4), (4, 4), avoid=wall)
    assert complete and onto[0] == 4 * width + 4


def test_agents_walk_round_hazards_to_reach_an_item() -> None:
    world = small_world()
    for y in (4, 5, 6):
        _hazard(world, 5, y)
    walker = add_agent(world, "Walker", 2, 5)
    item = world.spawn_item("apple", 1, 8, 5)
    give_plan(world, walker, act("pickup", target=item))
    events = run(world, 60)
    assert goods_of(world, walker).get("apple") == 1
    assert not of_type(events, "hazard")


def test_hazards_are_placed_in_clumps_on_a_new_map_and_kept_in_its_state() -> None:
    config = Config().replace(world={"hazard_tiles_per_1000_tiles": 40})
    world = World.create(config, seed=3)
    area = world.terrain.width * world.terrain.height
    assert len(world.ground.hazard_tiles) == round(area * 40 / 1000)
    assert all(not world.terrain.is_blocked(t % world.terrain.width, t // world.terrain.width)
               for t in world.ground.hazard_tiles)
    copy = World.from_state(json.loads(world.state_bytes()))
    assert copy.ground.hazard_tiles == world.ground.hazard_tiles
    assert copy.state_hash() == world.state_hash()
    seen_any = False
    for eid, _row in world.agents():
        seen = observe(world, eid)
        tiles = [[o.x, o.y] for o in seen.objects if o.kind == "hazard"]
        assert seen.prompt_view().get("scenario", {}).get("hazards", []) == tiles
        assert all(y * world.terrain.width + x in world.ground.hazard_tiles for x, y in tiles)
        seen_any = seen_any or bool(tiles)
    assert seen_any
    world.close()
    copy.close()


# -- crafting ---------------------------------------------------------------------------------


def test_craft_turns_inputs_into_one_output_after_craft_ticks() -> None:
    world = small_world(game={"recipes": CHAIN, "craft_ticks": 10})
    smith = add_agent(world, "Smith", 5, 5, items={"wood": 5, "stone": 1})
    give_plan(world, smith, act("craft", item="club"), act("craft", item="spear"))
    events = run(world, 9)
    assert not of_type(events, "craft") and goods_of(world, smith)["wood"] == 5
    events += run(world, 30)
    crafts = of_type(events, "craft")
    assert [e["item"] for e in crafts] == ["club", "spear"]
    assert crafts[0]["inputs"] == {"wood": 2} and crafts[1]["inputs"] == {"club": 1, "stone": 1}
    assert goods_of(world, smith) == {"wood": 3, "spear": 1}
    figures = world.metrics.of(smith)
    assert figures["crafted"] == 2 and figures["crafted_value"] == 10 + 18


@pytest.mark.parametrize(("recipes", "items", "item", "reason"), [
    (CHAIN, {"wood": 1}, "club", "cannot craft club: short of 1 wood"),
    (CHAIN, {"wood": 2}, "spear", "cannot craft spear: short of 1 club, 1 stone"),
    (CHAIN, {"wood": 2}, "sword", "no recipe makes sword (recipes: club, spear)"),
    ({}, {"wood": 2}, "club", "no recipe makes club (recipes: none in this world"),
])
def test_a_craft_that_cannot_happen_fails_with_the_reason(recipes: dict[str, str],
                                                          items: dict[str, int], item: str,
                                                          reason: str) -> None:
    world = small_world(game={"recipes": recipes})
    smith = add_agent(world, "Smith", 5, 5, items=items)
    give_plan(world, smith, act("craft", item=item))
    failed = of_type(run(world, 3), "action_failed")
    assert failed and reason in failed[0]["reason"]
    assert goods_of(world, smith) == items


def test_a_craft_the_agent_cannot_carry_does_not_happen() -> None:
    world = small_world(game={"recipes": {"sword": "herb"}, "carry_capacity": 5.0,
                              "craft_ticks": 1})
    smith = add_agent(world, "Smith", 5, 5, items={"herb": 1, "stone": 1})
    give_plan(world, smith, act("craft", item="sword"))
    failed = of_type(run(world, 5), "action_failed")
    assert failed and "cannot carry the sword" in failed[0]["reason"]
    assert goods_of(world, smith) == {"herb": 1, "stone": 1}


@pytest.mark.parametrize(("recipes", "message"), [
    ({"club": "wood*0"}, "game.recipes.club = 'wood*0'"),
    ({"club": "wood +"}, "expected inputs like"),
])
def test_a_recipe_of_the_wrong_form_is_a_configuration_error(recipes: dict[str, str],
                                                             message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        Config().replace(game={"recipes": recipes})


@pytest.mark.parametrize(("recipes", "message"), [
    ({"club": "wod*2"}, "game.recipes.club: input 'wod' is not an item kind"),
    ({"dragon": "wood"}, "'dragon' is not an item kind that can be made"),
    ({"club": "club + wood"}, "cannot use its own output"),
])
def test_a_recipe_naming_no_item_stops_the_world_from_being_made(recipes: dict[str, str],
                                                                 message: str) -> None:
    with pytest.raises(WorldError, match=re.escape(message)):
        World.create(Config().replace(game={"recipes": recipes}), seed=1)


def test_built_in_agents_gather_for_recipes_and_craft() -> None:
    config = Config().replace(game={"recipes": CHAIN},
                              world={"personality_mix": {"gatherer": 1.0},
                                     "objects_per_1000_tiles": 40})
    world = World.create(config, seed=2)
    events = []
    for _ in range(3000):
        events += world.step().events
    crafted = {e["item"] for e in of_type(events, "craft")}
    assert crafted == {"club", "spear"}
    world.close()


# -- teams --------------------------------------------------------------------------------


def _teams_world(**game: object) -> World:
    return small_world(game={"capture_ticks": 5, "capture_radius": 1, **game})


def _join(world: World, name: str, team: str, x: int, y: int) -> int:
    eid = world.spawn_agent(name, "cautious", x, y, team=team)
    give_plan(world, eid, act("idle", ticks=100))
    return eid


def test_a_team_alone_at_a_point_takes_it_and_scores_while_it_holds_it() -> None:
    world = _teams_world()
    point = world.spawn_object("capture_point", 10, 10)
    red = _join(world, "Red1", "red", 10, 11)
    _join(world, "Blue1", "blue", 3, 3)
    events = run(world, 4)
    assert not of_type(events, "capture")
    assert world.teams.points[point] == {"owner": "", "claimant": "red", "progress": 4}
    events = run(world, 6)
    taken = of_type(events, "capture")
    assert [(e["team"], e["agents"], e["previous"]) for e in taken] == [("red", [red], "")]
    assert world.teams.owner(point) == "red"
    assert world.teams.held == {"red": 6}  # from the tick it was taken on
    assert world.metrics.of(red)["captures"] == 1


def test_a_contested_point_does_not_change_hands() -> None:
    world = _teams_world()
    point = world.spawn_object("capture_point", 10, 10)
    _join(world, "Red1", "red", 10, 11)
    _join(world, "Blue1", "blue", 11, 10)
    assert not of_type(run(world, 30), "capture")
    assert world.teams.owner(point) == "" and not world.teams.held


def test_team_say_reaches_every_teammate_anywhere_and_no_one_else() -> None:
    world = _teams_world(team_channel_size=2)
    red1 = _join(world, "Red1", "red", 1, 1)
    red2 = _join(world, "Red2", "red", 18, 18)
    blue = _join(world, "Blue1", "blue", 2, 1)
    loner = add_agent(world, "Loner", 1, 2)
    give_plan(world, loner, act("idle", ticks=100))
    for n in range(3):
        give_plan(world, red1, act("team_say", text=f"hold the north {n}"))
        run(world, 2)
    heard = world.store.get(red2, c.Perception).heard
    assert [h["text"] for h in heard] == [f"hold the north {n}" for n in range(3)]
    assert all(h["team"] for h in heard)
    for outsider in (blue, loner):
        assert not any(h.get("team") for h in world.store.get(outsider, c.Perception).heard)
    channel = world.teams.channel["red"]
    assert [m["text"] for m in channel] == ["hold the north 1", "hold the north 2"]
    assert all(m["heard_by"] == [red2] for m in channel)
    seen = observe(world, red2)
    assert seen.heard[-1].team and seen.custom["team"] == "red"
    assert seen.custom["teammates"] == [red1]
    assert seen.prompt_view()["heard"][-1]["team"] is True
    assert world.metrics.of(red1)["team_messages"] == 3


def test_team_say_fails_outside_a_team_and_past_the_length_limit() -> None:
    world = _teams_world(team_message_chars=10)
    red = _join(world, "Red1", "red", 1, 1)
    loner = add_agent(world, "Loner", 5, 5)
    give_plan(world, red, act("team_say", text="far too long a message"))
    give_plan(world, loner, act("team_say", text="hello"))
    reasons = {e["agent"]: e["reason"] for e in of_type(run(world, 2), "action_failed")}
    assert "at most 10 characters" in reasons[red]
    assert "not in a team" in reasons[loner]


def test_a_team_name_is_checked_and_travels_with_the_spawn_input() -> None:
    world = _teams_world()
    with pytest.raises(WorldError, match="team name 'Red Team'"):
        world.spawn_agent("X", team="Red Team")
    world.inbox.submit("spawn", {"kind": "agent", "name": "Ada", "team": "red"}, source="t")
    events = run(world, 1)
    spawned = of_type(events, "spawn")[0]
    assert spawned["team"] == "red"
    assert world.population.teams == {"red": {spawned["agent"]}}


def test_teams_are_state_they_save_load_hash_and_go_on_alike() -> None:
    config = Config().replace(world={"capture_points": 2, "starting_agents": 4},
                              game={"capture_ticks": 10})
    world = World.create(config, seed=7)
    for i in range(6):
        world.spawn_agent(f"T{i}", "aggressive", team="red" if i % 2 else "blue")
    for _ in range(1500):
        world.step()
    assert world.teams.held
    state = json.loads(world.state_bytes())
    copy = World.from_state(state)
    assert copy.state_hash() == world.state_hash()
    assert copy.population.teams == world.population.teams
    assert copy.ground.capture_points == world.ground.capture_points
    for _ in range(500):
        world.step()
        copy.step()
    assert copy.state_hash() == world.state_hash()
    world.close()
    copy.close()


def test_built_in_team_agents_never_attack_a_teammate_and_go_for_the_points() -> None:
    config = Config().replace(world={"capture_points": 3, "starting_agents": 0,
                                     "immigration_interval_ticks": 0},
                              game={"capture_ticks": 20})
    world = World.create(config, seed=11)
    team = {}
    for i in range(8):
        eid = world.spawn_agent(f"T{i}", "aggressive", team="red" if i < 4 else "blue")
        team[eid] = "red" if i < 4 else "blue"
    attacks = []
    for _ in range(2000):
        attacks += of_type(world.step().events, "attack")
    assert attacks, "the teams should fight"
    assert all(team.get(a["agent"]) != team.get(a["target"]) for a in attacks)
    assert sum(world.teams.held.values()) > 0
    world.close()


def test_by_team_totals_at_the_console_and_in_the_metrics(tmp_path: Path) -> None:
    config = Config().replace(persistence={"enabled": False}, log={"echo": False},
                              paths={"logs": str(tmp_path)},
                              world={"capture_points": 2, "starting_agents": 2},
                              game={"capture_ticks": 10})
    world = World.create(config, seed=4)
    for i in range(4):
        world.spawn_agent(f"T{i}", "aggressive", team="red" if i < 2 else "blue")
    session = Session(config, world, clock=FakeClock())
    for _ in range(800):
        session.loop.tick_once()
    console = Console(session)
    try:
        lines = asyncio.run(console.execute("/metrics"))
        at = lines.index("by team (held: capture point-ticks):")
        rows = {line.split()[0]: line.split() for line in lines[at + 2:]}
        assert set(rows) == {"blue", "red"}
        for name in ("red", "blue"):
            assert int(rows[name][1].replace(",", "")) == world.teams.held.get(name, 0)
        groups = world.metrics.by("team")
        assert groups["red"]["agents"] == 2 and groups["blue"]["agents"] == 2
    finally:
        console.close()
        session.close()


def test_the_llm_is_told_the_rules_of_the_mechanics_its_world_has() -> None:
    config = Config().replace(world={"capture_points": 1, "hazard_tiles_per_1000_tiles": 5},
                              game={"recipes": CHAIN})
    world = World.create(config, seed=1)
    facts = WorldFacts.of(world)
    text = "\n".join(facts.scene)
    assert "Hazard tiles" in text and "club from wood*2" in text and "capture point" in text
    lines = action_lines(facts.scene_actions)
    assert "- craft:" in lines and "- team_say:" in lines
    agent = world.agents()[0][0]
    view = observe(world, agent).prompt_view()["scenario"]
    assert view["recipes"] == {"club": {"wood": 2}, "spear": {"club": 1, "stone": 1}}
    assert view["capture_points"][0]["owner"] == ""
    world.close()


def test_the_console_spawns_team_agents_and_names_a_bad_team(tmp_path: Path) -> None:
    config = Config().replace(persistence={"enabled": False}, log={"echo": False},
                              paths={"logs": str(tmp_path)}, world={"starting_agents": 0})
    session = Session(config, World.create(config, seed=2), clock=FakeClock())
    console = Console(session)
    try:
        said = asyncio.run(console.execute("/spawn agent Ada team=Red"))
        assert "(team=red)" in said[0]
        session.loop.tick_once()
        ada = session.world.population.find("Ada")
        assert ada is not None and session.world.store.get(ada, c.Team).name == "red"
        bad = asyncio.run(console.execute("/spawn agent Bo team=red-team"))
        assert bad[0].startswith("error: team name 'red-team'") and len(bad) == 1
    finally:
        console.close()
        session.close()
