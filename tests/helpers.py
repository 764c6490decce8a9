"""Small builders shared by the system tests: an empty map, agents with known state, plans."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import settings

from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.types import Event

EMPTY_WORLD: dict[str, Any] = {
    "size": [20, 20],
    "starting_agents": 0,
    "obstacle_density": 0.0,
    "objects_per_1000_tiles": 0,
    "shelters_per_1000_tiles": 0,
    "item_spawn_rate": 0.0,
    "max_items_per_1000_tiles": 0,
    "immigration_interval_ticks": 0,
}

# Hypothesis runs the same examples every time: failures reproduce, runs stay short.
PROPERTY = settings(max_examples=200, deadline=None, derandomize=True, database=None)


def small_config(world: Mapping[str, Any] | None = None,
                 game: Mapping[str, Any] | None = None) -> Config:
    """An empty, obstacle-free 20x20 map with no spawning and no immigration."""
    return Config().replace(world={**EMPTY_WORLD, **(world or {})}, game=dict(game or {}))


def small_world(seed: int = 1, *, world: Mapping[str, Any] | None = None,
                game: Mapping[str, Any] | None = None) -> World:
    return World.create(small_config(world, game), seed=seed)


def add_agent(w: World, name: str, x: int, y: int, personality: str = "cautious", *,
              items: Mapping[str, int] | None = None, gold: int = 0, hunger: float = 0.0,
              energy: float = 100.0, health: float | None = None) -> int:
    """An agent with exactly the given goods and needs (spawning randomises them)."""
    eid = w.spawn_agent(name=name, personality=personality, x=x, y=y, gold=gold)
    inv = w.store.get(eid, c.Inventory)
    inv.items = dict(items or {})
    needs = w.store.get(eid, c.Needs)
    needs.hunger = hunger
    needs.energy = energy
    if health is not None:
        needs.health = health
    return eid


def act(name: str, **args: Any) -> dict[str, Any]:
    """One action in the plan-input form."""
    return {"name": name, "args": args}


STAY = act("idle", ticks=100)


def give_plan(w: World, eid: int, *actions: dict[str, Any], stay: bool = True) -> None:
    """Queue a plan for ``eid``, applied at the next ``step``. With ``stay`` the plan ends in
    200 ticks of idling, so that the built-in brain does not take over when it is done."""
    w.inbox.submit("plan", {"agent": eid, "actions": [*actions, *([STAY, STAY] if stay else [])]})


def run(w: World, ticks: int) -> list[Event]:
    """Step ``ticks`` times; all events, each stamped with its tick."""
    events: list[Event] = []
    for _ in range(ticks):
        report = w.step()
        events.extend({**e, "tick": report.tick} for e in report.events)
    return events


def of_type(events: Iterable[Event], type: str) -> list[Event]:
    return [e for e in events if e["type"] == type]


def pos(w: World, eid: int) -> tuple[int, int]:
    p = w.store.get(eid, c.Position)
    return p.x, p.y


def chebyshev(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(abs(a[0] - b[0]), abs(a[1] - b[1]))


def ground(w: World, x: int, y: int) -> dict[str, int]:
    """Item kind -> quantity lying on tile (x, y)."""
    out: dict[str, int] = {}
    for iid in w.ground.items.at(x, y):
        item = w.store.get(iid, c.Item)
        out[item.kind] = out.get(item.kind, 0) + item.qty
    return out


def goods_of(w: World, eid: int) -> dict[str, int]:
    """Everything an agent carries, gold included, as kind -> quantity (no zero entries)."""
    inv = w.store.get(eid, c.Inventory)
    out = dict(inv.items)
    if inv.gold:
        out["gold"] = inv.gold
    return out
