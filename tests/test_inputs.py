"""Inputs: spawn, kill, give and plan through the inbox; rejected inputs change nothing else."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from helpers import act, add_agent, give_plan, goods_of, ground, of_type, small_world

from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.inputs import MAX_PLAN


def _submit(w, input_type: str, data: dict[str, Any], source: str = "console"):
    w.inbox.submit(input_type, data, source=source)
    return w.step()


# -- spawn -----------------------------------------------------------------------------------


def test_spawn_agent_with_everything_given() -> None:
    w = small_world()
    report = _submit(w, "spawn", {"kind": "agent", "name": "Zed", "personality": "trader",
                                  "x": 4, "y": 6, "gold": 12, "brain": "llm"})
    [ev] = of_type(report.events, "spawn")
    eid = ev["agent"]
    assert (ev["name"], ev["personality"], ev["x"], ev["y"], ev["brain"]) == (
        "Zed", "trader", 4, 6, "llm")
    agent = w.store.get(eid, c.Agent)
    assert (agent.name, agent.personality, agent.brain, agent.born) == ("Zed", "trader", "llm", 1)
    assert w.store.get(eid, c.Inventory).gold == 12
    assert w.population.find("zed") == eid
    assert w.market.ledger["gold_created"] == 12
    assert [i.type for i in report.inputs] == ["spawn"]


def test_spawn_agent_without_a_place_lands_on_an_open_tile() -> None:
    w = small_world()
    report = _submit(w, "spawn", {"kind": "agent"})
    [ev] = of_type(report.events, "spawn")
    assert not w.terrain.is_blocked(ev["x"], ev["y"])
    assert w.is_agent(ev["agent"])


def test_spawn_item_puts_goods_on_the_tile_and_books_new_gold() -> None:
    w = small_world()
    _submit(w, "spawn", {"kind": "herb", "qty": 3, "x": 2, "y": 3})
    _submit(w, "spawn", {"kind": "gold", "qty": 9, "x": 2, "y": 3})
    assert ground(w, 2, 3) == {"herb": 3, "gold": 9}
    assert w.market.ledger["gold_created"] == 9
    assert w.total_gold() == 9


def test_spawn_blocking_object_blocks_its_tile() -> None:
    w = small_world()
    _submit(w, "spawn", {"kind": "rock", "x": 8, "y": 8})
    [oid] = w.ground.objects.at(8, 8)
    assert w.store.get(oid, c.StaticObject).kind == "rock"
    assert w.terrain.is_blocked(8, 8)


def test_kill_removes_an_agent_with_the_operator_as_cause() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    [death] = of_type(_submit(w, "kill", {"target": a}).events, "death")
    assert death["cause"] == "struck down by the operator"
    assert not w.is_agent(a)


def test_kill_removes_items_and_objects_and_unblocks_their_tile() -> None:
    w = small_world()
    tree = w.spawn_object("tree", 3, 3)
    item = w.spawn_item("wood", 2, 4, 4)
    events = _submit(w, "kill", {"target": tree}).events
    events += _submit(w, "kill", {"target": item}).events
    assert [(e["target"], e["what"]) for e in of_type(events, "removed")] == [
        (tree, f"tree#{tree}"), (item, f"wood#{item}")]
    assert not w.terrain.is_blocked(3, 3)
    assert tree not in w.store
    assert ground(w, 4, 4) == {}


def test_give_adds_goods_and_books_new_gold() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items={"apple": 1})
    give_plan(w, a, act("idle", ticks=100))
    events = _submit(w, "give", {"target": a, "item": "apple", "qty": 2}).events
    events += _submit(w, "give", {"target": a, "item": "gold", "qty": 7}).events
    assert goods_of(w, a) == {"apple": 3, "gold": 7}
    assert w.market.ledger["gold_created"] == 7
    assert [(e["item"], e["qty"]) for e in of_type(events, "given")] == [("apple", 2),
                                                                       ("gold", 7)]


def test_plan_replaces_the_current_action_and_runs_in_order() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    give_plan(w, a, act("idle", ticks=50), stay=False)
    w.step()
    intent = w.store.get(a, c.Intent)
    assert intent.action == Action(name="idle", args={"ticks": 50})
    w.inbox.submit("plan", {"agent": a, "source": "llm",
                            "actions": [act("move_to", x=6, y=5), act("idle", ticks=9)]})
    w.step()
    assert intent.plan_source == "llm"
    assert intent.action == Action(name="move_to", args={"x": 6, "y": 5})
    assert intent.plan == [Action(name="idle", args={"ticks": 9})]
    assert intent.last_result == "replaced by a new plan"
    for _ in range(3):  # the one step lands at once; the arrival is noticed two ticks later
        w.step()
    assert intent.action == Action(name="idle", args={"ticks": 9})
    assert intent.plan == []
    assert w.store.get(a, c.Position) == c.Position(6, 5)


def test_plan_of_the_maximum_length_is_accepted() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    w.inbox.submit("plan", {"agent": a, "actions": [act("idle", ticks=1)] * MAX_PLAN})
    report = w.step()
    assert of_type(report.events, "input_rejected") == []
    assert len(w.store.get(a, c.Intent).plan) == MAX_PLAN - 1


# -- rejections ------------------------------------------------------------------------------


def _scene() -> Any:
    """A small world with a rock, an item and an agent busy idling."""
    w = small_world(seed=5)
    w.spawn_object("rock", 10, 10)
    w.spawn_item("apple", 1, 12, 12)
    a = add_agent(w, "Ann", 5, 5, items={"apple": 1}, gold=3)
    give_plan(w, a, act("idle", ticks=100))
    w.step()
    return w


def _state(w) -> dict[str, Any]:
    state = orjson.loads(w.state_bytes())
    del state["next_seq"]  # every input takes a sequence number, applied or not
    return state


REJECTED = [
    ("teleport", {"agent": 3}, "unknown input type 'teleport'"),
    ("spawn", {"kind": "dragon", "x": 1, "y": 1}, "cannot spawn 'dragon'"),
    ("spawn", {"kind": "apple", "x": 1}, "give both x and y, or neither"),
    ("spawn", {"kind": "apple", "x": 10, "y": 10}, "tile (10, 10) is blocked (rock)"),
    ("spawn", {"kind": "apple", "x": 40, "y": 1}, "tile (40, 1) is blocked (off the map)"),
    ("spawn", {"kind": "apple", "qty": -2, "x": 1, "y": 1}, "qty must be >= 1"),
    ("spawn", {"kind": "apple", "qty": "two", "x": 1, "y": 1}, "qty must be a whole number"),
    ("spawn", {"kind": "tree", "x": 12, "y": 12}, "tile (12, 12) is not clear"),
    ("spawn", {"kind": "rock", "x": 10, "y": 10}, "tile (10, 10) is blocked"),
    ("spawn", {"kind": "agent", "name": "ann", "personality": "cautious", "x": 1, "y": 1},
     "an agent named 'ann' already lives"),
    ("spawn", {"kind": "agent", "personality": "grumpy"}, "unknown personality 'grumpy'"),
    ("spawn", {"kind": "agent", "name": 7}, "name must be text"),
    ("spawn", {"kind": "agent", "name": "Bo", "personality": "trader", "x": 10, "y": 10},
     "tile (10, 10) is blocked (rock)"),
    ("kill", {"target": 999}, "target 999 does not exist"),
    ("kill", {}, "target None does not exist"),
    ("kill", {"target": True}, "target must be a whole number"),
    ("give", {"target": 999, "item": "apple"}, "target 999 is not a living agent"),
    ("give", {"target": 1, "item": "apple"}, "target 1 is not a living agent"),  # the rock
    ("give", {"target": 3, "item": "gems"}, "unknown item 'gems'"),
    ("give", {"target": 3, "item": "apple", "qty": 0}, "qty must be >= 1, got 0"),
    ("plan", {"agent": 2, "actions": [act("idle")]}, "agent 2 is not a living agent"),
    ("plan", {"agent": 3, "actions": []}, "actions must be a list of 1 to 8 actions"),
    ("plan", {"agent": 3, "actions": [act("idle")] * (MAX_PLAN + 1)}, "a list of 1 to 8"),
    ("plan", {"agent": 3, "actions": act("idle")}, "actions must be a list"),
    ("plan", {"agent": 3, "actions": [act("fly")]}, "invalid action in plan: unknown action"),
    ("plan", {"agent": 3, "actions": [{"args": {}}]}, "invalid action in plan"),
    ("plan", {"agent": 3, "actions": ["idle"]}, "invalid action in plan"),
    ("plan", {"agent": 3, "actions": [act("idle"), act("attack", target=0)]},
     "invalid action in plan: attack.target must be"),
]


@pytest.mark.parametrize(("input_type", "data", "reason"), REJECTED,
                         ids=[f"{t}-{i}" for i, (t, _d, _r) in enumerate(REJECTED)])
def test_a_rejected_input_is_reported_and_changes_nothing_else(input_type, data,
                                                                reason) -> None:
    w, twin = _scene(), _scene()
    assert w.is_agent(3) and w.store.has(1, c.StaticObject) and w.store.has(2, c.Item)
    report = _submit(w, input_type, data, source="tester")
    expected = twin.step()
    [rejected, *rest] = report.events
    assert rejected["type"] == "input_rejected"
    assert (rejected["input"], rejected["source"], rejected["seq"]) == (input_type, "tester",
                                                                         2)
    assert reason in rejected["reason"]
    assert rest == list(expected.events)
    assert _state(w) == _state(twin)


@pytest.mark.parametrize("data", [
    {"kind": "agent", "x": 10, "y": 10},  # random personality and name drawn, then refused
    {"kind": "agent", "name": "Ann"},  # random personality drawn, then the name refused
], ids=["blocked-tile", "taken-name"])
def test_a_rejected_agent_spawn_leaves_the_world_rng_alone(data) -> None:
    w, twin = _scene(), _scene()
    report = _submit(w, "spawn", data)
    twin.step()
    assert of_type(report.events, "input_rejected")
    untouched = w.rng.getstate() == twin.rng.getstate()
    assert untouched, "the refused spawn drew from the world RNG"


def test_spawning_an_agent_with_negative_gold_is_rejected() -> None:
    w = _scene()
    report = _submit(w, "spawn", {"kind": "agent", "name": "Debtor", "gold": -50})
    assert of_type(report.events, "input_rejected")
    assert w.population.find("Debtor") is None


def test_spawning_zero_items_is_rejected() -> None:
    w = _scene()
    report = _submit(w, "spawn", {"kind": "stone", "qty": 0, "x": 1, "y": 1})
    assert of_type(report.events, "input_rejected")
    assert ground(w, 1, 1) == {}


def test_a_plan_with_args_that_are_not_an_object_is_rejected_not_raised() -> None:
    w = _scene()
    w.inbox.submit("plan", {"agent": 3, "actions": [{"name": "idle", "args": "ticks"}]})
    report = w.step()
    [rejected] = of_type(report.events, "input_rejected")
    assert "invalid action in plan" in rejected["reason"]
