"""The census: every ``CENSUS_TICKS`` ticks, one ``census`` event with the state of the
population and its wealth, so that a save folder's event log alone tells how a world lived
(snapshots are thinned out as a world ages; the census lines stay).

An observation only: it reads the world and changes nothing, so it never affects the state
or its hash. Its cost is one pass over the agents every ``CENSUS_TICKS`` ticks.

Besides population and wealth it shows what the sinks do: the weight agents carry against
``game.carry_capacity`` (``load``, and ``over_capacity``: agents carrying more than they may,
0 without a capacity), their ages, and the world's cumulative ``counters``, among them
``actions_started`` (every action begun; ``action_failed`` events against it give the
share that failed), ``goods_spoiled`` and ``goods_lost`` (food rotted, goods weathered on
the ground), ``market_fees`` and ``upkeep_gold`` (gold that left the world), and
``weapons_broken`` and ``deaths_of_old_age``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from agent_world.config import PERSONALITIES
from agent_world.core import events as ev
from agent_world.core.goods import load
from agent_world.core.items import GOLD

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["CENSUS_TICKS", "census_figures", "census_system", "gini"]

CENSUS_TICKS = 1000


def gini(values: list[float]) -> float:
    """The Gini coefficient of non-negative amounts: 0 all equal, towards 1 one has all."""
    n = len(values)
    total = sum(values)
    if n < 2 or total <= 0:
        return 0.0
    ordered = sorted(values)
    weighted = sum((2 * i - n + 1) * v for i, v in enumerate(ordered))
    return weighted / (n * total)


def _nearest_rank(ordered: list[int], q: float) -> int:
    if not ordered:
        return 0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def census_figures(world: World) -> dict[str, Any]:
    """The figures of one census (the fields of a ``census`` event)."""
    prices = world.market.prices
    by_personality = dict.fromkeys(PERSONALITIES, 0)
    by_brain: dict[str, int] = {}
    gold: list[float] = []
    wealth: list[float] = []
    carried: list[int] = []
    loads: list[float] = []
    ages: list[int] = []
    capacity = world.rules.carry_capacity
    over = 0
    tick = world.tick
    for _eid, row in world.agents():
        agent, inv = row.agent, row.inv
        weight = load(inv)
        loads.append(weight)
        if capacity and weight > capacity + 1e-9:
            over += 1
        ages.append(tick - agent.born)
        by_personality[agent.personality] = by_personality.get(agent.personality, 0) + 1
        by_brain[agent.brain] = by_brain.get(agent.brain, 0) + 1
        gold.append(inv.gold)
        wealth.append(inv.gold + sum(prices[k] * q for k, q in inv.items.items()))
        carried.append(sum(inv.items.values()))
    ground_gold = world.ground.goods.get(GOLD, 0)
    total_gold = sum(gold) + ground_gold
    carried.sort()
    loads.sort()
    ages.sort()
    return {
        "agents": len(carried),
        "by_personality": by_personality,
        "by_brain": dict(sorted(by_brain.items())),
        "gold_total": int(total_gold),
        "gold_on_ground": int(ground_gold),
        "gold_gini": round(gini(gold), 4),
        "wealth_gini": round(gini(wealth), 4),
        "richest_gold_share": round(max(gold) / total_gold, 4) if gold and total_gold else 0.0,
        "items_carried": {"p50": _nearest_rank(carried, 0.5), "p99": _nearest_rank(carried, 0.99),
                          "max": carried[-1] if carried else 0},
        "load": {"p50": round(loads[len(loads) // 2], 2) if loads else 0.0,
                 "max": round(loads[-1], 2) if loads else 0.0, "capacity": capacity},
        "over_capacity": over,
        "age": {"p50": _nearest_rank(ages, 0.5), "max": ages[-1] if ages else 0},
        "goods_on_ground": sum(q for k, q in world.ground.goods.items() if k != GOLD),
        "prices": {k: round(v, 3) for k, v in prices.items() if k != GOLD},
        "counters": dict(sorted(world.counters.items())),  # cumulative since tick 0
    }


def census_system(world: World) -> None:
    if world.tick % CENSUS_TICKS == 0:
        world.emit(ev.CENSUS, **census_figures(world))
