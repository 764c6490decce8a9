"""Perception: what each agent sees, how far, in what order and how often it is refreshed."""

from __future__ import annotations

from helpers import act, add_agent, give_plan, run, small_world

from agent_world.core import components as c
from agent_world.core.systems.perception import perceive, perception_system


def test_perceive_lists_agents_items_and_objects_in_range_nearest_first() -> None:
    w = small_world(game={"vision_radius": 5})
    me = add_agent(w, "Me", 10, 10)
    far = add_agent(w, "Far", 10, 15)  # exactly at the radius
    near = add_agent(w, "Near", 11, 10)
    add_agent(w, "Gone", 10, 16)  # one tile too far
    add_agent(w, "Corner", 14, 14)  # Chebyshev 4 but Euclidean sqrt(32) > 5
    apple = w.spawn_item("apple", 1, 12, 10)
    stone = w.spawn_item("stone", 1, 10, 11)
    w.spawn_item("wood", 1, 0, 0)
    bush = w.spawn_object("berry_bush", 7, 10)
    agents, items, objects = perceive(w, me, 10, 10)
    assert agents == [near, far]
    assert items == [stone, apple]
    assert objects == [bush]


def test_perception_refreshes_every_interval_ticks() -> None:
    w = small_world(game={"perception_interval_ticks": 3})
    me = add_agent(w, "Me", 10, 10)
    give_plan(w, me, act("idle", ticks=100))
    perc = w.store.get(me, c.Perception)
    run(w, 3)
    assert perc.agents == []
    updated = perc.next_update - 3  # the tick of the last refresh
    assert w.tick - 3 < updated <= w.tick
    other = add_agent(w, "Other", 12, 10)
    while w.tick < perc.next_update - 1:
        run(w, 1)
        assert perc.agents == []  # not refreshed between updates
    run(w, 1)
    assert perc.agents == [other]
    assert perc.next_update == w.tick + 3


def test_perception_system_excludes_self_and_drops_what_is_gone() -> None:
    w = small_world(game={"perception_interval_ticks": 1})
    me = add_agent(w, "Me", 10, 10)
    other = add_agent(w, "Other", 9, 10)
    item = w.spawn_item("herb", 1, 10, 10)
    w.tick = 5
    perception_system(w)
    perc = w.store.get(me, c.Perception)
    assert perc.agents == [other]
    assert perc.items == [item]
    w.remove_entity(item)
    w.remove_entity(other)
    w.tick = 6
    perception_system(w)
    assert perc.agents == []
    assert perc.items == []


def test_updates_of_different_agents_are_staggered() -> None:
    w = small_world(game={"perception_interval_ticks": 3})
    ids = [add_agent(w, f"A{i}", 2 + i, 2) for i in range(3)]
    assert {w.store.get(e, c.Perception).next_update % 3 for e in ids} == {0, 1, 2}
