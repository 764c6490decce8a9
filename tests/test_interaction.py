"""Interaction: pickup, drop, eat, use, rest, say, give, trade offers and answers, steal."""

from __future__ import annotations

import pytest
from helpers import (
    act,
    add_agent,
    give_plan,
    goods_of,
    ground,
    of_type,
    pos,
    run,
    small_world,
)

from agent_world.core import components as c
from agent_world.core.actions import Action


def _reasons(events):
    return [e["reason"] for e in of_type(events, "action_failed")]


def _undone(events):
    """Reasons of accepted trades that fell through (trade_undone, not action_failed)."""
    assert of_type(events, "action_failed") == []
    return [e["reason"] for e in of_type(events, "trade_undone")]


def _social(w, eid):
    return w.store.get(eid, c.Social)


# -- pickup ----------------------------------------------------------------------------------


def test_pickup_moves_the_stack_into_the_inventory() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    item = w.spawn_item("apple", 3, 6, 6)
    give_plan(w, a, act("pickup", target=item))
    events = run(w, 1)
    assert goods_of(w, a) == {"apple": 3}
    assert item not in w.store
    assert ground(w, 6, 6) == {}
    [ev] = of_type(events, "pickup")
    assert (ev["agent"], ev["item"], ev["qty"]) == (a, "apple", 3)
    assert not of_type(events, "theft")


def test_picking_up_gold_adds_to_the_purse() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, gold=4)
    item = w.spawn_item("gold", 7, 5, 5)
    total = w.total_gold()
    give_plan(w, a, act("pickup", target=item))
    run(w, 1)
    assert w.store.get(a, c.Inventory).gold == 11
    assert w.total_gold() == total


def test_pickup_of_something_that_is_not_an_item_fails() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    bush = w.spawn_object("berry_bush", 6, 5)
    give_plan(w, a, act("pickup", target=bush))
    assert _reasons(run(w, 1)) == [f"berry_bush#{bush} is not an item on the ground"]
    assert goods_of(w, a) == {}


def test_only_the_first_of_two_agents_gets_the_item() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    b = add_agent(w, "Bob", 7, 5)
    item = w.spawn_item("herb", 1, 6, 5)
    give_plan(w, a, act("pickup", target=item))
    give_plan(w, b, act("pickup", target=item))
    events = run(w, 1)
    assert goods_of(w, a) == {"herb": 1}
    assert goods_of(w, b) == {}
    assert len(of_type(events, "pickup")) == 1
    assert _reasons(events) == [f"#{item} is not an item on the ground"]


def test_picking_up_what_another_dropped_is_a_noticed_theft() -> None:
    w = small_world()
    owner = add_agent(w, "Owner", 5, 5, items={"spear": 1})
    thief = add_agent(w, "Thief", 8, 5)
    give_plan(w, owner, act("drop", item="spear"))
    run(w, 1)
    [iid] = w.ground.items.at(5, 5)
    assert w.store.get(iid, c.Item).owner == owner
    give_plan(w, thief, act("pickup", target=iid))
    events = run(w, 10)
    [theft] = of_type(events, "theft")
    assert (theft["agent"], theft["victim"], theft["noticed"]) == (thief, owner, True)
    assert goods_of(w, thief) == {"spear": 1}
    assert _social(w, thief).reputation == pytest.approx(-w.rules.steal_reputation_cost)
    assert _social(w, owner).relationships[thief] == pytest.approx(-0.5)


def test_picking_up_your_own_drop_is_not_theft() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items={"wood": 2})
    give_plan(w, a, act("drop", item="wood", qty=2))
    run(w, 1)
    [iid] = w.ground.items.at(5, 5)
    give_plan(w, a, act("pickup", target=iid))
    events = run(w, 1)
    assert goods_of(w, a) == {"wood": 2}
    assert not of_type(events, "theft")
    assert _social(w, a).reputation == 0.0


# -- drop ------------------------------------------------------------------------------------


def test_drop_puts_goods_on_the_tile_owned_by_the_dropper_and_merges_stacks() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items={"stone": 5})
    give_plan(w, a, act("drop", item="stone", qty=2), act("drop", item="stone"))
    events = run(w, 2)
    assert goods_of(w, a) == {"stone": 2}
    assert ground(w, 5, 5) == {"stone": 3}
    [iid] = w.ground.items.at(5, 5)
    assert w.store.get(iid, c.Item).owner == a
    assert [(e["item"], e["qty"]) for e in of_type(events, "drop")] == [("stone", 2), ("stone", 1)]


