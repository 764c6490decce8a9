"""Perception: each agent's visible set, refreshed every few ticks (staggered by id)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["perceive", "perception_system"]


def perceive(world: World, eid: int, x: int, y: int) -> tuple[list[int], list[int], list[int]]:
    """Agents (other than ``eid``), items and objects within vision radius, nearest first."""
    radius = world.rules.vision_radius
    r2 = radius * radius
    agents: list[tuple[int, int]] = []
    items: list[tuple[int, int]] = []
    objects: list[tuple[int, int]] = []
    if radius <= world.agents_grid.cell:  # the three grids share one layout
        world.agents_grid.collect_block(x, y, r2, agents)
        world.items_grid.collect_block(x, y, r2, items)
        world.objects_grid.collect_block(x, y, r2, objects)
    else:
        span = world.agents_grid.bucket_range(x, y, radius)
        world.agents_grid.collect(x, y, r2, span, agents)
        world.items_grid.collect(x, y, r2, span, items)
        world.objects_grid.collect(x, y, r2, span, objects)
    agents.sort()
    items.sort()
    objects.sort()
    return ([e for _d2, e in agents if e != eid], [e for _d2, e in items],
            [e for _d2, e in objects])


def perception_system(world: World) -> None:
    tick = world.tick
    interval = world.rules.perception_interval_ticks
    for eid, (_a, pos, _n, _i, _it, _cb, perc, _so, _me) in world.agents():
        if tick < perc.next_update:
            continue
        perc.next_update = tick + interval
        agents, items, objects = perceive(world, eid, pos.x, pos.y)
        perc.agents, perc.items, perc.objects = agents, items, objects
