"""Where goods and gold go: carrying capacity, spoilage, goods lost on the ground, gold
upkeep, the market fee, weapon wear, estates, old age and immigrants who fill the mix."""

from __future__ import annotations

import math

import pytest
from ability_helpers import FakeRunner, returns, spec, staged
from helpers import STAY, act, add_agent, give_plan, goods_of, ground, of_type, run, small_world

from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.goods import load, over_capacity
from agent_world.core.systems.census import census_figures
from agent_world.core.systems.lifecycle import newcomer_personality
from agent_world.core.world import World

QUIET = {"hunger_per_tick": 0.0, "energy_per_tick": 0.0, "health_regen_per_tick": 0.0}


def _reasons(events):
    return [e["reason"] for e in of_type(events, "action_failed")]


def _gold_balances(w: World) -> None:
    assert w.total_gold() == w.market.ledger["gold_created"] - w.market.ledger["gold_destroyed"]


# -- carrying capacity -------------------------------------------------------------------------


def test_a_pickup_takes_what_fits_and_leaves_the_rest_on_the_ground() -> None:
    w = small_world(game={"carry_capacity": 10.0})
    me = add_agent(w, "Me", 5, 5, items={"stone": 2})  # 8 of 10
    stack = w.spawn_item("berries", 5, 5, 6)  # 0.5 each: 4 fit
    give_plan(w, me, act("pickup", target=stack))
    [pickup] = of_type(run(w, 3), "pickup")
    assert pickup["qty"] == 4
    assert goods_of(w, me) == {"stone": 2, "berries": 4}
    assert ground(w, 5, 6) == {"berries": 1}
    assert load(w.store.get(me, c.Inventory)) == 10.0


def test_what_does_not_fit_is_neither_picked_up_nor_harvested_nor_received() -> None:
    w = small_world(game={"carry_capacity": 10.0, **QUIET})
    me = add_agent(w, "Me", 5, 5, items={"stone": 2, "apple": 2})  # full
    friend = add_agent(w, "Pal", 6, 5, items={"herb": 1})
    give_plan(w, friend, act("give", target=me, item="herb"))
    spear = w.spawn_item("spear", 1, 4, 5)
    bush = w.spawn_object("berry_bush", 5, 4)
    give_plan(w, me, act("pickup", target=spear), act("use", target=bush))
    events = run(w, 6)
    assert set(_reasons(events)) == {
        f"Me#{me} cannot carry 1 herb: carrying 10 of 10",
        f"cannot carry spear#{spear}: carrying 10 of 10",
        f"cannot carry the berries of berry_bush#{bush}: carrying 10 of 10"}
    assert goods_of(w, me) == {"stone": 2, "apple": 2}
    assert w.store.get(bush, c.StaticObject).stock == 4  # nothing taken


def test_a_trade_that_would_overload_the_buyer_is_undone() -> None:
    w = small_world(game={"carry_capacity": 10.0})
    seller = add_agent(w, "Sel", 5, 5, items={"stone": 2})
    buyer = add_agent(w, "Buy", 6, 5, items={"iron": 2}, gold=10)  # 8 of 10
    give_plan(w, seller, STAY)
    oid = w.market.open(w.tick, seller, buyer, {"stone": 1}, {"gold": 4})
    give_plan(w, buyer, act("trade_accept", offer=oid))
    events = run(w, 1)
    [undone] = of_type(events, "trade_undone")
    assert (undone["agent"], undone["target"], undone["offer"]) == (buyer, seller, oid)
    assert undone["reason"] == (f"the trade fell through: Buy#{buyer} cannot carry it "
                                "(carrying 8 of 10)")
    assert of_type(events, "trade") == [] and of_type(events, "action_failed") == []
    assert goods_of(w, buyer) == {"iron": 2, "gold": 10}