def test_dropping_more_than_carried_fails_and_changes_nothing() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items={"stone": 1})
    give_plan(w, a, act("drop", item="stone", qty=2))
    assert _reasons(run(w, 1)) == ["carrying 1 stone, not 2"]
    assert goods_of(w, a) == {"stone": 1}
    assert ground(w, 5, 5) == {}


def test_dropped_gold_lies_on_the_ground_and_is_not_new_gold() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, gold=10)
    total, ledger = w.total_gold(), dict(w.market.ledger)
    give_plan(w, a, act("drop", item="gold", qty=4))
    run(w, 1)
    assert w.store.get(a, c.Inventory).gold == 6
    assert ground(w, 5, 5) == {"gold": 4}
    assert w.total_gold() == total
    assert w.market.ledger == ledger


# -- eat -------------------------------------------------------------------------------------


def test_eating_named_food_removes_its_nutrition_from_hunger() -> None:
    w = small_world(game={"hunger_per_tick": 0.0})
    a = add_agent(w, "Ann", 5, 5, items={"apple": 2}, hunger=60.0)
    give_plan(w, a, act("eat", item="apple"))
    events = run(w, 1)
    assert w.store.get(a, c.Needs).hunger == pytest.approx(38.0)
    assert goods_of(w, a) == {"apple": 1}
    [ev] = of_type(events, "eat")
    assert (ev["item"], ev["hunger"]) == ("apple", 38.0)
    assert w.counters["meals"] == 1


def test_eating_without_a_name_takes_the_most_filling_food_and_stops_at_zero() -> None:
    w = small_world(game={"hunger_per_tick": 0.0})
    a = add_agent(w, "Ann", 5, 5, items={"berries": 3, "meat": 1, "bread": 1}, hunger=20.0)
    give_plan(w, a, act("eat"))
    run(w, 1)
    assert goods_of(w, a) == {"berries": 3, "bread": 1}
    assert w.store.get(a, c.Needs).hunger == 0.0


@pytest.mark.parametrize(("items", "args", "reason"), [
    ({"stone": 1}, {"item": "stone"}, "stone is not food"),
    ({"stone": 1}, {}, "no food carried"),
    ({"apple": 1}, {"item": "bread"}, "not carrying any bread"),
])
def test_eating_what_cannot_be_eaten_fails(items, args, reason) -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items=items, hunger=50.0)
    give_plan(w, a, act("eat", **args))
    assert _reasons(run(w, 1)) == [reason]
    assert goods_of(w, a) == items


# -- use -------------------------------------------------------------------------------------


def test_using_a_herb_heals_up_to_the_maximum() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items={"herb": 2}, health=60.0, hunger=90.0)
    give_plan(w, a, act("use", item="herb"), act("use", item="herb"))
    events = run(w, 2)
    assert w.store.get(a, c.Needs).health == 100.0
    assert [e["health"] for e in of_type(events, "use")] == [85.0, 100.0]
    assert goods_of(w, a) == {}


def test_using_an_item_that_does_not_heal_fails() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items={"club": 1})
    give_plan(w, a, act("use", item="club"))
    [reason] = _reasons(run(w, 1))
    assert reason.startswith("club cannot be used")
    assert goods_of(w, a) == {"club": 1}


def test_harvesting_a_bush_yields_berries_and_lowers_its_stock() -> None:
    w = small_world(game={"object_regrow_ticks": 400})
    a = add_agent(w, "Ann", 5, 5)
    bush = w.spawn_object("berry_bush", 9, 5)
    give_plan(w, a, act("use", target=bush))
    events = run(w, 12)
    [ev] = of_type(events, "harvest")
    assert (ev["object"], ev["item"]) == ("berry_bush", "berries")
    obj = w.store.get(bush, c.StaticObject)
    assert obj.stock == 3
    assert obj.regrow_at == ev["tick"] + 400
    assert goods_of(w, a) == {"berries": 1}


