"""The brain API (``agent_world.agents``): observations of real worlds, decisions, and the
JSON Schema ``python main.py schema`` publishes, checked with a real validator."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from agent_world.agents import (
    Decision,
    DecisionError,
    Observation,
    action_schemas,
    as_plan,
    decision_schema,
    every_schema,
    observation_schema,
    observe,
)
from agent_world.cli.schema import main as schema_main
from agent_world.config import Config
from agent_world.contract.schema import ability_schema
from agent_world.core import components as c
from agent_world.core.actions import ACTIONS
from agent_world.core.world import World
from agent_world.sandbox.host import load_builtins
from tests.helpers import add_agent, small_world


def busy_world() -> World:
    world = World.create(Config().replace(world={"size": [40, 40], "starting_agents": 30,
                                                 "seed": 11}))
    for _ in range(400):
        world.step()
    return world


def valid(schema: dict[str, Any], doc: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(doc)


def test_every_observation_of_a_running_world_matches_the_published_schema() -> None:
    world = busy_world()
    schema = observation_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    seen_lists = {"agents": 0, "items": 0, "objects": 0, "heard": 0}
    try:
        for eid, _row in list(world.agents()):
            obs = observe(world, eid, custom={"team": "red", "score": 3})
            doc = orjson.loads(orjson.dumps(obs.to_dict()))  # the JSON a client receives
            errors = [e.message for e in validator.iter_errors(doc)]
            assert not errors, errors[:3]
            assert doc["custom"] == {"team": "red", "score": 3} and doc["tick"] == world.tick
            for key in seen_lists:
                seen_lists[key] += len(doc[key])
        assert all(seen_lists.values()), seen_lists  # every list was exercised
        broken = orjson.loads(orjson.dumps(obs.to_dict()))
        broken["me"]["gold"] = "lots"
        assert not validator.is_valid(broken)  # the schema can fail
    finally:
        world.close()


def test_an_observation_says_what_the_agent_perceives() -> None:
    world = small_world(3)
    me = add_agent(world, "Brin", 5, 5, items={"berries": 2}, gold=4)
    near = add_agent(world, "Elio", 7, 5)
    middle = add_agent(world, "Mara", 8, 8)
    far = add_agent(world, "Faraway", 19, 19)
    world.spawn_item("apple", 1, 6, 6)
    for _ in range(5):
        world.step()
    world.abilities.cooldowns[me] = {"heal": world.tick + 30, "dash": world.tick - 1}
    combat = world.store.get(me, c.Combat)
    combat.last_attacked, combat.last_attacker = world.tick - 2, near
    obs = observe(world, me)
    assert isinstance(obs, Observation) and obs.tick == world.tick
    inventory, needs = world.store.get(me, c.Inventory), world.store.get(me, c.Needs)
    assert (obs.me.name, obs.me.personality, obs.me.gold) == ("Brin", "cautious", 4)
    assert dict(obs.me.items) == inventory.items and obs.me.hunger == needs.hunger
    assert dict(obs.me.cooldowns) == {"heal": 30}  # ready abilities are not listed
    assert obs.me.attacked_by is not None and obs.me.attacked_by.id == near
    assert obs.me.attacked_by.ticks_ago == 2
    ids = [a.id for a in obs.agents]
    assert {near, middle} <= set(ids) and far not in ids  # in sight only
    me_at = world.store.get(me, c.Position)
    for other in obs.agents:
        at = world.store.get(other.id, c.Position)
        assert (other.x, other.y, other.name) == (at.x, at.y, world.name_of(other.id))
        assert other.distance == max(abs(at.x - me_at.x), abs(at.y - me_at.y))
    for seen in obs.items:  # whatever lies in sight, where it lies
        item, at = world.store.get(seen.id, c.Item), world.store.get(seen.id, c.Position)
        assert (seen.kind, seen.qty, seen.x, seen.y) == (item.kind, item.qty, at.x, at.y)
        assert seen.distance == max(abs(at.x - me_at.x), abs(at.y - me_at.y))
    with pytest.raises(FrozenInstanceError):
        obs.tick = 0  # type: ignore[misc]
    view = obs.prompt_view()  # what the LLM is shown: the same data, compact
    assert view["you"]["attacked_by"]["id"] == near and view["you"]["gold"] == 4
    assert [a["id"] for a in view["agents"]] == ids[:5]
    world.close()


def test_decisions_become_validated_actions_or_a_clear_error() -> None:
    actions, why = as_plan(Decision("eat", {"item": "apple"}, reasoning="hungry"),
                           max_actions=3)
    assert [str(a) for a in actions] == ["eat(item=apple)"] and why == "hungry"
    actions, why = as_plan([Decision("move_to", {"x": 3, "y": "4"}),
                            Decision("pickup", {"target": 9}, reasoning="an apple")],
                           max_actions=3)
    assert [str(a) for a in actions] == ["move_to(x=3, y=4)", "pickup(target=9)"]
    bad = [
        (Decision("fly"), "unknown action 'fly'"),
        (Decision("eat", {"item": "rocks"}), "eat.item must be an item kind"),
        ([Decision("wander"), Decision("attack")], "plan[1]: attack: missing argument"),
        ([Decision("wander")] * 4, "at most 3"),
        ([], "empty plan"),
        ("wander", "got str"),
        (None, "got NoneType"),
        ([{"action": "wander"}], "plan[0] is a dict"),
    ]
    for answer, message in bad:
        with pytest.raises(DecisionError, match=message.replace("[", r"\[").replace("]", r"\]")):
            as_plan(answer, max_actions=3)
    assert Decision.from_dict({"action": "say", "args": {"text": "hi"}}) == \
        Decision("say", {"text": "hi"})
    with pytest.raises(DecisionError, match="'args' must be an object"):
        Decision.from_dict({"action": "say", "args": [1]})


def test_action_decision_and_ability_schemas_accept_the_valid_and_refuse_the_rest() -> None:
    schemas = action_schemas()
    assert set(schemas) == set(ACTIONS)
    assert valid(schemas["attack"], {"action": "attack", "args": {"target": 5}})
    assert not valid(schemas["attack"], {"action": "attack", "args": {}})
    assert valid(schemas["trade_offer"], {"action": "trade_offer", "args": {
        "target": 5, "give": {"apple": 2}, "want": {"gold": 3}}})
    assert not valid(schemas["trade_offer"], {"action": "trade_offer", "args": {
        "target": 5, "give": {"diamond": 2}, "want": {"gold": 3}}})
    decision = decision_schema(3)
    jsonschema.Draft202012Validator.check_schema(decision)
    assert valid(decision, Decision("eat", {"item": "apple"}, reasoning="hungry").to_dict())
    assert valid(decision, [Decision("wander").to_dict(), Decision("rest").to_dict()])
    assert not valid(decision, [Decision("wander").to_dict()] * 4)
    assert not valid(decision, {"action": "fly"})
    heal = next(s.meta for s in load_builtins() if s.name == "heal")
    schema = ability_schema(heal)
    cast = {"action": "use_ability", "args": {"ability": "heal"}}
    required = heal.required()
    for arg in required:
        cast["args"][arg] = 3  # type: ignore[index]
    assert valid(schema, cast)
    assert not valid(schema, {"action": "use_ability", "args": {"ability": "dash"}})


def test_python_main_py_schema_prints_every_part(tmp_path: Path) -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert schema_main([]) == 0
    doc = json.loads(out.getvalue())
    assert set(doc) == {"observation", "decision", "actions", "abilities"}
    assert set(doc["abilities"]) == {s.name for s in load_builtins()}
    assert doc == json.loads(orjson.dumps(every_schema(
        [s.meta for s in load_builtins()], max_actions=Config().llm.plan_actions)))
    for schema in (doc["observation"], doc["decision"], *doc["actions"].values()):
        jsonschema.Draft202012Validator.check_schema(schema)
    out = io.StringIO()
    with redirect_stdout(out):
        assert schema_main(["--part", "observation"]) == 0
    assert json.loads(out.getvalue())["title"] == "Observation"
    err = io.StringIO()
    with redirect_stderr(err):
        assert schema_main(["--world", str(tmp_path / "nope")]) == 2
    assert "does not exist" in err.getvalue()
