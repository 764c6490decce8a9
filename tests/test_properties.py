"""Properties that hold for any input: paths, damage, trades, parsing, inventories, the grid."""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

import pytest
from helpers import PROPERTY, act, add_agent, give_plan, goods_of, of_type, run, small_world
from hypothesis import example, given
from hypothesis import strategies as st

from agent_world.core import components as c
from agent_world.core.actions import ACTIONS, Action, ActionError, parse_action
from agent_world.core.items import ITEMS
from agent_world.core.pathfinding import find_path
from agent_world.core.spatial import SpatialGrid
from agent_world.core.systems.combat import damage_of
from agent_world.core.terrain import OpenTiles

KINDS = list(ITEMS)
WEAPONS = [k for k, v in ITEMS.items() if v.category == "weapon"]

# -- pathfinding -----------------------------------------------------------------------------


@st.composite
def maps(draw: st.DrawFn) -> tuple[bytearray, int, int, tuple[int, int], tuple[int, int], int]:
    width = draw(st.integers(1, 12))
    height = draw(st.integers(1, 12))
    density = draw(st.sampled_from([0.0, 0.2, 0.35, 0.5]))
    cells = draw(st.lists(st.floats(0, 1), min_size=width * height,
                          max_size=width * height))
    blocked = bytearray(1 if v < density else 0 for v in cells)
    start = (draw(st.integers(0, width - 1)), draw(st.integers(0, height - 1)))
    goal = (draw(st.integers(0, width - 1)), draw(st.integers(0, height - 1)))
    blocked[start[1] * width + start[0]] = 0
    reach = draw(st.integers(0, 3))
    return blocked, width, height, start, goal, reach


def _within(x: int, y: int, goal: tuple[int, int], reach: int) -> bool:
    return max(abs(x - goal[0]), abs(y - goal[1])) <= reach


def _bfs_distance(blocked, width, height, start, goal, reach) -> int | None:
    seen = {start: 0}
    queue = deque([start])
    while queue:
        x, y = queue.popleft()
        if _within(x, y, goal, reach):
            return seen[(x, y)]
        for nx, ny in ((x, y - 1), (x + 1, y), (x, y + 1), (x - 1, y)):
            if (0 <= nx < width and 0 <= ny < height and not blocked[ny * width + nx]
                    and (nx, ny) not in seen):
                seen[(nx, ny)] = seen[(x, y)] + 1
                queue.append((nx, ny))
    return None