def test_harvesting_a_tree_from_beside_it_yields_apples_or_wood() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    tree = w.spawn_object("tree", 6, 5)
    give_plan(w, a, act("use", target=tree), act("use", target=tree), act("use", target=tree))
    events = run(w, 3)
    assert len(of_type(events, "harvest")) == 3
    assert sum(goods_of(w, a).values()) == 3
    assert set(goods_of(w, a)) <= {"apple", "wood"}
    assert w.store.get(tree, c.StaticObject).stock == 0
    assert pos(w, a) == (5, 5)


def test_harvesting_an_empty_bush_fails() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    bush = w.spawn_object("berry_bush", 6, 5)
    w.store.get(bush, c.StaticObject).stock = 0
    give_plan(w, a, act("use", target=bush))
    assert _reasons(run(w, 1)) == [f"nothing left on berry_bush#{bush}"]
    assert goods_of(w, a) == {}


def test_using_an_item_on_the_ground_as_an_object_fails() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    item = w.spawn_item("wood", 1, 6, 5)
    give_plan(w, a, act("use", target=item))
    assert _reasons(run(w, 1)) == [f"wood#{item} is not an object"]


def test_using_a_shelter_starts_a_rest() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, energy=40.0)
    shelter = w.spawn_object("shelter", 6, 5)
    give_plan(w, a, act("use", target=shelter))
    run(w, 1)
    assert w.store.get(a, c.Intent).action == Action(name="rest")


# -- rest and idle ---------------------------------------------------------------------------


def test_rest_ends_after_its_ticks() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, energy=10.0)
    give_plan(w, a, act("rest", ticks=5))
    run(w, 5)
    assert w.store.get(a, c.Intent).action == Action(name="rest", args={"ticks": 5})
    run(w, 1)
    assert w.store.get(a, c.Intent).action != Action(name="rest", args={"ticks": 5})
    assert w.store.get(a, c.Intent).last_result == "ok"


def test_rest_ends_when_fully_rested() -> None:
    w = small_world(game={"rest_energy_per_tick": 1.0})
    a = add_agent(w, "Ann", 5, 5, energy=97.5)
    give_plan(w, a, act("rest"))
    run(w, 4)  # rest starts at tick 1; +1 at ticks 2 and 3, full at tick 4 and it stops
    intent = w.store.get(a, c.Intent)
    assert w.store.get(a, c.Needs).energy == 100.0
    assert intent.action is None or intent.action.name == "idle"


# -- say -------------------------------------------------------------------------------------


def test_speech_reaches_agents_within_hearing_range_only() -> None:
    w = small_world(game={"hearing_radius": 4})
    speaker = add_agent(w, "Ann", 5, 5)
    near = add_agent(w, "Near", 9, 5)
    far = add_agent(w, "Far", 10, 5)
    give_plan(w, near, act("idle", ticks=100))
    give_plan(w, far, act("idle", ticks=100))
    give_plan(w, speaker, act("say", text="Hello there", to=near))
    events = run(w, 1)
    [ev] = of_type(events, "say")
    assert (ev["text"], ev["heard_by"], ev["to"], ev["to_name"]) == ("Hello there", 1, near, "Near")
    heard = w.store.get(near, c.Perception).heard
    assert heard == [{"tick": 1, "from": speaker, "name": "Ann", "text": "Hello there",
                      "to": near}]
    assert w.store.get(far, c.Perception).heard == []
    assert w.store.get(speaker, c.Perception).heard == []
    assert _social(w, speaker).last_spoke == 1


def test_each_listener_remembers_only_the_last_five_lines() -> None:
    w = small_world()
    speaker = add_agent(w, "Ann", 5, 5)
    listener = add_agent(w, "Bob", 6, 5)
    give_plan(w, listener, act("idle", ticks=100))
    give_plan(w, speaker, *[act("say", text=f"line {i}") for i in range(7)], stay=False)
    run(w, 7)
    heard = w.store.get(listener, c.Perception).heard
    assert [h["text"] for h in heard] == [f"line {i}" for i in range(2, 7)]


# -- give ------------------------------------------------------------------------------------