def test_a_thief_takes_only_what_it_can_carry() -> None:
    w = small_world(game={"carry_capacity": 10.0, "steal_success_chance": 1.0})
    thief = add_agent(w, "Th", 5, 5, personality="aggressive", items={"stone": 2})  # 8
    victim = add_agent(w, "Vi", 6, 5, items={"stone": 3, "berries": 2})
    give_plan(w, victim, STAY)
    give_plan(w, thief, act("steal", target=victim))
    [theft] = of_type(run(w, 1), "theft")
    assert theft["success"] and theft["item"] == "berries"  # the only goods that fit


def test_an_ability_cannot_give_more_than_its_receiver_can_carry() -> None:
    runner = FakeRunner(returns({"type": "create_item", "item": "apple", "qty": 3}))
    w, caster, _target = staged(runner, spec("conjure"), game={"carry_capacity": 14.0})
    # the caster carries 5 wood and 2 apples: 17 of 14 (staged gives them); make room for 2
    w.store.get(caster, c.Inventory).items = {"wood": 4}  # 12 of 14
    give_plan(w, caster, act("use_ability", ability="conjure"))
    [failed] = of_type(run(w, 1), "action_failed")
    assert failed["reason"] == (f"conjure: effect 0 (create_item): Cas#{caster} cannot carry "
                                "3 more apple (carrying 12 of 14)")


def test_the_census_counts_agents_over_their_capacity() -> None:
    w = small_world(game={"carry_capacity": 10.0, **QUIET})
    me = add_agent(w, "Me", 5, 5)
    add_agent(w, "You", 8, 8, items={"apple": 3})
    give_plan(w, me, STAY)
    w.inbox.submit("give", {"target": me, "item": "sword", "qty": 3})  # the operator may
    run(w, 1)
    inv = w.store.get(me, c.Inventory)
    assert over_capacity(w, inv)
    figures = census_figures(w)
    assert figures["over_capacity"] == 1
    assert figures["load"] == {"p50": 15.0, "max": 15.0, "capacity": 10.0}
    unlimited = small_world(game={"carry_capacity": 0.0})
    add_agent(unlimited, "Big", 5, 5, items={"stone": 1000})
    assert census_figures(unlimited)["over_capacity"] == 0


def test_an_overloaded_agent_sheds_what_is_worth_least_for_its_weight() -> None:
    w = small_world(game={"carry_capacity": 20.0, **QUIET})
    me = add_agent(w, "Me", 5, 5, items={"stone": 5, "apple": 3})  # 23 of 20
    events = run(w, 40)
    drops = [e for e in of_type(events, "drop") if e["agent"] == me]
    assert drops and drops[0]["item"] == "stone"
    assert load(w.store.get(me, c.Inventory)) <= 20.0


# -- spoilage and goods lost on the ground -----------------------------------------------------


def test_carried_food_spoils_at_its_shelf_life_and_other_goods_keep() -> None:
    w = small_world(seed=3, game={"food_spoilage": 1.0, "carry_capacity": 0.0, **QUIET})
    me = add_agent(w, "Me", 5, 5, items={"berries": 200, "wood": 10})
    give_plan(w, me, *[act("idle", ticks=100)] * 45, stay=False)
    events = run(w, 4000)  # the berries' shelf life: about 1/e of them are left
    left = goods_of(w, me)
    assert left["wood"] == 10
    assert 200 * math.exp(-1) * 0.75 < left["berries"] < 200 * math.exp(-1) * 1.3
    spoiled = sum(sum(e["goods"].values()) for e in of_type(events, "spoiled"))
    assert spoiled == 200 - left["berries"] == w.counters["goods_spoiled"]


def test_goods_left_on_the_ground_are_lost_but_gold_stays() -> None:
    w = small_world(seed=4, game={"ground_item_life_ticks": 1000, "food_spoilage": 0.0})
    for x in range(10):
        w.spawn_item("stone", 1, x, 2)
    w.spawn_item("gold", 7, 3, 3, source="test")
    run(w, 4000)
    stones = sum(ground(w, x, 2).get("stone", 0) for x in range(10))
    assert stones <= 3
    assert ground(w, 3, 3) == {"gold": 7}
    assert w.counters["goods_lost"] == 10 - stones
    assert w.ground.goods.get("stone", 0) == stones


