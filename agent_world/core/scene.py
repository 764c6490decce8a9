"""Scenes: a scratch copy of one agent's neighbourhood, to dry-run ability code in.

An ability's code sees only its ``ctx``: the tick, the map's size, the caster (id, name,
place, needs, goods ...), its target and what lies near. A dry run in an invented world (a
small empty map, a caster named "Caster", tick 3, five of every item) is easy to tell from a
real one, and code that behaves only when it is *not* being checked would pass. So checks run
in copies of real neighbourhoods: ``capture`` (main thread, between ticks) copies what lies
within reach of an agent as plain data, with the world's size, tick and next entity id;
``Scene.build`` (any thread) makes a world of it in which every entity keeps its id, name,
place and state. What a call sees there is what it would see if the agent cast now.

What is copied: the terrain (tiles never change), every entity within ``radius`` of the
agent (agents, items, objects, with all their components) and the status effects on those
agents. What is not: entities further away (no ctx shows them), prices, offers and the
world's random state (a scene world draws its own numbers from the seed it is built with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.terrain import Terrain
from agent_world.core.world import World

__all__ = ["SCENE_WORLD", "Scene", "capture", "capture_around"]

SCENE_WORLD: dict[str, Any] = {
    "starting_agents": 0, "item_spawn_rate": 0.0, "immigration_interval_ticks": 0,
}
"""World settings of a scene world: nothing arrives or appears by itself during a dry run."""
MARGIN = 4  # tiles beyond vision and ability range that are copied too


@dataclass(frozen=True, slots=True, kw_only=True)
class Scene:
    """One agent's neighbourhood as plain data (safe to hand to another thread)."""

    agent: int
    tick: int
    seed: int
    next_entity: int
    width: int
    height: int
    tiles: bytes  # the terrain's tile kinds, row by row
    open_tiles: Sequence[int]  # the terrain's placement area (read only)
    rows: tuple[Mapping[str, Any], ...]  # entity rows as in a snapshot, ascending by id
    statuses: Mapping[int, Mapping[str, int]]

    def __post_init__(self) -> None:
        if len(self.tiles) != self.width * self.height:
            raise ValueError(f"tiles has {len(self.tiles)} entries, expected "
                             f"{self.width}x{self.height}")
        if not any(row["id"] == self.agent for row in self.rows):
            raise ValueError(f"the scene's agent #{self.agent} is not among its entities")

    def build(self, config: Config, *, seed: int) -> World:
        """A world holding the scene: the map, tick and entity ids of the original, the
        rules of ``config`` (its world section shaped like the original's), and random
        numbers of its own from ``seed``."""
        settings = {**SCENE_WORLD, "size": [self.width, self.height],
                    "max_agents": max(config.world.max_agents, len(self.rows) + 1)}
        world = World(config.replace(world=settings, persistence={"enabled": False}),
                      Terrain.sharing_area(self.width, self.height, bytearray(self.tiles),
                                           self.open_tiles),
                      seed=seed)
        world.tick = self.tick
        for row in self.rows:
            world.place_entity(int(row["id"]), [c.component_from_state(name, dict(data))
                                                 for name, data in row.items() if name != "id"])
        world.store.set_next_id(self.next_entity)
        for eid, active in self.statuses.items():
            world.abilities.statuses[eid] = dict(active)
        return world


def capture(world: World, agent: int, *, radius: int | None = None) -> Scene:
    """Copy the neighbourhood of ``agent`` (main thread only, between ticks)."""
    pos = world.store.try_get(agent, c.Position)
    if pos is None or not world.is_agent(agent):
        raise ValueError(f"#{agent} is not an agent; a scene is around an agent")
    if radius is None:
        radius = max(world.rules.vision_radius, world.rules.hearing_radius) + (
            world.ability_rules.max_range + MARGIN)
    near = {agent}
    for grid in (world.agents_grid, world.ground.items, world.ground.objects):
        near.update(eid for _d2, eid in grid.near(pos.x, pos.y, radius))
    rows = tuple(orjson.loads(orjson.dumps({"id": eid, **world.store.components(eid)},
                                           option=orjson.OPT_NON_STR_KEYS))
                 for eid in sorted(near))
    statuses = {eid: dict(active) for eid, active in world.abilities.statuses.items()
                if eid in near}
    terrain = world.terrain
    return Scene(agent=agent, tick=world.tick, seed=world.seed,
                 next_entity=world.store.next_id, width=terrain.width,
                 height=terrain.height, tiles=bytes(terrain.tiles),
                 open_tiles=terrain.open_tiles, rows=rows, statuses=statuses)


def capture_around(world: World, first: int | None, count: int) -> tuple[Scene, ...]:
    """Scenes around up to ``count`` living agents: ``first`` (the asker) if it lives, then
    others spread over the population (by id, so the same world gives the same choice
    without drawing on its random numbers). Empty when no agent lives."""
    ids = [eid for eid, row in world.agents() if row.needs.health > 0]
    if not ids:
        return ()
    chosen = [first] if first in ids else []
    rest = [eid for eid in ids if eid != first]
    step = max(1, len(rest) // max(1, count))
    chosen.extend(rest[::step][:max(0, count - len(chosen))])
    return tuple(capture(world, eid) for eid in chosen)