def test_give_walks_within_trade_range_and_hands_over_the_goods() -> None:
    w = small_world(game={"trade_range": 2})
    a = add_agent(w, "Ann", 2, 5, items={"bread": 3})
    b = add_agent(w, "Bob", 9, 5)
    give_plan(w, a, act("give", target=b, item="bread", qty=2))
    give_plan(w, b, act("idle", ticks=50))
    events = run(w, 20)
    [ev] = of_type(events, "gift")
    assert (ev["agent"], ev["target"], ev["item"], ev["qty"]) == (a, b, "bread", 2)
    assert pos(w, a) == (7, 5)
    assert goods_of(w, a) == {"bread": 1}
    assert goods_of(w, b) == {"bread": 2}
    assert _social(w, b).relationships[a] == pytest.approx(0.15)
    assert _social(w, a).relationships[b] == pytest.approx(0.05)
    assert _social(w, a).reputation == pytest.approx(0.01)


def test_giving_more_than_carried_fails() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, gold=3)
    b = add_agent(w, "Bob", 6, 5)
    give_plan(w, a, act("give", target=b, item="gold", qty=5))
    assert _reasons(run(w, 1)) == ["carrying 3 gold, not 5"]
    assert goods_of(w, a) == {"gold": 3}
    assert goods_of(w, b) == {}


def test_giving_to_an_item_fails() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items={"apple": 1})
    item = w.spawn_item("stone", 1, 6, 5)
    give_plan(w, a, act("give", target=item, item="apple"))
    assert _reasons(run(w, 1)) == [f"stone#{item} is not a living agent"]
    assert goods_of(w, a) == {"apple": 1}


# -- trade -----------------------------------------------------------------------------------


def _pair(w, a_goods, b_goods, gap=1):
    a = add_agent(w, "Ann", 5, 5, items=a_goods.get("items"), gold=a_goods.get("gold", 0))
    b = add_agent(w, "Bob", 5 + gap, 5, items=b_goods.get("items"), gold=b_goods.get("gold", 0))
    give_plan(w, b, act("idle", ticks=100))
    return a, b


def test_trade_offer_opens_an_offer_that_expires_later() -> None:
    w = small_world(game={"offer_ttl_ticks": 40})
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 10})
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 2}, want={"gold": 5}))
    events = run(w, 1)
    [ev] = of_type(events, "trade_offer")
    oid = ev["offer"]
    assert w.market.offers[oid] == {"id": oid, "from": a, "to": b, "give": {"wood": 2},
                             "want": {"gold": 5}, "expires": 41}
    assert w.market.offers_to == {b: [oid]}
    assert _social(w, a).last_offer == 1
    assert goods_of(w, a) == {"wood": 3}  # nothing changes hands yet


def test_offering_what_you_do_not_have_fails() -> None:
    w = small_world()
    a, b = _pair(w, {"items": {"wood": 1}}, {"gold": 10})
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 2}, want={"gold": 5}))
    assert _reasons(run(w, 1)) == ["cannot offer 2 wood (has 1)"]
    assert w.market.offers == {}


def test_a_second_offer_to_the_same_agent_waits_for_the_first_answer() -> None:
    w = small_world()
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 10})
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 1}, want={"gold": 1}),
              act("trade_offer", target=b, give={"wood": 2}, want={"gold": 2}))
    events = run(w, 2)
    assert len(of_type(events, "trade_offer")) == 1
    assert _reasons(events) == [f"already waiting for Bob#{b} to answer"]
    assert len(w.market.offers) == 1


def test_accepting_swaps_the_goods_and_builds_goodwill() -> None:
    w = small_world()
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 10, "items": {"apple": 1}})
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 2}, want={"gold": 5}))
    oid = of_type(run(w, 1), "trade_offer")[0]["offer"]
    give_plan(w, b, act("trade_accept", offer=oid))
    events = run(w, 1)
    [ev] = of_type(events, "trade")
    assert (ev["agent"], ev["target"], ev["offer"]) == (a, b, oid)
    assert goods_of(w, a) == {"wood": 1, "gold": 5}
    assert goods_of(w, b) == {"wood": 2, "gold": 5, "apple": 1}
    assert w.market.offers == {}
    assert w.market.offers_to == {}
    for x, y in ((a, b), (b, a)):
        assert _social(w, x).relationships[y] == pytest.approx(0.1)
        assert _social(w, x).reputation == pytest.approx(0.02)
    assert w.counters["trades"] == 1


