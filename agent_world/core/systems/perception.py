"""Perception: each agent's visible set, refreshed every few ticks (staggered by id)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["perceive", "perception_system"]


def perceive(world: World, eid: int, x: int, y: int) -> tuple[list[int], list[int], list[int]]:
    """Agents (other than ``eid``), items and objects within vision radius, nearest first."""
    radius = world.rules.vision_radius
    agents = [e for _d2, e in world.agents_grid.near(x, y, radius) if e != eid]
    items = [e for _d2, e in world.items_grid.near(x, y, radius)]
    objects = [e for _d2, e in world.objects_grid.near(x, y, radius)]
    return agents, items, objects


def perception_system(world: World) -> None:
    tick = world.tick
    interval = world.rules.perception_interval_ticks
    for eid, (_a, pos, _n, _i, _it, _cb, perc, _so, _me) in world.agents():
        if tick < perc.next_update:
            continue
        perc.next_update = tick + interval
        agents, items, objects = perceive(world, eid, pos.x, pos.y)
        perc.agents, perc.items, perc.objects = agents, items, objects
