"""Combat: damage, cooldowns, energy, defence, reputation and the ends of a fight."""

from __future__ import annotations

import pytest
from helpers import act, add_agent, give_plan, of_type, pos, run, small_world

from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.systems.acting import start
from agent_world.core.systems.combat import combat_system, damage_of


def _attack(w, attacker, target) -> None:
    """Make ``attacker`` start attacking ``target`` now (no brain involved)."""
    start(w, w.store.get(attacker, c.Intent), Action(name="attack", args={"target": target}))


def _hits(w, ticks):
    """Run the combat system alone for ``ticks`` ticks; the attack events."""
    hits = []
    for _ in range(ticks):
        w.tick += 1
        combat_system(w)
        hits.extend({**e, "tick": w.tick} for e in w._events if e["type"] == "attack")
        w._events.clear()
    return hits


# -- damage ----------------------------------------------------------------------------------


def test_unarmed_damage_spans_80_to_120_percent_of_base() -> None:
    w = small_world(game={"base_attack_damage": 10.0, "combat_damage_multiplier": 1.0})
    inv = c.Inventory()
    assert damage_of(w, inv, 0.0, False) == pytest.approx(8.0)
    assert damage_of(w, inv, 0.5, False) == pytest.approx(10.0)
    assert damage_of(w, inv, 1.0, False) == pytest.approx(12.0)


def test_the_best_carried_weapon_counts_and_other_goods_do_not() -> None:
    w = small_world(game={"base_attack_damage": 6.0})
    inv = c.Inventory(items={"club": 2, "sword": 1, "iron": 5, "meat": 1})
    assert damage_of(w, inv, 0.5, False) == pytest.approx(6.0 + 11.0)


def test_defending_and_the_multiplier_scale_damage() -> None:
    w = small_world(game={"base_attack_damage": 6.0, "combat_damage_multiplier": 2.0,
                          "defend_damage_factor": 0.25})
    inv = c.Inventory(items={"club": 1})
    assert damage_of(w, inv, 0.5, False) == pytest.approx(20.0)
    assert damage_of(w, inv, 0.5, True) == pytest.approx(5.0)


def test_zero_multiplier_means_no_damage() -> None:
    w = small_world(game={"combat_damage_multiplier": 0.0})
    assert damage_of(w, c.Inventory(items={"sword": 1}), 1.0, False) == 0.0


# -- hitting ---------------------------------------------------------------------------------


def test_hits_follow_the_cooldown_and_cost_energy() -> None:
    w = small_world(game={"attack_cooldown_ticks": 6, "attack_energy_cost": 2.0,
                          "base_attack_damage": 5.0})
    a = add_agent(w, "Brute", 5, 5, personality="aggressive", energy=50.0)
    b = add_agent(w, "Victim", 6, 6)
    _attack(w, a, b)
    hits = _hits(w, 13)
    assert [h["tick"] for h in hits] == [1, 7, 13]
    assert all(4.0 <= h["damage"] <= 6.0 for h in hits)
    victim = w.store.get(b, c.Needs)
    assert victim.health == pytest.approx(100.0 - sum(h["damage"] for h in hits))
    assert hits[-1]["health"] == pytest.approx(victim.health)
    assert w.store.get(a, c.Needs).energy == pytest.approx(44.0)
    assert w.store.get(b, c.Combat).last_attacker == a
    assert w.store.get(b, c.Combat).last_attacked == 13
    assert w.counters["hits"] == 3


def test_no_hit_from_two_tiles_away() -> None:
    w = small_world()
    a = add_agent(w, "Brute", 5, 5, personality="aggressive")
    b = add_agent(w, "Victim", 7, 5)
    _attack(w, a, b)
    assert _hits(w, 10) == []
    assert w.store.get(b, c.Needs).health == 100.0


def test_a_defending_target_takes_reduced_damage() -> None:
    w = small_world(game={"base_attack_damage": 10.0, "defend_damage_factor": 0.5})
    a = add_agent(w, "Brute", 5, 5, personality="aggressive")
    b = add_agent(w, "Victim", 6, 5)
    w.store.get(b, c.Combat).defending_until = 100
    _attack(w, a, b)
    [hit] = _hits(w, 1)
    assert hit["defended"]
    assert 4.0 <= hit["damage"] <= 6.0


def test_defend_raises_the_guard_for_its_duration() -> None:
    w = small_world(game={"defend_duration_ticks": 30})
    a = add_agent(w, "Ann", 5, 5)
    give_plan(w, a, act("defend"))
    events = run(w, 1)
    assert [e["agent"] for e in of_type(events, "defend")] == [a]
    assert w.store.get(a, c.Combat).defending_until == 31
    assert w.store.get(a, c.Intent).last_result == "ok"