def _check_walk(steps: list[int], blocked, width, height, start) -> None:
    walk = [start] + [(i % width, i // width) for i in reversed(steps)]
    assert len(set(walk)) == len(walk)  # never the same tile twice
    for (x0, y0), (x1, y1) in itertools.pairwise(walk):
        assert abs(x1 - x0) + abs(y1 - y0) == 1
        assert 0 <= x1 < width and 0 <= y1 < height
        assert not blocked[y1 * width + x1]


@PROPERTY
@given(maps(), st.integers(1, 60))
def test_find_path_is_an_open_4_connected_walk_that_ends_in_reach_when_complete(m, budget):
    blocked, width, height, start, goal, reach = m
    steps, complete = find_path(blocked, width, height, start, goal, reach, max_nodes=budget)
    _check_walk(steps, blocked, width, height, start)
    end = (steps[0] % width, steps[0] // width) if steps else start
    if complete:
        assert _within(*end, goal, reach)


@PROPERTY
@given(maps(), st.integers(1, 60))
@example((bytearray(2), 1, 2, (0, 0), (0, 1), 0), 1)
def test_find_path_reports_complete_whenever_its_steps_end_in_reach(m, budget):
    """``complete`` is documented as "whether they end at the goal": a goal reached by the
    last expansion the budget allows must not be reported as incomplete."""
    blocked, width, height, start, goal, reach = m
    steps, complete = find_path(blocked, width, height, start, goal, reach, max_nodes=budget)
    end = (steps[0] % width, steps[0] // width) if steps else start
    assert complete == _within(*end, goal, reach)


@PROPERTY
@given(maps())
def test_find_path_with_ample_budget_finds_a_shortest_route_whenever_one_exists(m):
    blocked, width, height, start, goal, reach = m
    steps, complete = find_path(blocked, width, height, start, goal, reach,
                                max_nodes=width * height + 1)
    distance = _bfs_distance(blocked, width, height, start, goal, reach)
    assert complete == (distance is not None)
    if complete:
        assert len(steps) == distance


# -- damage ----------------------------------------------------------------------------------


@PROPERTY
@given(base=st.floats(0, 1000), multiplier=st.floats(0, 100), factor=st.floats(0, 1),
       carried=st.dictionaries(st.sampled_from(KINDS[:-1]), st.integers(1, 3), max_size=5),
       roll=st.floats(0, 1), defending=st.booleans())
def test_damage_is_never_negative_and_within_its_bounds(base, multiplier, factor, carried,
                                                        roll, defending):
    w = small_world(game={"base_attack_damage": base, "combat_damage_multiplier": multiplier,
                          "defend_damage_factor": factor})
    weapon = max((ITEMS[k].damage for k in carried if k in WEAPONS), default=0.0)
    scale = (base + weapon) * multiplier * (factor if defending else 1.0)
    damage = damage_of(w, c.Inventory(items=dict(carried)), roll, defending)
    assert damage >= 0.0
    assert 0.8 * scale * (1 - 1e-9) <= damage <= 1.2 * scale * (1 + 1e-9)


# -- trade -----------------------------------------------------------------------------------

goods = st.dictionaries(st.sampled_from(KINDS), st.integers(1, 4), min_size=1, max_size=3)
stock = st.dictionaries(st.sampled_from(KINDS[:-1]), st.integers(0, 6), max_size=5)


def _totals(w, *eids: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for eid in eids:
        for kind, qty in goods_of(w, eid).items():
            out[kind] = out.get(kind, 0) + qty
    return out


@PROPERTY
@given(sender_items=stock, sender_gold=st.integers(0, 8), receiver_items=stock,
       receiver_gold=st.integers(0, 8), give=goods, want=goods)
def test_a_trade_conserves_goods_and_swaps_exactly_what_was_agreed(
        sender_items, sender_gold, receiver_items, receiver_gold, give, want):
    # No market fee and no spoilage here (tests/test_balance_sinks.py covers both): the two
    # agents' goods together stay exactly what they were.
    w = small_world(game={"market_fee": 0.0, "food_spoilage": 0.0})
    clean = {k: v for k, v in sender_items.items() if v}
    a = add_agent(w, "Ann", 5, 5, items=clean, gold=sender_gold)
    b = add_agent(w, "Bob", 6, 5, items={k: v for k, v in receiver_items.items() if v},
                  gold=receiver_gold)
    before_a, before_b = goods_of(w, a), goods_of(w, b)
    before = _totals(w, a, b)
    give_plan(w, a, act("idle", ticks=100))
    oid = w.market.open(w.tick, a, b, give, want)
    give_plan(w, b, act("trade_accept", offer=oid))
    events = run(w, 1)
    assert _totals(w, a, b) == before
    for eid in (a, b):
        inv = w.store.get(eid, c.Inventory)
        assert inv.gold >= 0
        assert all(q > 0 for q in inv.items.values())
    if of_type(events, "trade"):
        expected_a = dict(before_a)
        for kind, qty in give.items():
            expected_a[kind] -= qty
        for kind, qty in want.items():
            expected_a[kind] = expected_a.get(kind, 0) + qty
        assert goods_of(w, a) == {k: v for k, v in expected_a.items() if v}
    else:
        assert (goods_of(w, a), goods_of(w, b)) == (before_a, before_b)
    assert w.market.offers == {}


# -- parse_action ----------------------------------------------------------------------------

json_leaves = (st.none() | st.booleans() | st.integers(-10**6, 10**19)
               | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
               | st.from_regex(r"\A\s*#?[0-9]{1,6}\s*\Z") | st.sampled_from(KINDS))
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)
arg_names = sorted({k for spec in ACTIONS.values() for k in spec.args})
action_like = st.fixed_dictionaries(
    {"action": st.sampled_from([*ACTIONS, " idle ", "Attack", "fly"]) | st.text(max_size=8)},
    optional={"args": st.none() | json_values
              | st.dictionaries(st.sampled_from(arg_names) | st.text(max_size=5),
                                json_values | st.dictionaries(st.sampled_from(KINDS),
                                                              json_leaves, max_size=5),
                                max_size=4)},
)


@PROPERTY
@given(json_values | action_like)
@example({"action": "idle", "args": {"ticks": "²"}})
@example({"action": "trade_offer", "args": {"target": 2, "give": {"apple": "³"},
                                            "want": {"gold": 1}}})
def test_parse_action_returns_a_valid_action_or_raises_action_error(obj: Any) -> None:
    try:
        action = parse_action(obj)
    except ActionError:
        return
    assert isinstance(action, Action)
    assert action.name in ACTIONS
    assert Action(name=action.name, args=dict(action.args)) == action
    assert parse_action(action.to_dict()) == action


# -- inventory -------------------------------------------------------------------------------

_KIND = st.sampled_from(["apple", "wood", "gold"])
ops = st.lists(st.tuples(st.just("add"), _KIND, st.integers(-2, 12))
               | st.tuples(st.just("take"), _KIND, st.integers(-2, 12).filter(bool)),
               max_size=30)


@PROPERTY
@given(ops)
def test_inventory_add_and_take_never_go_negative(steps) -> None:
    inv = c.Inventory()
    model = {"apple": 0, "wood": 0, "gold": 0}
    for op, kind, qty in steps:
        refused = qty < 0 or (op == "take" and qty > model[kind])
        if refused:
            try:
                getattr(inv, op)(kind, qty)
            except ValueError:
                pass
            else:
                raise AssertionError(f"{op}({kind!r}, {qty}) should have been refused")
        else:
            getattr(inv, op)(kind, qty)
            model[kind] += qty if op == "add" else -qty
        assert {k: inv.count(k) for k in model} == model
        assert inv.gold >= 0
        assert all(q > 0 for q in inv.items.values())


def test_taking_none_of_something_not_carried_changes_nothing() -> None:
    """take("apple", 0) with no apples: 0 is not "fewer than carried", so no error is due;
    it raises KeyError from ``del self.items[kind]``."""
    inv = c.Inventory(items={"wood": 1})
    inv.take("apple", 0)
    inv.take("wood", 0)
    assert inv.items == {"wood": 1}


# -- spatial grid ----------------------------------------------------------------------------


@st.composite
def grids(draw: st.DrawFn) -> tuple[SpatialGrid, dict[int, c.Position], int, int]:
    """A moving or static grid after inserts, moves (a static grid's entities are removed and
    put back instead) and removals, with where everything in it stands."""
    width, height = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    static = draw(st.booleans())
    grid = SpatialGrid(width, height, cell=draw(st.integers(1, 10)), static=static)
    tile = st.tuples(st.integers(0, width - 1), st.integers(0, height - 1))
    placed: dict[int, c.Position] = {}
    for eid, (x, y) in enumerate(draw(st.lists(tile, max_size=25)), start=1):
        placed[eid] = c.Position(x, y)
        grid.insert(eid, placed[eid])
    for eid, (x, y) in draw(st.lists(st.tuples(st.sampled_from(sorted(placed)), tile),
                                     max_size=10)) if placed else []:
        if static:
            grid.remove(eid)
            placed[eid] = c.Position(x, y)
            grid.insert(eid, placed[eid])
        else:
            placed[eid].x, placed[eid].y = x, y
            grid.moved(eid)
    for eid in draw(st.sets(st.sampled_from(sorted(placed)), max_size=5)) if placed else ():
        grid.remove(eid)
        del placed[eid]
    return grid, placed, width, height


@PROPERTY
@given(grids(), st.integers(-5, 45), st.integers(-5, 45), st.integers(0, 20))
def test_grid_near_equals_a_brute_force_scan(g, x, y, radius) -> None:
    grid, placed, _w, _h = g
    brute = sorted(((p.x - x) ** 2 + (p.y - y) ** 2, eid) for eid, p in placed.items()
                   if (p.x - x) ** 2 + (p.y - y) ** 2 <= radius * radius)
    assert grid.near(x, y, radius) == brute
    assert grid.at(x, y) == sorted(eid for eid, p in placed.items() if (p.x, p.y) == (x, y))
    assert len(grid) == len(placed)


@PROPERTY
@given(st.integers(0, 300).flatmap(
    lambda size: st.tuples(st.just(size), st.sets(st.integers(0, max(0, size - 1)),
                                                  max_size=size))))
def test_open_tiles_reads_like_the_sorted_list_of_its_members(case) -> None:
    size, members = case
    tiles = OpenTiles.of(size, sorted(members))
    expected = sorted(members)
    assert len(tiles) == len(expected) and list(tiles) == expected
    assert [tiles[n] for n in range(len(expected))] == expected
    assert [tiles[-n] for n in range(1, len(expected) + 1)] == expected[::-1]
    assert tiles[1:-1:2] == expected[1:-1:2]
    assert all(i in tiles for i in expected) and -1 not in tiles and size not in tiles
    for n in (len(expected), -len(expected) - 1):
        with pytest.raises(IndexError):
            tiles[n]
