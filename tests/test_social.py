"""Reputation, relationships (bounded and clamped), witnesses and memory."""

from __future__ import annotations

import pytest
from helpers import add_agent, small_world

from agent_world.core import components as c
from agent_world.core.social import (
    MAX_RELATIONSHIPS,
    adjust_relationship,
    adjust_reputation,
    witnesses,
)
from agent_world.core.world import MEMORY_SIZE


def _rel(w, who):
    return w.store.get(who, c.Social).relationships


def test_relationships_accumulate_round_and_clamp_to_plus_minus_one() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    b = add_agent(w, "Bob", 6, 5)
    adjust_relationship(w, a, b, 0.123456)
    assert _rel(w, a) == {b: 0.1235}
    adjust_relationship(w, a, b, 5.0)
    assert _rel(w, a)[b] == 1.0
    adjust_relationship(w, a, b, -3.0)
    assert _rel(w, a)[b] == -1.0
    assert _rel(w, b) == {}  # one-sided


def test_nobody_has_a_relationship_with_themselves() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    adjust_relationship(w, a, a, 0.5)
    assert _rel(w, a) == {}


def test_things_without_feelings_are_left_alone() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    item = w.spawn_item("stone", 1, 1, 1)
    adjust_relationship(w, item, a, 0.5)
    adjust_reputation(w, item, 0.5)
    assert w.store.components(item).keys() == {"Item", "Position"}


def test_relationships_stay_bounded_by_forgetting_the_most_indifferent() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    for other in range(100, 100 + MAX_RELATIONSHIPS):
        adjust_relationship(w, a, other, 0.5)
    adjust_relationship(w, a, 100, -0.45)  # now the weakest feeling: 0.05
    adjust_relationship(w, a, 500, 0.9)
    rel = _rel(w, a)
    assert len(rel) == MAX_RELATIONSHIPS
    assert 100 not in rel
    assert rel[500] == 0.9


def test_ties_among_the_indifferent_forget_the_lowest_id() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    for other in range(200, 200 + MAX_RELATIONSHIPS):
        adjust_relationship(w, a, other, -0.3)
    adjust_relationship(w, a, 999, 0.3)
    rel = _rel(w, a)
    assert len(rel) == MAX_RELATIONSHIPS
    assert 200 not in rel
    assert 999 in rel


def test_reputation_accumulates_and_clamps() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    adjust_reputation(w, a, -0.15)
    adjust_reputation(w, a, -0.15)
    assert w.store.get(a, c.Social).reputation == pytest.approx(-0.3)
    adjust_reputation(w, a, -2.0)
    assert w.store.get(a, c.Social).reputation == -1.0
    adjust_reputation(w, a, 4.0)
    assert w.store.get(a, c.Social).reputation == 1.0


def test_witnesses_are_agents_in_sight_nearest_first_minus_the_excluded() -> None:
    w = small_world(game={"vision_radius": 5})
    a = add_agent(w, "Ann", 10, 10)
    b = add_agent(w, "Bob", 11, 10)
    far = add_agent(w, "Far", 10, 15)
    add_agent(w, "Out", 10, 16)
    near = add_agent(w, "Near", 10, 12)
    assert witnesses(w, 10, 10) == [a, b, near, far]
    assert witnesses(w, 10, 10, a, b) == [near, far]


def test_memory_keeps_the_most_recent_entries() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    for i in range(MEMORY_SIZE + 3):
        w.tick = i
        w.remember(a, f"thing {i}")
    recent = w.store.get(a, c.Memory).recent
    assert len(recent) == MEMORY_SIZE
    assert recent[0] == {"tick": 3, "text": "thing 3"}
    assert recent[-1]["text"] == f"thing {MEMORY_SIZE + 2}"
