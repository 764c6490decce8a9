"""Economy: prices that follow supply and demand, offer expiry, resource respawn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.items import ITEMS

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["economy_system", "market_demand", "market_supply", "update_prices"]

REGROW_CHECK_TICKS = 50
ANNOUNCE_MOVE = 0.05


_FOOD = tuple(k for k, v in ITEMS.items() if v.category == "food")
_WEAPONS = tuple(k for k, v in ITEMS.items() if v.category == "weapon")
_MATERIALS = tuple(k for k, v in ITEMS.items() if v.category == "material")


def _count_agent(agent: c.Agent, needs: c.Needs, inv: c.Inventory, carried: dict[str, int],
                 wanted: dict[str, float]) -> None:
    """One agent's share of supply (what it carries) and demand (what it needs): hungry
    mouths want food, the unarmed aggressive want weapons, the wounded want herbs."""
    for kind, qty in inv.items.items():
        carried[kind] = carried.get(kind, 0) + qty
    if needs.hunger > 40:
        for kind in _FOOD:
            wanted[kind] = wanted.get(kind, 0.0) + needs.hunger / 100.0
    if agent.personality == "aggressive" and not any(k in inv.items for k in _WEAPONS):
        for kind in _WEAPONS:
            wanted[kind] = wanted.get(kind, 0.0) + 0.5
    if needs.health < needs.max_health * 0.6:
        wanted["herb"] = wanted.get("herb", 0.0) + 1.0


def _finish_demand(world: World, wanted: dict[str, float]) -> dict[str, float]:
    """Add what does not depend on single agents: builders' steady need for materials and
    what every open offer asks for."""
    demand = dict.fromkeys(ITEMS, 0.0)
    demand.update(wanted)
    for kind in _MATERIALS:
        demand[kind] += len(world.agents()) / 10.0
    for offer in world.market.offers.values():
        for kind, qty in offer["want"].items():
            demand[kind] += qty
    return demand


def market_supply(world: World) -> dict[str, int]:
    """Units of each good in the world right now: on the ground and carried."""
    supply = dict.fromkeys(ITEMS, 0)
    supply.update(world.ground.goods)
    carried: dict[str, int] = {}
    wanted: dict[str, float] = {}
    for _eid, (agent, _p, needs, inv, *_rest) in world.agents():
        _count_agent(agent, needs, inv, carried, wanted)
    for kind, qty in carried.items():
        supply[kind] += qty
    return supply


def market_demand(world: World) -> dict[str, float]:
    """Units of each good wanted right now."""
    carried: dict[str, int] = {}
    wanted: dict[str, float] = {}
    for _eid, (agent, _p, needs, inv, *_rest) in world.agents():
        _count_agent(agent, needs, inv, carried, wanted)
    return _finish_demand(world, wanted)


def update_prices(world: World, supply: dict[str, int] | None = None,
                  demand: dict[str, float] | None = None) -> None:
    """Move each price part of the way toward base * (demand / supply), within bounds.

    Without figures, takes a full census of the world now."""
    supply = market_supply(world) if supply is None else supply
    demand = market_demand(world) if demand is None else demand
    cushion = max(1.0, len(world.agents()) / 4.0)
    for kind, old, new in world.market.reprice(supply, demand, cushion,
                                               world.rules.price_sensitivity):
        if abs(new - old) >= ANNOUNCE_MOVE * old:
            world.emit(ev.PRICE, item=kind, old=old, price=new, supply=supply[kind],
                       demand=round(demand[kind], 1))


def _census(world: World) -> None:
    """Count a slice of the agents every tick (every P-th agent, P the price interval), so a
    price update costs no tick more than the others; the last slice of each period sets the
    prices from the period's tally."""
    period = world.rules.price_update_interval_ticks
    phase = world.tick % period
    tally = world.market.tally
    carried, wanted = tally["carried"], tally["wanted"]
    for _eid, (agent, _p, needs, inv, *_rest) in world.agents()[phase::period]:
        _count_agent(agent, needs, inv, carried, wanted)
    if phase == 0:
        supply = dict.fromkeys(ITEMS, 0)
        supply.update(world.ground.goods)
        for kind, qty in carried.items():
            supply[kind] += qty
        update_prices(world, supply, _finish_demand(world, wanted))
        world.market.clear_tally()


def _expire_offers(world: World) -> None:
    for offer in world.market.expire(world.tick):
        world.emit(ev.TRADE_EXPIRED, offer=offer["id"], agent=offer["from"],
                   target=offer["to"])


def _spawn_items(world: World) -> None:
    ground = world.ground
    ground.bank_spawns(world.settings.item_spawn_rate)
    while ground.spawn_due():
        world.spawn_random_item()


def economy_system(world: World) -> None:
    tick = world.tick
    if world.market.offers:
        _expire_offers(world)
    _spawn_items(world)
    _census(world)
    if tick % REGROW_CHECK_TICKS == 0:
        world.ground.regrow(tick)
