"""Hazards: tiles that hurt whoever stands on them (the foraging scenario's thorn patches).

A hazard is an object (``hazard``) that does not block: agents may cross it, and walk onto
it for food lying there, but lose ``game.hazard_damage`` health every tick they stand on
it. Routes are planned around hazards when a way round is not much longer, and wandering
stops short of them, so it is mostly the agents that go for what lies on one, or are chased
across one, that get hurt. The world makes none unless ``world.hazard_tiles_per_1000_tiles``
is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core import events as ev

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["hazards_system"]


def hazards_system(world: World) -> None:
    tiles = world.ground.hazard_tiles
    damage = world.rules.hazard_damage
    if not tiles or not damage:
        return
    grid, store, w = world.agents_grid, world.store, world.terrain.width
    for tile in sorted(tiles):
        x, y = tile % w, tile // w
        for eid in grid.at(x, y):
            needs = store.get(eid, c.Needs)
            if needs.health <= 0:
                continue
            needs.health = round(needs.health - damage, 2)
            memory = store.get(eid, c.Memory).recent
            note = f"the thorns at ({x}, {y}) hurt me"
            if not memory or memory[-1]["text"] != note:
                world.remember(eid, note)
            world.emit(ev.HAZARD, agent=eid, name=world.name_of(eid), damage=damage, x=x, y=y)
