"""Perception: each agent's visible set, refreshed every few ticks (staggered by id).

Objects (trees, rocks, shelters) never move, so what an agent sees of them changes only as
fast as it walks: they are re-seen on every third refresh, agents and items on every one.
They are three quarters of what a look has to sort through."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["OBJECTS_EVERY", "perceive", "perception_system"]

OBJECTS_EVERY = 3


def perceive(world: World, eid: int, x: int, y: int,
             objects: bool = True) -> tuple[list[int], list[int], list[int] | None]:
    """Agents (other than ``eid``), items and, unless ``objects`` is false (then None),
    objects within vision radius, nearest first."""
    radius = world.rules.vision_radius
    r2 = radius * radius
    ground = world.ground
    if radius <= world.agents_grid.cell:  # the three grids share one layout
        agents = world.agents_grid.ids_in_block(x, y, r2)
        if eid in agents:
            agents.remove(eid)
        return (agents, ground.items.ids_in_block(x, y, r2),
                ground.objects.ids_in_block(x, y, r2) if objects else None)
    grids = (world.agents_grid, ground.items) + ((ground.objects,) if objects else ())
    found: list[list[tuple[int, int]]] = [[] for _ in grids]
    span = world.agents_grid.bucket_range(x, y, radius)
    for grid, into in zip(grids, found, strict=True):
        grid.collect(x, y, r2, span, into)
    for into in found:
        into.sort()
    return ([e for _d2, e in found[0] if e != eid], [e for _d2, e in found[1]],
            [e for _d2, e in found[2]] if objects else None)


def perception_system(world: World) -> None:
    tick = world.tick
    interval = world.rules.perception_interval_ticks
    schedule = world.schedule
    rows = world.agent_rows()
    for eid in schedule.looks_due(world):
        row = rows.get(eid)
        if row is None:  # died since
            continue
        pos, perc = row.pos, row.perception
        perc.next_update = tick + interval
        schedule.look_at(eid, tick + interval)
        see_objects = (tick // interval + eid) % OBJECTS_EVERY == 0
        agents, items, objects = perceive(world, eid, pos.x, pos.y, see_objects)
        perc.agents, perc.items = agents, items
        if objects is not None:
            perc.objects = objects
