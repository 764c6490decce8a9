"""Upkeep: what owning things costs. Goods and gold leave the world here, so that wealth
does not pile up without end.

- **Food spoils** (``game.food_spoilage``): each unit of food or herbs lasts its kind's
  shelf life on average (``ItemKind.shelf_life``), carried or on the ground. An agent's
  stock is looked at every ``SPOIL_PERIOD`` ticks: of ``q`` units it loses
  ``q * SPOIL_PERIOD / shelf life`` on average (whole units; the fraction by chance).
- **Goods left on the ground are lost** (``game.ground_item_life_ticks``): weather and
  scavengers take other goods lying about (gold excepted) at the same kind of rate, so a
  full map takes new finds again.
- **Hoarded gold costs upkeep** (``game.gold_upkeep_per_hour``): every ``UPKEEP_PERIOD``
  ticks each agent pays that share (pro rata) of its gold above ``game.upkeep_free_gold``.
  With gold found on the map at a steady rate, upkeep that grows with a hoard is what keeps
  the total bounded, and the richest pay most.

The work is spread over the ticks: each tick looks at one slice of the agents and of the
ground items (every P-th, P the period), so no tick pays for the whole world. Counters:
``goods_spoiled``, ``goods_lost``, ``upkeep_gold``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.calendar import TICKS_PER_HOUR
from agent_world.core.items import GOLD, ITEMS

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["GROUND_PERIOD", "SPOIL_PERIOD", "UPKEEP_PERIOD", "upkeep_system"]

SPOIL_PERIOD = 500
GROUND_PERIOD = 500
UPKEEP_PERIOD = 1000


def _by_chance(world: World, expected: float) -> int:
    """A whole number with the given expectation: the whole part, plus one by chance."""
    whole = int(expected)
    return whole + (1 if world.rng.random() < expected - whole else 0)


def _spoil_carried(world: World, rate: float) -> None:
    phase = world.tick % SPOIL_PERIOD
    for eid, row in world.agents()[phase::SPOIL_PERIOD]:
        inv = row.inv
        spoiled: dict[str, int] = {}
        for kind, qty in list(inv.items.items()):
            life = ITEMS[kind].shelf_life
            if not life:
                continue
            lost = min(qty, _by_chance(world, qty * SPOIL_PERIOD * rate / life))
            if lost:
                inv.take(kind, lost)
                spoiled[kind] = lost
        if spoiled:
            world.count("goods_spoiled", sum(spoiled.values()))
            world.emit(ev.SPOILED, agent=eid, name=row.agent.name, goods=spoiled)


def _weather_ground(world: World, rate: float, ground_life: int) -> None:
    phase = world.tick % GROUND_PERIOD
    items = world.store.query(c.Item)[phase::GROUND_PERIOD]
    for eid, (item,) in items:
        if item.kind == GOLD:
            continue
        life = ITEMS[item.kind].shelf_life / rate if rate and ITEMS[item.kind].shelf_life \
            else 0.0
        if ground_life and (not life or ground_life < life):
            life = ground_life
        if not life:
            continue
        lost = min(item.qty, _by_chance(world, item.qty * GROUND_PERIOD / life))
        if not lost:
            continue
        world.count("goods_spoiled" if ITEMS[item.kind].shelf_life and rate else "goods_lost",
                    lost)
        if lost >= item.qty:
            world.remove_entity(eid)
        else:
            world.ground.take(eid, item, lost)


def _gold_upkeep(world: World, per_hour: float, free: int) -> None:
    phase = world.tick % UPKEEP_PERIOD
    share = per_hour * UPKEEP_PERIOD / TICKS_PER_HOUR
    for _eid, row in world.agents()[phase::UPKEEP_PERIOD]:
        inv = row.inv
        if inv.gold <= free:
            continue
        due = min(inv.gold, _by_chance(world, (inv.gold - free) * share))
        if due:
            inv.gold -= due
            world.market.burn(due)
            world.count("upkeep_gold", due)


def upkeep_system(world: World) -> None:
    r = world.rules
    if r.food_spoilage:
        _spoil_carried(world, r.food_spoilage)
    if r.food_spoilage or r.ground_item_life_ticks:
        _weather_ground(world, r.food_spoilage, r.ground_item_life_ticks)
    if r.gold_upkeep_per_hour:
        _gold_upkeep(world, r.gold_upkeep_per_hour, r.upkeep_free_gold)