def test_a_trade_falls_through_when_the_sender_no_longer_has_the_goods() -> None:
    w = small_world()
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 10})
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 3}, want={"gold": 5}),
              act("drop", item="wood"))
    oid = of_type(run(w, 2), "trade_offer")[0]["offer"]
    give_plan(w, b, act("trade_accept", offer=oid))
    events = run(w, 1)
    assert _undone(events) == ["the trade fell through: missing 3 wood (has 2)"]
    [undone] = of_type(events, "trade_undone")
    assert (undone["agent"], undone["target"], undone["offer"]) == (b, a, oid)
    assert goods_of(w, a) == {"wood": 2}
    assert goods_of(w, b) == {"gold": 10}
    assert w.market.offers == {}


def test_a_trade_falls_through_when_the_receiver_cannot_pay() -> None:
    w = small_world()
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 4})
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 1}, want={"gold": 5}))
    oid = of_type(run(w, 1), "trade_offer")[0]["offer"]
    give_plan(w, b, act("trade_accept", offer=oid))
    assert _undone(run(w, 1)) == ["the trade fell through: missing 5 gold (has 4)"]
    assert goods_of(w, a) == {"wood": 3}
    assert goods_of(w, b) == {"gold": 4}


def test_accepting_fails_when_the_sender_walked_away() -> None:
    w = small_world(game={"trade_range": 3})
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 10})
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 1}, want={"gold": 1}),
              act("move_to", x=15, y=5))
    oid = of_type(run(w, 1), "trade_offer")[0]["offer"]
    run(w, 20)
    give_plan(w, b, act("trade_accept", offer=oid))
    assert _undone(run(w, 1)) == [f"Ann#{a} is no longer near"]
    assert w.market.offers == {}
    assert goods_of(w, b) == {"gold": 10}


def test_only_the_addressee_can_accept_or_decline() -> None:
    w = small_world()
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 10})
    c3 = add_agent(w, "Cid", 5, 6, gold=10)
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 1}, want={"gold": 1}))
    oid = of_type(run(w, 1), "trade_offer")[0]["offer"]
    give_plan(w, c3, act("trade_accept", offer=oid), act("trade_decline", offer=oid))
    events = run(w, 2)
    assert _reasons(events) == [f"no open offer {oid} to you"] * 2
    assert oid in w.market.offers


def test_declining_closes_the_offer_and_moves_nothing() -> None:
    w = small_world()
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 10})
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 1}, want={"gold": 1}))
    oid = of_type(run(w, 1), "trade_offer")[0]["offer"]
    give_plan(w, b, act("trade_decline", offer=oid))
    events = run(w, 1)
    [ev] = of_type(events, "trade_declined")
    assert (ev["agent"], ev["target"], ev["offer"]) == (b, a, oid)
    assert w.market.offers == {}
    assert goods_of(w, a) == {"wood": 3}
    assert goods_of(w, b) == {"gold": 10}


def test_trade_offer_reach_follows_the_trade_range_setting() -> None:
    """game.trade_range is documented as "offers and gifts reach this many tiles", but the
    reach of trade_offer (3) and give (2) is fixed in ACTIONS."""
    w = small_world(game={"trade_range": 1})
    a, b = _pair(w, {"items": {"wood": 3}}, {"gold": 10}, gap=3)
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 1}, want={"gold": 1}))
    events = run(w, 10)
    [ev] = of_type(events, "trade_offer")
    assert ev["tick"] > 1  # had to walk closer first
    assert max(abs(pos(w, a)[0] - pos(w, b)[0]), abs(pos(w, a)[1] - pos(w, b)[1])) <= 1


# -- steal -----------------------------------------------------------------------------------


def test_a_successful_theft_moves_goods_from_victim_to_thief() -> None:
    w = small_world(game={"steal_success_chance": 1.0})
    thief = add_agent(w, "Thief", 5, 5, personality="aggressive")
    victim = add_agent(w, "Victim", 6, 5, gold=20)
    give_plan(w, victim, act("idle", ticks=100))
    give_plan(w, thief, act("steal", target=victim))
    events = run(w, 1)
    [ev] = of_type(events, "theft")
    assert ev["success"] and ev["item"] == "gold"
    assert 1 <= ev["qty"] <= 10
    assert goods_of(w, thief) == {"gold": ev["qty"]}
    assert goods_of(w, victim) == {"gold": 20 - ev["qty"]}
    assert w.store.get(thief, c.Intent).last_result == "ok"


