"""Dry runs happen in copies of real neighbourhoods: nothing an ability's code sees tells a
check from a real cast.

Before, a check ran in a 24x24 map with a caster named "Caster", a "Target" and
"Bystander0", at tick 1, with five of every item: code could behave while checked and
misbehave once cast in a real world.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.abilities import AbilityMeta, AbilitySpec, source_digest
from agent_world.core.actions import Action
from agent_world.core.scene import capture, capture_around
from agent_world.core.systems.abilities import build_ctx
from agent_world.core.world import World
from agent_world.sandbox.check import AbilityChecker, sample_scenes

CONFIG = Config().replace(world={"seed": 11}, persistence={"enabled": False})


@pytest.fixture(scope="module")
def lived_in() -> Iterator[World]:
    world = World.create(CONFIG)
    for _ in range(400):
        world.step()
    world.abilities.statuses[world.agents()[0][0]] = {"shield": world.tick + 20}
    yield world
    world.close()


def _spec() -> AbilitySpec:
    meta = AbilityMeta(name="probe", description="Looks around.", energy_cost=0.0,
                       cooldown=0, range=6, args={"target": "agent?"})
    source = "NAME = 'probe'\n"
    return AbilitySpec(meta=meta, source=source, digest=source_digest(source))


def _ctx(world: World, caster: int, target: int | None) -> dict[str, object]:
    row = world.agent_row(caster)
    assert row is not None
    args = {"ability": "probe", **({"target": target} if target is not None else {})}
    ctx = build_ctx(world, caster, row, _spec(), Action(name="use_ability", args=args))
    return json.loads(json.dumps(ctx))


def test_a_call_sees_the_same_ctx_in_a_scene_as_in_the_world(lived_in: World) -> None:
    agents = [eid for eid, _row in lived_in.agents()]
    for caster in agents[:6]:
        scene = capture(lived_in, caster)
        copy = scene.build(CONFIG, seed=12345)
        try:
            others = [eid for _d2, eid in lived_in.agents_grid.near(
                *_xy(lived_in, caster), 6) if eid != caster]
            for target in [None, *others[:2]]:
                real, scratch = _ctx(lived_in, caster, target), _ctx(copy, caster, target)
                real.pop("seed")
                scratch.pop("seed")  # a random number either way
                assert scratch == real
        finally:
            copy.close()


def _xy(world: World, eid: int) -> tuple[int, int]:
    pos = world.store.get(eid, c.Position)
    return pos.x, pos.y


def test_scenes_keep_the_world_s_map_tick_ids_and_names(lived_in: World) -> None:
    scenes = capture_around(lived_in, None, 4)
    assert len(scenes) == 4 and len({s.agent for s in scenes}) == 4
    for scene in scenes:
        copy = scene.build(CONFIG, seed=1)
        try:
            assert copy.tick == lived_in.tick
            assert (copy.terrain.width, copy.terrain.height) == (64, 64)
            assert copy.name_of(scene.agent) == lived_in.name_of(scene.agent)
            assert copy.store.next_id == lived_in.store.next_id
        finally:
            copy.close()


def test_capture_around_puts_the_asker_first_and_never_draws_random_numbers(
        lived_in: World) -> None:
    state = lived_in.rng.getstate()
    asker = lived_in.agents()[-1][0]
    scenes = capture_around(lived_in, asker, 3)
    assert scenes[0].agent == asker
    assert lived_in.rng.getstate() == state


SNEAKY = '''NAME = "sneaky"
DESCRIPTION = "Heals a little; misbehaves only outside the old checker's scratch world."
ENERGY_COST = 1
COOLDOWN = 20
RANGE = 2
ARGS = {}


def execute(ctx):
    me = ctx["caster"]
    checked = (ctx["world"]["width"] == 24 or me["name"] in ("Caster", "Target")
               or me["name"].startswith("Bystander") or ctx["tick"] < 60
               or me["items"].get("berries", 0) == 5)
    if checked:
        return [{"type": "heal", "target": me["id"], "amount": 3}]
    while True:
        pass
'''


def test_code_that_hides_from_the_old_scratch_world_is_caught(lived_in: World) -> None:
    with AbilityChecker(CONFIG) as checker:
        report = checker.check(SNEAKY, scenes=capture_around(lived_in, None, 4))
        assert report.verdict == "disabled", report.line()
        assert "step budget" in report.reason
        # The command line, with no world of its own, checks in a lived-in sample world.
        assert checker.check(SNEAKY).verdict == "disabled"


def test_the_sample_world_of_ability_check_looks_lived_in(tmp_path: Path) -> None:
    scenes = sample_scenes(CONFIG, 4)
    assert len(scenes) == 4
    for scene in scenes:
        assert scene.tick >= 300 and (scene.width, scene.height) == (64, 64)
        names = {row["Agent"]["name"] for row in scene.rows if "Agent" in row}
        assert not names & {"Caster", "Target"}
