"""Needs: hunger, energy (drain and rest, faster by a shelter), starvation and regeneration."""

from __future__ import annotations

import pytest
from helpers import act, add_agent, give_plan, run, small_world

from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.systems.needs import needs_system


def _needs(w, eid):
    return w.store.get(eid, c.Needs)


def test_hunger_grows_by_the_configured_rate_each_tick() -> None:
    w = small_world(game={"hunger_per_tick": 0.5})
    a = add_agent(w, "Ann", 5, 5, hunger=10.0)
    for _ in range(4):
        needs_system(w)
    assert _needs(w, a).hunger == pytest.approx(12.0)


def test_hunger_is_capped_at_100() -> None:
    w = small_world(game={"hunger_per_tick": 3.0})
    a = add_agent(w, "Ann", 5, 5, hunger=99.0)
    needs_system(w)
    assert _needs(w, a).hunger == 100.0
    needs_system(w)
    assert _needs(w, a).hunger == 100.0


def test_energy_drains_while_not_resting_and_never_goes_below_zero() -> None:
    w = small_world(game={"energy_per_tick": 0.4})
    a = add_agent(w, "Ann", 5, 5, energy=1.0)
    needs_system(w)
    needs_system(w)
    assert _needs(w, a).energy == pytest.approx(0.2)
    needs_system(w)
    assert _needs(w, a).energy == 0.0


def test_resting_regains_energy_up_to_100() -> None:
    w = small_world(game={"rest_energy_per_tick": 0.6})
    a = add_agent(w, "Ann", 5, 5, energy=50.0)
    w.store.get(a, c.Intent).action = Action(name="rest")
    needs_system(w)
    assert _needs(w, a).energy == pytest.approx(50.6)
    _needs(w, a).energy = 99.9
    needs_system(w)
    assert _needs(w, a).energy == 100.0


@pytest.mark.parametrize("where", [(6, 5), (5, 5), (5, 4)])
def test_resting_beside_a_shelter_multiplies_the_gain(where: tuple[int, int]) -> None:
    w = small_world(game={"rest_energy_per_tick": 0.5, "shelter_rest_multiplier": 3.0})
    w.spawn_object("shelter", *where)
    a = add_agent(w, "Ann", 5, 5, energy=40.0)
    w.store.get(a, c.Intent).action = Action(name="rest")
    needs_system(w)
    assert _needs(w, a).energy == pytest.approx(41.5)


def test_resting_two_tiles_from_a_shelter_gets_no_bonus() -> None:
    w = small_world(game={"rest_energy_per_tick": 0.5, "shelter_rest_multiplier": 3.0})
    w.spawn_object("shelter", 7, 5)
    a = add_agent(w, "Ann", 5, 5, energy=40.0)
    w.store.get(a, c.Intent).action = Action(name="rest")
    needs_system(w)
    assert _needs(w, a).energy == pytest.approx(40.5)


def test_near_shelter_counts_only_shelters() -> None:
    w = small_world()
    w.spawn_object("berry_bush", 6, 5)
    assert not w.ground.near_shelter(5, 5)
    w.spawn_object("shelter", 4, 5)
    assert w.ground.near_shelter(5, 5)


def test_resting_diagonally_next_to_a_shelter_gets_the_shelter_bonus() -> None:
    """``use`` reaches a shelter from any of the 8 neighbouring tiles (Chebyshev 1) and the
    walk there may well end on a diagonal, so rest there must count as next to it."""
    w = small_world(game={"rest_energy_per_tick": 0.5, "shelter_rest_multiplier": 3.0})
    shelter = w.spawn_object("shelter", 6, 6)
    a = add_agent(w, "Ann", 5, 5, energy=40.0)
    give_plan(w, a, act("use", target=shelter))
    run(w, 1)  # the use turns into a rest on the spot: already within reach
    assert w.store.get(a, c.Intent).action == Action(name="rest")
    before = _needs(w, a).energy
    run(w, 1)
    assert _needs(w, a).energy - before == pytest.approx(1.5)


def test_starving_agent_loses_health_each_tick() -> None:
    w = small_world(game={"starvation_damage_per_tick": 2.0, "hunger_per_tick": 0.0})
    a = add_agent(w, "Ann", 5, 5, hunger=100.0, health=50.0)
    needs_system(w)
    needs_system(w)
    assert _needs(w, a).health == pytest.approx(46.0)


def test_fed_and_rested_agent_regenerates_health_up_to_its_maximum() -> None:
    w = small_world(game={"health_regen_per_tick": 1.5, "hunger_per_tick": 0.0})
    a = add_agent(w, "Ann", 5, 5, hunger=10.0, energy=80.0, health=97.0)
    needs_system(w)
    assert _needs(w, a).health == pytest.approx(98.5)
    needs_system(w)
    assert _needs(w, a).health == _needs(w, a).max_health == 100.0


@pytest.mark.parametrize(("hunger", "energy"), [(50.0, 80.0), (10.0, 20.0)])
def test_no_regeneration_when_hungry_or_tired(hunger: float, energy: float) -> None:
    w = small_world(game={"health_regen_per_tick": 1.5, "hunger_per_tick": 0.0,
                          "energy_per_tick": 0.0})
    a = add_agent(w, "Ann", 5, 5, hunger=hunger, energy=energy, health=60.0)
    needs_system(w)
    assert _needs(w, a).health == 60.0


def test_needs_change_through_a_real_tick() -> None:
    w = small_world(game={"hunger_per_tick": 0.25, "energy_per_tick": 0.1})
    a = add_agent(w, "Ann", 5, 5, hunger=20.0, energy=90.0)
    give_plan(w, a, act("idle", ticks=50))
    run(w, 10)
    assert _needs(w, a).hunger == pytest.approx(22.5)
    assert _needs(w, a).energy == pytest.approx(89.0)