def test_an_unprovoked_attack_costs_reputation_and_goodwill() -> None:
    w = small_world(game={"attack_reputation_cost": 0.05})
    a = add_agent(w, "Brute", 5, 5, personality="aggressive")
    b = add_agent(w, "Victim", 6, 5)
    seer = add_agent(w, "Seer", 9, 9)
    _attack(w, a, b)
    [hit] = _hits(w, 1)
    assert not hit["provoked"]
    assert w.store.get(a, c.Social).reputation == pytest.approx(-0.05)
    assert w.store.get(b, c.Social).relationships[a] == pytest.approx(-0.25)
    assert w.store.get(seer, c.Social).relationships[a] == pytest.approx(-0.05)
    assert w.store.get(b, c.Memory).recent[-1]["text"] == f"Brute#{a} hit me for {hit['damage']:g}"


def test_hitting_back_is_provoked_and_costs_no_reputation() -> None:
    w = small_world()
    a = add_agent(w, "Brute", 5, 5, personality="aggressive")
    b = add_agent(w, "Victim", 6, 5)
    _attack(w, a, b)
    _hits(w, 1)
    w.store.get(a, c.Intent).action = None
    _attack(w, b, a)
    [hit] = _hits(w, 1)
    assert hit["provoked"]
    assert w.store.get(b, c.Social).reputation == 0.0
    assert w.store.get(a, c.Social).relationships[b] == pytest.approx(-0.25)


def test_attack_walks_up_to_the_target_first() -> None:
    w = small_world()
    a = add_agent(w, "Brute", 2, 5, personality="aggressive")
    b = add_agent(w, "Victim", 9, 5)
    give_plan(w, b, act("idle", ticks=100))
    give_plan(w, a, act("attack", target=b))
    events = run(w, 14)
    first = of_type(events, "attack")[0]
    assert first["agent"] == a
    assert first["tick"] == 11  # six steps, one every two ticks
    assert pos(w, a) == (8, 5)


def test_a_target_that_got_away_ends_the_attack() -> None:
    w = small_world(game={"vision_radius": 4})
    a = add_agent(w, "Brute", 2, 2, personality="aggressive")
    b = add_agent(w, "Victim", 3, 2)
    _attack(w, a, b)
    bp = w.store.get(b, c.Position)
    bp.x, bp.y = 12, 2
    w.agents_grid.moved(b)
    w.tick += 1
    combat_system(w)
    [failed] = [e for e in w._events if e["type"] == "action_failed"]
    assert failed["reason"] == f"Victim#{b} escaped"


def test_attacking_a_dead_target_ends_the_attack_quietly() -> None:
    w = small_world()
    a = add_agent(w, "Brute", 5, 5, personality="aggressive")
    b = add_agent(w, "Victim", 6, 5)
    _attack(w, a, b)
    w.remove_entity(b)
    assert _hits(w, 1) == []
    assert w.store.get(a, c.Intent).action is None
    assert w.store.get(a, c.Intent).last_result == "ok: target gone"


def test_attacking_an_item_fails() -> None:
    w = small_world()
    a = add_agent(w, "Brute", 5, 5, personality="aggressive")
    item = w.spawn_item("stone", 1, 6, 5)
    give_plan(w, a, act("attack", target=item))
    failed = of_type(run(w, 1), "action_failed")
    assert [e["reason"] for e in failed] == [f"stone#{item} cannot be attacked"]


def test_being_attacked_interrupts_a_plan() -> None:
    w = small_world()
    a = add_agent(w, "Brute", 5, 5, personality="aggressive")
    b = add_agent(w, "Victim", 6, 5)
    give_plan(w, b, act("idle", ticks=100), act("idle", ticks=100))
    give_plan(w, a, act("attack", target=b))
    run(w, 3)
    intent = w.store.get(b, c.Intent)
    assert intent.plan == []
    assert intent.plan_source == ""
    assert any(m["text"] == "plan interrupted: attacked"
               for m in w.store.get(b, c.Memory).recent)


def test_a_fight_to_the_death_credits_the_killer() -> None:
    w = small_world(game={"base_attack_damage": 30.0})
    a = add_agent(w, "Brute", 5, 5, personality="aggressive", items={"sword": 1})
    b = add_agent(w, "Victim", 6, 5, health=40.0)
    give_plan(w, a, act("attack", target=b))
    events = run(w, 20)
    [death] = of_type(events, "death")
    assert (death["agent"], death["killer"]) == (b, a)
    assert death["cause"] == f"killed by Brute#{a}"
    assert w.store.get(a, c.Agent).kills == 1
    assert b not in w.store
