"""The world's parts (market, ground, population) round-trip: a part built up by a real run,
its state written to a JSON file and read into a fresh part (or a world loaded from the
world's state) holds the same state and the same derived indexes, and behaves the same."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.config import Config
from agent_world.core.ground import Ground
from agent_world.core.market import Market
from agent_world.core.terrain import Terrain
from agent_world.core.world import World

SAVED_KEYS = ["format", "tick", "seed", "rng", "next_entity", "next_seq", "next_offer",
              "config", "terrain", "prices", "offers", "ledger", "counters", "spawn_credit",
              "market_tally", "entities"]
"""The top-level keys of a world's state, in their hashed order, before the optional
sub-states (abilities, minds, metrics, teams)."""


@pytest.fixture(scope="module")
def lived() -> World:
    """A world with everything the parts index: trades in flight, a census half done,
    harvested objects regrowing, shelters, hazards, capture points and two teams."""
    config = Config().replace(world={"size": [48, 48], "starting_agents": 60,
                                     "capture_points": 2, "hazard_tiles_per_1000_tiles": 10})
    world = World.create(config, seed=3)
    for i in range(4):
        world.spawn_agent(team="red" if i % 2 else "blue")
    for _ in range(2000):
        world.step()
        market = world.market
        if (world.tick > 200 and len(market.offers) >= 2 and market.tally["carried"]
                and world.ground.spawn_credit):
            return world
    raise AssertionError("the world never had two offers open mid-census")


def _through_file(state: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "part.json"
    path.write_bytes(orjson.dumps(state, option=orjson.OPT_NON_STR_KEYS))
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def test_the_world_state_keeps_its_keys_in_their_order(lived: World) -> None:
    assert list(lived.get_state())[:len(SAVED_KEYS)] == SAVED_KEYS


def test_the_market_round_trips_with_its_indexes(lived: World, tmp_path: Path) -> None:
    market = lived.market
    state = _through_file(market.get_state(), tmp_path)
    fresh = Market(lived.rules.offer_ttl_ticks)
    fresh.set_state(state)
    assert _json(fresh.get_state()) == _json(market.get_state())
    assert fresh.offers_to == market.offers_to and fresh.offers_from == market.offers_from
    assert fresh.tally == market.tally and fresh.tally["carried"]
    # ... and both go on alike: the same new offer id, the same expiries (the original
    # copied as it is, indexes and all, since the lived world is shared with other tests).
    market = copy.deepcopy(market)
    first = next(iter(market.offers.values()))
    a, b = first["to"], first["from"]
    assert fresh.is_waiting(b, a) and market.is_waiting(b, a)
    assert (fresh.open(lived.tick, a, b, {"wood": 1}, {"gold": 2})
            == market.open(lived.tick, a, b, {"wood": 1}, {"gold": 2}))
    later = lived.tick + lived.rules.offer_ttl_ticks
    assert fresh.expire(later) == market.expire(later) != []
    assert fresh.received(b) == market.received(b) and fresh.sent(a) == market.sent(a)


def test_the_ground_round_trips_and_a_loaded_world_rebuilds_its_indexes(
        lived: World, tmp_path: Path) -> None:
    ground = lived.ground
    indexes = ground.indexes()
    assert (indexes["items"] and indexes["regrowing"] and indexes["shelter_tiles"]
            and indexes["hazard_tiles"] and len(indexes["capture_points"]) == 2)
    state = _through_file(ground.get_state(), tmp_path)
    terrain = Terrain.from_state(lived.terrain.get_state())
    fresh = Ground(terrain, lived.store, capacity=ground.capacity,
                   regrow_ticks=ground.regrow_ticks)
    fresh.set_state(state)
    assert fresh.get_state() == ground.get_state() and fresh.spawn_credit > 0
    loaded = World.from_state(_through_file(lived.get_state(), tmp_path))
    assert loaded.ground.indexes() == indexes
    assert loaded.ground.get_state() == ground.get_state()
    for world in (lived, loaded):  # the loaded ground goes on like the original
        world.ground.track_changes(True)
    for _ in range(120):
        lived.step()
        loaded.step()
    assert loaded.ground.changes == lived.ground.changes != set()
    assert loaded.ground.indexes() == lived.ground.indexes()
    assert loaded.state_hash() == lived.state_hash()
    for world in (lived, loaded):
        world.ground.track_changes(False)


def test_a_loaded_world_rebuilds_its_population(lived: World, tmp_path: Path) -> None:
    population = lived.population
    assert set(population.teams) == {"red", "blue"}
    loaded = World.from_state(_through_file(lived.get_state(), tmp_path))
    assert loaded.population.indexes() == population.indexes()
    name = next(iter(population.names))
    assert loaded.population.find(name.upper()) == population.find(name) is not None
