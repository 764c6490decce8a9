"""Movement (walking, wander, follow, flee, approach), A* pathfinding and the spatial grid."""

from __future__ import annotations

import itertools

import pytest
from helpers import act, add_agent, chebyshev, give_plan, of_type, pos, run, small_world

from agent_world.core import components as c
from agent_world.core.pathfinding import find_path
from agent_world.core.spatial import SpatialGrid

# -- walking ---------------------------------------------------------------------------------


def test_move_to_walks_one_tile_per_move_interval_and_finishes_on_the_tile() -> None:
    w = small_world(game={"move_interval_ticks": 2})
    a = add_agent(w, "Ann", 5, 5)
    give_plan(w, a, act("move_to", x=11, y=5))
    run(w, 1)
    assert pos(w, a) == (6, 5)
    run(w, 1)
    assert pos(w, a) == (6, 5)  # waiting out the move interval
    run(w, 9)  # tick 11: the sixth step
    assert pos(w, a) == (11, 5)
    intent = w.store.get(a, c.Intent)
    assert intent.action is not None
    run(w, 2)  # the next move turn notices the arrival
    assert intent.action is None
    assert intent.last_result == "ok"


def test_each_step_costs_energy() -> None:
    w = small_world(game={"energy_per_step": 0.5, "energy_per_tick": 0.0})
    a = add_agent(w, "Ann", 5, 5, energy=50.0)
    give_plan(w, a, act("move_to", x=9, y=5))
    run(w, 9)
    assert pos(w, a) == (9, 5)
    assert w.store.get(a, c.Needs).energy == pytest.approx(48.0)


def test_exhausted_agents_walk_at_half_speed() -> None:
    w = small_world(game={"move_interval_ticks": 2, "energy_per_step": 0.0,
                          "energy_per_tick": 0.0})
    a = add_agent(w, "Ann", 5, 5, energy=5.0)
    give_plan(w, a, act("move_to", x=15, y=5))
    run(w, 12)  # steps at ticks 1, 5, 9
    assert pos(w, a) == (8, 5)


def test_path_goes_around_a_wall_over_open_tiles_only() -> None:
    w = small_world()
    for y in range(18):
        w.spawn_object("rock", 10, y)
    a = add_agent(w, "Ann", 5, 5)
    give_plan(w, a, act("move_to", x=15, y=5))
    trail = [pos(w, a)]
    for _ in range(80):
        run(w, 1)
        if pos(w, a) != trail[-1]:
            trail.append(pos(w, a))
    assert trail[-1] == (15, 5)
    for (x0, y0), (x1, y1) in itertools.pairwise(trail):
        assert abs(x1 - x0) + abs(y1 - y0) == 1
        assert not w.terrain.is_blocked(x1, y1)
    assert any(y >= 18 for _x, y in trail)  # it went round the end of the wall


def test_move_to_a_blocked_tile_stops_next_to_it() -> None:
    w = small_world()
    w.spawn_object("tree", 12, 5)
    a = add_agent(w, "Ann", 5, 5)
    give_plan(w, a, act("move_to", x=12, y=5))
    run(w, 20)
    assert pos(w, a) == (11, 5)
    assert w.store.get(a, c.Intent).last_result == "ok"


def test_move_to_off_the_map_fails() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    give_plan(w, a, act("move_to", x=50, y=5))
    failed = of_type(run(w, 1), "action_failed")
    assert [e["reason"] for e in failed] == ["(50, 5) is off the map"]
    assert pos(w, a) == (5, 5)


def test_move_to_an_enclosed_tile_fails_as_unreachable() -> None:
    w = small_world()
    for x, y in ((15, 14), (16, 15), (15, 16), (14, 15)):
        w.spawn_object("rock", x, y)
    a = add_agent(w, "Ann", 5, 5)
    give_plan(w, a, act("move_to", x=15, y=15))
    failed = of_type(run(w, 80), "action_failed")
    assert [e["reason"] for e in failed] == ["no way to (15, 15)"]
    x, y = pos(w, a)
    assert abs(x - 15) + abs(y - 15) == 2  # as close as the rocks allow


