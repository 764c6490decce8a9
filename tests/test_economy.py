"""Economy: prices follow supply and demand, offers expire, items respawn up to a cap,
harvested objects regrow."""

from __future__ import annotations

import pytest
from helpers import act, add_agent, give_plan, of_type, run, small_world

from agent_world.core import components as c
from agent_world.core.items import ITEMS
from agent_world.core.market import PRICE_CEILING, PRICE_FLOOR
from agent_world.core.systems.economy import (
    REGROW_CHECK_TICKS,
    market_demand,
    market_supply,
    update_prices,
)


def _hungry_village(w, n=4, hunger=90.0):
    return [add_agent(w, f"A{i}", 2 + 2 * i, 2, hunger=hunger) for i in range(n)]


# -- prices ----------------------------------------------------------------------------------


def test_supply_counts_goods_on_the_ground_and_carried() -> None:
    w = small_world()
    add_agent(w, "Ann", 5, 5, items={"apple": 2, "club": 1}, gold=9)
    w.spawn_item("apple", 3, 1, 1)
    w.spawn_item("gold", 4, 2, 2)
    supply = market_supply(w)
    assert (supply["apple"], supply["club"], supply["gold"], supply["meat"]) == (5, 1, 4, 0)


def test_demand_comes_from_hunger_wounds_unarmed_brutes_builders_and_offers() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, hunger=80.0, health=50.0)
    b = add_agent(w, "Bob", 6, 5, personality="aggressive")
    w.market.open(w.tick, a, b, {"apple": 1}, {"iron": 3})
    demand = market_demand(w)
    assert demand["bread"] == pytest.approx(0.8)
    assert demand["herb"] == pytest.approx(1.0)
    assert demand["sword"] == pytest.approx(0.5)
    assert demand["wood"] == pytest.approx(0.2)
    assert demand["iron"] == pytest.approx(3.2)
    assert demand["gold"] == 0.0


def test_scarce_food_that_hungry_agents_want_gets_dearer() -> None:
    w = small_world(game={"price_sensitivity": 0.15})
    _hungry_village(w)
    update_prices(w)
    # demand 4 * 0.9, supply 0, cushion 1: ratio 4.6, capped at 4 -> target 8
    assert w.market.prices["berries"] == pytest.approx(2.0 + 0.15 * (8.0 - 2.0))
    assert w.market.prices["meat"] > ITEMS["meat"].value


def test_a_glut_makes_goods_cheaper() -> None:
    w = small_world(game={"price_sensitivity": 0.15})
    _hungry_village(w, hunger=0.0)
    w.spawn_item("wood", 100, 10, 10)
    update_prices(w)
    # ratio (0.4 + 1) / (100 + 1) is under the floor: target 0.25 * 2
    assert w.market.prices["wood"] == pytest.approx(2.0 + 0.15 * (0.5 - 2.0))


def test_open_offers_raise_the_price_of_what_they_want() -> None:
    w = small_world(game={"price_sensitivity": 0.15})
    a, b = _hungry_village(w, n=2, hunger=0.0)
    w.market.open(w.tick, a, b, {"apple": 1}, {"iron": 6})
    update_prices(w)
    assert w.market.prices["iron"] == pytest.approx(8.0 + 0.15 * (8.0 * 4 - 8.0))


def test_prices_stay_within_floor_and_ceiling_and_gold_never_moves() -> None:
    w = small_world(game={"price_sensitivity": 1.0})
    _hungry_village(w, hunger=100.0)
    w.spawn_item("stone", 5000, 10, 10)
    for _ in range(20):
        update_prices(w)
    assert w.market.prices["meat"] == pytest.approx(ITEMS["meat"].value * PRICE_CEILING)
    assert w.market.prices["stone"] == pytest.approx(ITEMS["stone"].value * PRICE_FLOOR)
    assert w.market.prices["gold"] == 1.0
    for kind, spec in ITEMS.items():
        assert spec.value * PRICE_FLOOR <= w.market.prices[kind] <= spec.value * PRICE_CEILING


def test_a_big_price_move_is_announced() -> None:
    w = small_world(game={"price_update_interval_ticks": 5})
    ids = _hungry_village(w)
    for eid in ids:
        give_plan(w, eid, act("idle", ticks=100))
    events = run(w, 5)
    moves = {e["item"]: e for e in of_type(events, "price")}
    assert moves["berries"]["old"] == 2.0
    assert moves["berries"]["price"] == w.market.prices["berries"] > 2.0
    assert moves["berries"]["supply"] == 0
    assert {e["tick"] for e in moves.values()} == {5}