def test_without_spoilage_nothing_rots() -> None:
    w = small_world(game={"food_spoilage": 0.0, "ground_item_life_ticks": 0, **QUIET})
    me = add_agent(w, "Me", 5, 5, items={"berries": 50})
    give_plan(w, me, *[act("idle", ticks=100)] * 12, stay=False)
    w.spawn_item("apple", 3, 9, 9)
    run(w, 1000)
    assert goods_of(w, me) == {"berries": 50} and ground(w, 9, 9) == {"apple": 3}


# -- gold --------------------------------------------------------------------------------------


def test_gold_upkeep_takes_a_share_of_what_is_above_the_free_purse() -> None:
    w = small_world(seed=6, game={"gold_upkeep_per_hour": 10.0, "upkeep_free_gold": 20,
                                  **QUIET})
    rich = add_agent(w, "Rich", 5, 5, gold=1020)
    poor = add_agent(w, "Poor", 9, 9, gold=20)
    for eid in (rich, poor):
        give_plan(w, eid, *[act("idle", ticks=100)] * 40, stay=False)
    run(w, 3600)  # a tenth of a world-hour at ten times the hourly share: about 1/e left
    assert w.store.get(poor, c.Inventory).gold == 20
    left = w.store.get(rich, c.Inventory).gold - 20
    assert 1000 * math.exp(-1) * 0.85 < left < 1000 * math.exp(-1) * 1.15
    assert w.counters["upkeep_gold"] == 1000 - left == w.market.ledger["gold_destroyed"]
    _gold_balances(w)


def test_the_market_takes_its_fee_from_the_gold_paid() -> None:
    w = small_world(game={"market_fee": 0.1})
    seller = add_agent(w, "Sel", 5, 5, items={"herb": 1})
    buyer = add_agent(w, "Buy", 6, 5, gold=30)
    give_plan(w, seller, STAY)
    oid = w.market.open(w.tick, seller, buyer, {"herb": 1}, {"gold": 20})
    give_plan(w, buyer, act("trade_accept", offer=oid))
    [trade] = of_type(run(w, 1), "trade")
    assert trade["fee"] == 2
    assert goods_of(w, seller) == {"gold": 18}
    assert goods_of(w, buyer) == {"herb": 1, "gold": 10}
    assert w.counters["market_fees"] == 2 and w.market.ledger["gold_destroyed"] == 2
    _gold_balances(w)


def test_a_hit_may_break_the_weapon_it_was_struck_with() -> None:
    w = small_world(game={"weapon_wear": 1.0})
    brute = add_agent(w, "Bru", 5, 5, personality="aggressive", items={"club": 1, "sword": 1})
    victim = add_agent(w, "Vic", 6, 5)
    give_plan(w, victim, STAY)
    give_plan(w, brute, act("attack", target=victim))
    events = run(w, 2)
    [broke] = of_type(events, "weapon_broke")
    assert broke["item"] == "sword"  # the best one carried
    assert goods_of(w, brute) == {"club": 1}
    assert w.counters["weapons_broken"] == 1


# -- estates -----------------------------------------------------------------------------------


