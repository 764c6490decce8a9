"""Death (goods fall to the ground, killers get credit, offers lapse) and immigration."""

from __future__ import annotations

from collections import Counter

import orjson
from helpers import act, add_agent, give_plan, goods_of, ground, of_type, run, small_world

from agent_world.core import components as c
from agent_world.core.components import NO_ONE
from agent_world.core.world import World

# Worlds without estate dues and inheritance (the rule of worlds saved before them) drop all
# the gold too; tests/test_balance_estate.py covers the estate.
ALL_FALLS = {"estate_dues": 0.0, "inheritance": False}


def test_death_drops_every_carried_good_including_gold_where_the_agent_stood() -> None:
    w = small_world(game=ALL_FALLS)
    a = add_agent(w, "Ann", 7, 8, items={"apple": 2, "club": 1}, gold=13, health=-1.0)
    give_plan(w, a, act("idle", ticks=100))
    total = w.total_gold()
    [death] = of_type(run(w, 1), "death")
    assert a not in w.store
    assert w.population.find("Ann") is None
    assert ground(w, 7, 8) == {"apple": 2, "club": 1, "gold": 13}
    assert all(w.store.get(i, c.Item).owner == NO_ONE for i in w.ground.items.at(7, 8))
    assert death["dropped"] == {"apple": 2, "club": 1, "gold": 13}
    assert (death["x"], death["y"], death["cause"], death["killer"]) == (7, 8, "wounds", NO_ONE)
    assert w.total_gold() == total
    assert w.counters["deaths"] == 1


def test_goods_dropped_at_death_merge_with_a_stack_already_there() -> None:
    w = small_world()
    w.spawn_item("apple", 4, 3, 3)
    a = add_agent(w, "Ann", 3, 3, items={"apple": 1}, health=-1.0)
    give_plan(w, a, act("idle", ticks=100))
    run(w, 1)
    assert ground(w, 3, 3) == {"apple": 5}
    assert len(w.ground.items.at(3, 3)) == 1


def test_starving_to_death_is_reported_as_starvation() -> None:
    w = small_world(game={"starvation_damage_per_tick": 10.0})
    add_agent(w, "Ann", 5, 5, hunger=100.0, health=25.0)
    events = run(w, 3)
    [death] = of_type(events, "death")
    assert (death["cause"], death["tick"]) == ("starvation", 3)


def test_a_recent_attacker_gets_the_kill() -> None:
    w = small_world()
    killer = add_agent(w, "Brute", 5, 5, personality="aggressive")
    victim = add_agent(w, "Victim", 6, 5, health=-1.0)
    give_plan(w, killer, act("idle", ticks=100))
    combat = w.store.get(victim, c.Combat)
    combat.last_attacker, combat.last_attacked = killer, w.tick + 1 - 30
    [death] = of_type(run(w, 1), "death")
    assert death["killer"] == killer
    assert death["cause"] == f"killed by Brute#{killer}"
    assert w.store.get(killer, c.Agent).kills == 1
    assert w.store.get(killer, c.Memory).recent[-1]["text"] == f"killed Victim#{victim}"


def test_an_attack_long_ago_earns_no_kill() -> None:
    w = small_world()
    killer = add_agent(w, "Brute", 5, 5, personality="aggressive")
    victim = add_agent(w, "Victim", 6, 5, health=-1.0)
    give_plan(w, killer, act("idle", ticks=100))
    combat = w.store.get(victim, c.Combat)
    combat.last_attacker, combat.last_attacked = killer, w.tick + 1 - 31
    [death] = of_type(run(w, 1), "death")
    assert (death["killer"], death["cause"]) == (NO_ONE, "wounds")
    assert w.store.get(killer, c.Agent).kills == 0


def test_a_dead_attacker_gets_no_credit() -> None:
    w = small_world()
    killer = add_agent(w, "Brute", 5, 5, personality="aggressive")
    victim = add_agent(w, "Victim", 6, 5, health=-1.0)
    combat = w.store.get(victim, c.Combat)
    combat.last_attacker, combat.last_attacked = killer, w.tick
    w.remove_entity(killer)
    [death] = of_type(run(w, 1), "death")
    assert death["killer"] == NO_ONE


