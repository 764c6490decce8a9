"""Carrying: what goods weigh and how much an agent can carry (``game.carry_capacity``).

Every way goods reach an agent through its own doing (picking up, harvesting, buying,
receiving a gift, stealing, an ability) checks ``room`` first; what does not fit stays where
it was. Gold weighs nothing. A capacity of 0 (worlds saved before the setting) means no limit.
The operator's ``/give`` is not limited: an agent given too much sheds it (sells or drops).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core.items import ITEMS

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["WEIGHTS", "fits", "goods_weight", "load", "over_capacity", "room",
           "units_that_fit"]

UNLIMITED = math.inf
WEIGHTS = {kind: spec.weight for kind, spec in ITEMS.items()}
"""Each kind's weight, as a table (read in hot loops)."""


def load(inv: c.Inventory) -> float:
    """The weight an agent carries."""
    return sum(WEIGHTS[k] * q for k, q in inv.items.items())


def goods_weight(goods: Mapping[str, int]) -> float:
    return sum(ITEMS[k].weight * q for k, q in goods.items())


def room(world: World, inv: c.Inventory) -> float:
    """Weight the agent can still take on (infinite without a capacity; negative when it
    carries more than it may, as after the operator's /give)."""
    capacity = world.rules.carry_capacity
    if not capacity:
        return UNLIMITED
    return capacity - load(inv)


def fits(world: World, inv: c.Inventory, goods: Mapping[str, int],
         leaving: Mapping[str, int] | None = None) -> bool:
    """Whether ``goods`` fit, once ``leaving`` (goods handed over in the same exchange) is
    gone."""
    if not world.rules.carry_capacity:
        return True
    gain = goods_weight(goods) - goods_weight(leaving or {})
    return gain <= 0 or gain <= room(world, inv) + 1e-9


def units_that_fit(world: World, inv: c.Inventory, kind: str, qty: int) -> int:
    """How many of ``qty`` units of ``kind`` the agent can take on."""
    weight = ITEMS[kind].weight
    if weight <= 0 or not world.rules.carry_capacity:
        return qty
    space = room(world, inv)
    return max(0, min(qty, int((space + 1e-9) // weight)))


def over_capacity(world: World, inv: c.Inventory) -> bool:
    capacity = world.rules.carry_capacity
    return bool(capacity) and load(inv) > capacity + 1e-9