def test_a_failed_theft_is_noticed_and_costs_reputation() -> None:
    w = small_world(game={"steal_success_chance": 0.0})
    thief = add_agent(w, "Thief", 5, 5, personality="aggressive")
    victim = add_agent(w, "Victim", 6, 5, items={"sword": 1})
    witness = add_agent(w, "Witness", 8, 8)
    give_plan(w, victim, act("idle", ticks=100))
    give_plan(w, witness, act("idle", ticks=100))
    give_plan(w, thief, act("steal", target=victim))
    events = run(w, 1)
    [ev] = of_type(events, "theft")
    assert (ev["success"], ev["noticed"], ev["qty"]) == (False, True, 0)
    assert _reasons(events) == [f"Victim#{victim} caught me"]
    assert goods_of(w, victim) == {"sword": 1}
    assert _social(w, thief).reputation == pytest.approx(-w.rules.steal_reputation_cost)
    assert _social(w, victim).relationships[thief] == pytest.approx(-0.5)
    assert _social(w, witness).relationships[thief] == pytest.approx(-0.2)
    assert w.counters["failed_thefts"] == 1


def test_stealing_from_someone_with_nothing_fails() -> None:
    w = small_world(game={"steal_success_chance": 1.0})
    thief = add_agent(w, "Thief", 5, 5, personality="aggressive")
    victim = add_agent(w, "Victim", 6, 5)
    give_plan(w, victim, act("idle", ticks=100))
    give_plan(w, thief, act("steal", target=victim))
    events = run(w, 1)
    [ev] = of_type(events, "theft")
    assert not ev["success"]
    assert goods_of(w, thief) == {}


# -- starting an action ----------------------------------------------------------------------


@pytest.mark.parametrize(("target", "reason"), [
    ("self", "cannot attack yourself"),
    ("far", "Far#{far} is out of sight"),
    (999, "#999 does not exist"),
])
def test_targeted_actions_are_checked_before_they_start(target, reason) -> None:
    w = small_world(game={"vision_radius": 4})
    a = add_agent(w, "Ann", 2, 2, personality="aggressive")
    far = add_agent(w, "Far", 9, 2)  # Chebyshev 7 > vision 4 + 2
    give_plan(w, far, act("idle", ticks=100))
    ids = {"self": a, "far": far}
    give_plan(w, a, act("attack", target=ids.get(target, target)))
    events = run(w, 1)
    assert _reasons(events) == [reason.format(far=far)]
    assert of_type(events, "attack") == []
    assert pos(w, a) == (2, 2)


def test_an_action_running_past_the_timeout_fails() -> None:
    w = small_world(game={"action_timeout_ticks": 10})
    a = add_agent(w, "Ann", 5, 5)
    b = add_agent(w, "Bob", 7, 5)
    give_plan(w, b, act("idle", ticks=5), act("idle", ticks=5), stay=False)
    give_plan(w, a, act("follow", target=b))  # no duration of its own: the timeout rules
    events = run(w, 12)
    [failed] = [e for e in of_type(events, "action_failed") if e["agent"] == a]
    assert (failed["reason"], failed["tick"]) == ("timed out", 12)
    assert failed["action"] == f"follow(target={b})"


def test_an_action_with_its_own_duration_may_outlast_the_timeout() -> None:
    w = small_world(game={"action_timeout_ticks": 10})
    a = add_agent(w, "Ann", 5, 5)
    b = add_agent(w, "Bob", 7, 5)
    give_plan(w, b, act("idle", ticks=50))
    give_plan(w, a, act("follow", target=b, ticks=30))
    events = run(w, 35)
    assert [e for e in of_type(events, "action_failed") if e["agent"] == a] == []
    assert w.store.get(a, c.Intent).last_result == "ok"


def test_a_rest_as_long_as_the_action_set_allows_is_not_cut_short() -> None:
    """ACTIONS allows rest(ticks) up to 600 and follow(ticks) up to 1000, but the default
    game.action_timeout_ticks (300) fails any action older than 300 ticks as timed out."""
    w = small_world(game={"rest_energy_per_tick": 0.01})
    a = add_agent(w, "Ann", 5, 5, energy=10.0)
    give_plan(w, a, act("rest", ticks=400))
    events = run(w, 402)
    assert _reasons(events) == []
    assert w.store.get(a, c.Intent).last_result == "ok"