def test_move_to_an_entity_walks_onto_its_tile() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    item = w.spawn_item("stone", 1, 8, 9)
    give_plan(w, a, act("move_to", target=item))
    run(w, 20)
    assert pos(w, a) == (8, 9)


def test_wander_moves_about_on_open_tiles_and_ends_after_its_ticks() -> None:
    w = small_world(seed=3)
    for y in range(0, 20, 2):
        w.spawn_object("rock", 3, y)
    a = add_agent(w, "Ann", 5, 5)
    give_plan(w, a, act("wander", ticks=25), act("idle", ticks=100))
    seen = set()
    for _ in range(24):
        run(w, 1)
        seen.add(pos(w, a))
        assert not w.terrain.is_blocked(*pos(w, a))
    assert w.store.get(a, c.Intent).action.name == "wander"
    assert len(seen) > 3
    run(w, 6)  # the next move turn (a stroll: every 4 ticks) ends it, then the plan goes on
    assert w.store.get(a, c.Intent).action.name == "idle"


def test_follow_keeps_within_two_tiles_of_a_walking_target() -> None:
    w = small_world()
    leader = add_agent(w, "Lead", 2, 2)
    follower = add_agent(w, "Tail", 2, 5)
    give_plan(w, leader, act("move_to", x=17, y=2))
    give_plan(w, follower, act("follow", target=leader, ticks=200))
    run(w, 60)
    assert pos(w, leader) == (17, 2)
    assert chebyshev(pos(w, follower), pos(w, leader)) <= 2
    assert w.store.get(follower, c.Intent).action.name == "follow"


def test_follow_ends_after_its_ticks() -> None:
    w = small_world()
    leader = add_agent(w, "Lead", 2, 2)
    follower = add_agent(w, "Tail", 2, 5)
    give_plan(w, leader, act("idle", ticks=100))
    give_plan(w, follower, act("follow", target=leader, ticks=10), act("idle", ticks=100))
    run(w, 12)
    assert w.store.get(follower, c.Intent).action.name == "idle"
    assert w.store.get(follower, c.Intent).last_result == "ok"


def test_follow_of_something_that_is_not_an_agent_fails() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 5, 5)
    item = w.spawn_item("stone", 1, 7, 5)
    give_plan(w, a, act("follow", target=item))
    failed = of_type(run(w, 1), "action_failed")
    assert [e["reason"] for e in failed] == [f"stone#{item} is gone"]


def test_flee_runs_away_until_out_of_sight() -> None:
    w = small_world(game={"vision_radius": 4})
    threat = add_agent(w, "Brute", 10, 10)
    a = add_agent(w, "Ann", 11, 10)
    give_plan(w, threat, act("idle", ticks=100))
    give_plan(w, a, act("flee", target=threat))
    last = 1
    for _ in range(16):
        run(w, 1)
        d2 = (pos(w, a)[0] - 10) ** 2 + (pos(w, a)[1] - 10) ** 2
        assert d2 >= last  # never closer
        last = d2
    assert last > 4 * 4
    assert w.store.get(a, c.Intent).last_result == "ok: escaped"


def test_targeted_actions_walk_into_reach_first() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 2, 2)
    item = w.spawn_item("stone", 1, 9, 2)
    give_plan(w, a, act("pickup", target=item))
    events = run(w, 20)
    assert of_type(events, "pickup")
    assert pos(w, a) == (8, 2)  # pickup reaches one tile
    assert w.store.get(a, c.Inventory).items == {"stone": 1}


def test_agents_grid_follows_walking_agents() -> None:
    w = small_world()
    a = add_agent(w, "Ann", 1, 1)
    give_plan(w, a, act("move_to", x=18, y=17))
    run(w, 70)
    assert pos(w, a) == (18, 17)
    assert w.agents_grid.at(18, 17) == [a]
    assert w.agents_grid.at(1, 1) == []
    assert [e for _d2, e in w.agents_grid.near(18, 17, 3)] == [a]