def test_death_cancels_offers_made_by_and_to_the_dead() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5, items={"wood": 5})
    b = add_agent(w, "Bob", 6, 5, gold=5)
    d = add_agent(w, "Dee", 7, 5, gold=5)
    for eid in (a, b, d):
        give_plan(w, eid, act("idle", ticks=100))
    w.market.open(w.tick, a, b, {"wood": 1}, {"gold": 1})
    w.market.open(w.tick, d, a, {"gold": 1}, {"wood": 1})
    kept = w.market.open(w.tick, d, b, {"gold": 1}, {"wood": 1})
    w.store.get(a, c.Needs).health = -1.0
    run(w, 1)
    assert list(w.market.offers) == [kept]
    assert w.market.offers_to == {b: [kept]}


def test_kill_input_names_the_cause_and_drops_the_goods() -> None:
    w = small_world(game=ALL_FALLS)
    a = add_agent(w, "Ann", 4, 4, items={"herb": 1}, gold=2)
    w.inbox.submit("kill", {"target": a, "cause": "lightning"})
    [death] = of_type(run(w, 1), "death")
    assert (death["cause"], death["killer"]) == ("lightning", NO_ONE)
    assert ground(w, 4, 4) == {"herb": 1, "gold": 2}


def test_anyone_may_pick_up_what_the_dead_left_without_theft() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 4, 4, items={"sword": 1}, health=-1.0)
    b = add_agent(w, "Bob", 6, 4)
    for eid in (a, b):
        give_plan(w, eid, act("idle", ticks=100))
    run(w, 1)
    [iid] = w.ground.items.at(4, 4)
    give_plan(w, b, act("pickup", target=iid))
    events = run(w, 6)
    assert goods_of(w, b) == {"sword": 1}
    assert of_type(events, "theft") == []


def test_immigrants_arrive_while_the_population_is_short() -> None:
    w = small_world(world={"starting_agents": 3, "immigration_interval_ticks": 10,
                           "personality_mix": {"cautious": 1.0}})
    ids = [eid for eid, _row in w.agents()]
    assert len(ids) == 3
    for eid in ids[:2]:
        w.inbox.submit("kill", {"target": eid})
    events = run(w, 35)
    arrivals = of_type(events, "spawn")
    assert [e["tick"] for e in arrivals] == [10, 20]
    assert len(w.agents()) == 3
    assert w.counters["immigrants"] == 2


def test_no_immigration_when_it_is_turned_off() -> None:
    w = small_world(world={"starting_agents": 2, "immigration_interval_ticks": 0,
                           "personality_mix": {"cautious": 1.0}})
    for eid, _row in list(w.agents()):
        w.inbox.submit("kill", {"target": eid})
    assert of_type(run(w, 50), "spawn") == []
    assert w.agents() == []


def test_the_personality_counts_follow_deaths_arrivals_and_a_reload() -> None:
    """Immigration reads how many agents of each personality live from counts kept as agents
    arrive and die; they must always equal a count of the living, loaded worlds included."""
    w = small_world(world={"starting_agents": 8, "immigration_interval_ticks": 5})

    def counted(world: World) -> dict[str, int]:
        return dict(Counter(row[0].personality for _eid, row in world.agents()))

    for step in range(4):
        victims = [eid for eid, row in w.agents() if row[0].personality != "trader"][:2]
        for eid in victims:
            w.inbox.submit("kill", {"target": eid})
        run(w, 12)
        assert w.population.personalities == counted(w), step
    assert w.counters["immigrants"] >= 4
    loaded = World.from_state(orjson.loads(w.state_bytes()), w.config)
    assert loaded.population.personalities == counted(loaded) == counted(w)
    for eid, _row in list(w.agents()):
        w.inbox.submit("kill", {"target": eid})
    w.step()
    assert w.population.personalities == counted(w)  # no personality left at a count of 0