def test_a_dead_agents_gold_pays_dues_and_goes_to_its_heirs_never_its_killer() -> None:
    w = small_world(game={"estate_dues": 0.5, "inheritance": True, **QUIET})
    dead = add_agent(w, "Old", 5, 5, gold=101, items={"apple": 1})
    killer = add_agent(w, "Kil", 6, 5, personality="aggressive")
    heirs = [add_agent(w, name, 9, y) for name, y in (("Ann", 2), ("Bob", 4), ("Cid", 6),
                                                      ("Dee", 8))]
    rel = w.store.get(dead, c.Social).relationships
    rel.update({killer: 0.9, heirs[0]: 0.5, heirs[1]: 0.7, heirs[2]: 0.3, heirs[3]: 0.1})
    for eid in (dead, killer, *heirs):
        give_plan(w, eid, STAY)
    combat = w.store.get(dead, c.Combat)
    combat.last_attacker, combat.last_attacked = killer, -5  # a blow just before tick 1
    w.store.get(dead, c.Needs).health = -1.0
    [death] = of_type(run(w, 1), "death")
    assert death["cause"] == f"killed by Kil#{killer}"
    assert death["estate_lost"] == 50
    # 51 left, in three shares, the best liked first (the killer and Dee, liked too little,
    # get nothing)
    assert death["heirs"] == [{"agent": heirs[1], "name": "Bob", "gold": 17},
                              {"agent": heirs[0], "name": "Ann", "gold": 17},
                              {"agent": heirs[2], "name": "Cid", "gold": 17}]
    assert w.store.get(killer, c.Inventory).gold == 0
    assert w.store.get(heirs[3], c.Inventory).gold == 0
    assert ground(w, 5, 5) == {"apple": 1}
    assert w.counters["estate_gold"] == 50
    _gold_balances(w)


def test_without_heirs_the_rest_of_the_gold_falls_where_the_agent_died() -> None:
    w = small_world(game={"estate_dues": 0.25, "inheritance": True})
    dead = add_agent(w, "Old", 5, 5, gold=40, health=-1.0)
    give_plan(w, dead, STAY)
    [death] = of_type(run(w, 1), "death")
    assert death["estate_lost"] == 10 and "heirs" not in death
    assert ground(w, 5, 5) == {"gold": 30}
    _gold_balances(w)


# -- age and arrivals --------------------------------------------------------------------------


def test_agents_past_their_lifespan_die_of_old_age() -> None:
    w = small_world(game={"lifespan_ticks": 100, **QUIET})
    old = add_agent(w, "Old", 5, 5)
    give_plan(w, old, *[act("idle", ticks=100)] * 100, stay=False)
    events = run(w, 60_000)
    [death] = of_type(events, "death")
    assert death["cause"] == "old age" and death["age"] > 100
    assert death["tick"] % 1000 == 0
    assert w.counters["deaths_of_old_age"] == 1


def test_the_first_agents_of_a_world_are_of_all_ages() -> None:
    w = World.create(Config().replace(game={"lifespan_ticks": 100_000}), seed=11)
    borns = [row[0].born for _eid, row in w.agents()]
    assert all(-50_000 <= b <= 0 for b in borns)
    assert len(set(borns)) == len(borns)
    w.close()


def test_newcomers_take_the_personality_the_population_lacks_most() -> None:
    mix = {"aggressive": 1.0, "cautious": 1.0, "gatherer": 2.0, "trader": 0.0}
    w = small_world(world={"personality_mix": mix, "starting_agents": 0})
    for i, personality in enumerate(["cautious", "gatherer", "gatherer", "cautious"]):
        add_agent(w, f"A{i}", 2 + i, 2, personality=personality)
    assert newcomer_personality(w) == "aggressive"  # missing first
    add_agent(w, "Bru", 9, 9, personality="aggressive")
    assert newcomer_personality(w) == "gatherer"  # 2 of a share of 3 in 6


@pytest.mark.parametrize("fill", [True, False])
def test_a_missing_personality_arrives_even_in_a_full_world(fill: bool) -> None:
    w = small_world(world={"starting_agents": 0, "immigration_interval_ticks": 10,
                           "immigrants_fill_mix": fill}, game=QUIET)
    for i in range(2):
        give_plan(w, add_agent(w, f"C{i}", 3 + i, 3), STAY)  # two cautious: no one is short
    run(w, 1)
    arrivals = of_type(run(w, 40), "spawn")
    if fill:
        assert [a["personality"] for a in arrivals] == ["aggressive", "gatherer", "trader"]
    else:
        assert arrivals == []