def test_prices_change_only_on_update_ticks() -> None:
    w = small_world(game={"price_update_interval_ticks": 50})
    for eid in _hungry_village(w):
        give_plan(w, eid, act("idle", ticks=100))
    base = dict(w.market.prices)
    run(w, 49)
    assert w.market.prices == base
    run(w, 1)
    assert w.market.prices["bread"] > base["bread"]


# -- offers ----------------------------------------------------------------------------------


def test_unanswered_offers_expire_after_their_ttl() -> None:
    w = small_world(game={"offer_ttl_ticks": 10})
    a = add_agent(w, "Ann", 5, 5, items={"wood": 2})
    b = add_agent(w, "Bob", 6, 5, gold=5)
    give_plan(w, b, act("idle", ticks=100))
    give_plan(w, a, act("trade_offer", target=b, give={"wood": 1}, want={"gold": 1}))
    oid = of_type(run(w, 1), "trade_offer")[0]["offer"]
    assert of_type(run(w, 9), "trade_expired") == []
    assert oid in w.market.offers
    [expired] = of_type(run(w, 1), "trade_expired")
    assert (expired["offer"], expired["agent"], expired["target"], expired["tick"]) == (
        oid, a, b, 11)
    assert w.market.offers == {}
    assert w.market.offers_to == {}
    give_plan(w, b, act("trade_accept", offer=oid))
    failed = of_type(run(w, 1), "action_failed")
    assert [e["reason"] for e in failed] == [f"no open offer {oid} to you"]
    assert w.store.get(b, c.Inventory).gold == 5


# -- item spawning ---------------------------------------------------------------------------


def test_items_appear_at_the_spawn_rate() -> None:
    # Nothing spoils or weathers away here: only spawns change the count.
    w = small_world(world={"item_spawn_rate": 0.25, "max_items_per_1000_tiles": 100},
                    game={"food_spoilage": 0.0, "ground_item_life_ticks": 0})
    start = len(w.ground.items)  # (a spawn onto a like stack would merge; none does here)
    run(w, 3)
    assert len(w.ground.items) == start
    run(w, 1)
    assert len(w.ground.items) == start + 1
    run(w, 36)
    assert len(w.ground.items) == start + 10


def test_ground_items_never_exceed_the_cap_and_a_full_map_banks_nothing() -> None:
    # 20 x 20 tiles at 25 per 1000 tiles: at most 10 items on the ground
    w = small_world(world={"item_spawn_rate": 3.0, "max_items_per_1000_tiles": 25})
    assert w.ground.capacity == 10
    for _ in range(30):
        run(w, 1)
        assert len(w.ground.items) <= 10
    assert len(w.ground.items) == 10
    assert w.ground.spawn_credit == 0.0
    [(iid, _item), *_rest] = w.store.query(c.Item)
    w.remove_entity(iid)
    assert len(w.ground.items) == 9
    run(w, 1)
    assert len(w.ground.items) == 10


def test_spawned_gold_is_booked_as_created() -> None:
    w = small_world(world={"item_spawn_rate": 2.0, "max_items_per_1000_tiles": 1000})
    run(w, 60)
    assert w.total_gold() > 0
    assert w.total_gold() == w.market.ledger["gold_created"] - w.market.ledger["gold_destroyed"]


# -- regrowth --------------------------------------------------------------------------------


def test_harvested_objects_regrow_one_unit_per_regrow_period() -> None:
    w = small_world(game={"object_regrow_ticks": 60})
    bush = w.spawn_object("berry_bush", 5, 5)
    obj = w.store.get(bush, c.StaticObject)
    assert obj.stock == 4
    obj.stock = 1
    w.ground.regrowing.add(bush)  # what a harvest does; only objects below full stock are visited
    history = {}
    for _ in range(5 * REGROW_CHECK_TICKS):
        run(w, 1)
        history[w.tick] = obj.stock
    # checks every 50 ticks; after each unit the next waits 60 ticks (the following check
    # but one)
    assert history[49] == 1
    assert history[50] == 2
    assert history[100] == 2
    assert history[150] == 3
    assert history[200] == 3
    assert history[250] == 4


def test_full_objects_do_not_grow_past_their_stock() -> None:
    w = small_world(game={"object_regrow_ticks": 1})
    tree = w.spawn_object("tree", 5, 5)
    shelter = w.spawn_object("shelter", 7, 7)
    run(w, 3 * REGROW_CHECK_TICKS)
    assert w.store.get(tree, c.StaticObject).stock == 3
    assert w.store.get(shelter, c.StaticObject).stock == 0
