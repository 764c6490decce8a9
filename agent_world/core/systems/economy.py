"""Economy: prices that follow supply and demand, offer expiry, resource respawn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core.items import GOLD, ITEMS, OBJECTS

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["economy_system", "market_demand", "market_supply", "update_prices"]

REGROW_CHECK_TICKS = 50
PRICE_FLOOR, PRICE_CEILING = 0.25, 4.0
ANNOUNCE_MOVE = 0.05


def market_supply(world: World) -> dict[str, int]:
    """Units of each good in the world: on the ground and carried."""
    supply = dict.fromkeys(ITEMS, 0)
    for _eid, (item,) in world.store.query(c.Item):
        supply[item.kind] += item.qty
    for _eid, (inv,) in world.store.query(c.Inventory):
        for kind, qty in inv.items.items():
            supply[kind] += qty
    return supply


def market_demand(world: World) -> dict[str, float]:
    """Wanted units: hungry mouths want food, the unarmed aggressive want weapons, builders
    a little material, and every open offer wants what it asks for."""
    demand = dict.fromkeys(ITEMS, 0.0)
    food = [k for k, v in ITEMS.items() if v.category == "food"]
    weapons = [k for k, v in ITEMS.items() if v.category == "weapon"]
    materials = [k for k, v in ITEMS.items() if v.category == "material"]
    agents = world.agents()
    for _eid, (agent, _p, needs, inv, *_rest) in agents:
        if needs.hunger > 40:
            for kind in food:
                demand[kind] += needs.hunger / 100.0
        if agent.personality == "aggressive" and not any(k in inv.items for k in weapons):
            for kind in weapons:
                demand[kind] += 0.5
        if needs.health < needs.max_health * 0.6:
            demand["herb"] += 1.0
    for kind in materials:
        demand[kind] += len(agents) / 10.0
    for offer in world.offers.values():
        for kind, qty in offer["want"].items():
            demand[kind] += qty
    return demand


def update_prices(world: World) -> None:
    """Move each price part of the way toward base * (demand / supply), within bounds."""
    supply = market_supply(world)
    demand = market_demand(world)
    cushion = max(1.0, len(world.agents()) / 4.0)
    k = world.rules.price_sensitivity
    for kind, spec in ITEMS.items():
        if kind == GOLD:
            continue
        ratio = (demand[kind] + cushion) / (supply[kind] + cushion)
        ratio = min(PRICE_CEILING, max(PRICE_FLOOR, ratio))
        old = world.prices[kind]
        new = round(old + k * (spec.value * ratio - old), 3)
        world.prices[kind] = new
        if abs(new - old) >= ANNOUNCE_MOVE * old:
            world.emit("price", item=kind, old=old, price=new, supply=supply[kind],
                       demand=round(demand[kind], 1))


def _expire_offers(world: World) -> None:
    tick = world.tick
    expired = [oid for oid, offer in world.offers.items() if offer["expires"] <= tick]
    for oid in expired:
        offer = world.remove_offer(oid)
        world.emit("trade_expired", offer=oid, agent=offer["from"], target=offer["to"])


def _spawn_items(world: World) -> None:
    world.spawn_credit += world.settings.item_spawn_rate
    cap = world.max_ground_items()
    while world.spawn_credit >= 1.0:
        if len(world.items_grid) >= cap:
            world.spawn_credit = 0.0  # a full map does not bank spawns for later
            return
        world.spawn_credit -= 1.0
        world.spawn_random_item()


def _regrow(world: World) -> None:
    tick = world.tick
    store = world.store
    for eid in sorted(world.regrowing):
        obj = store.get(eid, c.StaticObject)
        if obj.regrow_at <= tick:
            obj.stock += 1
            obj.regrow_at = tick + world.rules.object_regrow_ticks
            if obj.stock >= OBJECTS[obj.kind].max_stock:
                world.regrowing.discard(eid)


def economy_system(world: World) -> None:
    tick = world.tick
    if world.offers:
        _expire_offers(world)
    _spawn_items(world)
    if tick % world.rules.price_update_interval_ticks == 0:
        update_prices(world)
    if tick % REGROW_CHECK_TICKS == 0:
        _regrow(world)
