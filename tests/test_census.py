"""The census: a periodic event with the population and its wealth, which changes nothing."""

from __future__ import annotations

import pytest

from agent_world.config import PERSONALITIES, Config
from agent_world.core.systems.census import CENSUS_TICKS, census_figures, gini
from agent_world.core.world import World


def test_gini_of_known_distributions() -> None:
    assert gini([]) == 0.0 and gini([5]) == 0.0 and gini([0, 0]) == 0.0
    assert gini([3, 3, 3, 3]) == 0.0
    assert gini([0, 0, 0, 10]) == pytest.approx(0.75)  # (n - 1) / n when one has all
    assert gini([1, 2, 3, 4]) == pytest.approx(0.25)


def test_a_census_every_thousand_ticks_with_the_world_s_figures() -> None:
    world = World.create(Config().replace(world={"starting_agents": 12, "seed": 4}))
    try:
        censuses = []
        for _ in range(2 * CENSUS_TICKS):
            report = world.step()
            censuses += [e for e in report.events if e["type"] == "census"]
        assert len(censuses) == 2
        last = censuses[-1]
        assert last == {"type": "census", **census_figures(world)}
        assert set(last["by_personality"]) == set(PERSONALITIES)
        assert sum(last["by_personality"].values()) == len(world.agents())
        gold = [row[3].gold for _eid, row in world.agents()]
        assert last["gold_total"] == world.total_gold()
        assert last["richest_gold_share"] == round(max(gold) / world.total_gold(), 4)
    finally:
        world.close()


def test_the_census_changes_nothing() -> None:
    world = World.create(Config().replace(world={"starting_agents": 8, "seed": 9}))
    try:
        for _ in range(CENSUS_TICKS - 1):
            world.step()
        before = world.state_bytes()
        census_figures(world)
        assert world.state_bytes() == before
    finally:
        world.close()