# -- pathfinding -----------------------------------------------------------------------------


def _open(width: int, height: int, walls: list[tuple[int, int]] = ()) -> bytearray:
    blocked = bytearray(width * height)
    for x, y in walls:
        blocked[y * width + x] = 1
    return blocked


def test_find_path_on_open_ground_is_shortest_with_next_step_last() -> None:
    steps, complete = find_path(_open(10, 10), 10, 10, (1, 1), (4, 3))
    assert complete
    assert len(steps) == 5
    assert steps[0] == 3 * 10 + 4  # the goal is the last tile walked
    first = steps[-1]
    assert (first % 10, first // 10) in ((2, 1), (1, 2))


def test_find_path_from_within_reach_is_empty_and_complete() -> None:
    assert find_path(_open(10, 10), 10, 10, (4, 4), (5, 5), reach=1) == ([], True)
    assert find_path(_open(10, 10), 10, 10, (4, 4), (4, 4)) == ([], True)


def test_find_path_stops_at_chebyshev_reach() -> None:
    steps, complete = find_path(_open(10, 10), 10, 10, (0, 0), (5, 5), reach=2)
    assert complete
    end = steps[0]
    assert chebyshev((end % 10, end // 10), (5, 5)) == 2
    assert len(steps) == 6  # (3, 3) is 6 steps from the corner


def test_find_path_without_a_route_leads_to_the_nearest_explored_tile() -> None:
    walls = [(5, y) for y in range(10)]
    steps, complete = find_path(_open(10, 10, walls), 10, 10, (1, 4), (8, 4))
    assert not complete
    end = steps[0]
    assert (end % 10, end // 10) == (4, 4)


def test_find_path_gives_up_when_the_node_budget_runs_out() -> None:
    steps, complete = find_path(_open(60, 60), 60, 60, (0, 0), (59, 59), max_nodes=10)
    assert not complete
    assert 0 < len(steps) <= 10


def test_find_path_is_deterministic() -> None:
    walls = [(3, y) for y in range(1, 10)] + [(6, y) for y in range(9)]
    runs = {tuple(find_path(_open(10, 10, walls), 10, 10, (0, 5), (9, 5))[0])
            for _ in range(3)}
    assert len(runs) == 1


# -- spatial grid ----------------------------------------------------------------------------


def test_grid_near_is_euclidean_inclusive_and_sorted_by_distance_then_id() -> None:
    grid = SpatialGrid(40, 40, cell=4)
    for eid, (x, y) in {5: (10, 10), 3: (13, 10), 4: (10, 13), 2: (12, 12), 1: (13, 13)}.items():
        grid.insert(eid, c.Position(x, y))
    assert grid.near(10, 10, 3) == [(0, 5), (8, 2), (9, 3), (9, 4)]
    assert grid.near(10, 10, 2) == [(0, 5)]


def test_grid_at_lists_one_tile_ascending() -> None:
    grid = SpatialGrid(20, 20)
    for eid in (9, 2, 5):
        grid.insert(eid, c.Position(3, 3))
    grid.insert(7, c.Position(3, 4))
    assert grid.at(3, 3) == [2, 5, 9]
    assert len(grid) == 4
    assert 7 in grid


def test_grid_tracks_moves_across_buckets_and_removal() -> None:
    grid = SpatialGrid(32, 32, cell=8)
    p = c.Position(1, 1)
    grid.insert(1, p)
    p.x, p.y = 30, 30
    grid.moved(1)
    assert grid.near(1, 1, 3) == []
    assert grid.near(30, 30, 0) == [(0, 1)]
    grid.remove(1)
    assert grid.near(30, 30, 5) == []
    assert 1 not in grid


def test_grid_rejects_a_second_insert_and_a_zero_cell() -> None:
    grid = SpatialGrid(10, 10)
    grid.insert(1, c.Position(0, 0))
    with pytest.raises(ValueError, match="already in the grid"):
        grid.insert(1, c.Position(1, 1))
    with pytest.raises(ValueError, match="cell must be >= 1"):
        SpatialGrid(10, 10, cell=0)
