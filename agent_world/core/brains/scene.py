"""What built-in brains (v2) do with the scenario mechanics, where a world has them.

- **Crafting** (``game.recipes``): craft the most valuable thing the goods carried allow;
  otherwise pick up or harvest a raw input a recipe still lacks. Recipe inputs are kept, not
  sold or dropped as junk.
- **Teams**: never attack or rob a teammate; go for the nearest capture point the team does
  not hold (or one another team is taking), hold it once there, and fight enemies close by.

A world without these mechanics never reaches this code, so its decisions (and random
draws) are those of the brains before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core.items import ITEMS, OBJECTS
from agent_world.core.recipes import craftable
from agent_world.core.teams import team_of

if TYPE_CHECKING:
    from agent_world.core.brains.v2 import Candidate, _Mind
    from agent_world.core.world import World

__all__ = ["is_recipe_input", "mates", "scene_choices"]

HOLD_TICKS = 10  # a holder looks around again this often
ENEMY_REACH = 4  # tiles within which a team agent goes for an enemy


def is_recipe_input(world: World, kind: str) -> bool:
    return any(kind in inputs for inputs in world.recipes.values())


def mates(m: _Mind, other: int) -> bool:
    """Whether ``other`` plays for the deciding agent's team."""
    return bool(m.team) and team_of(m.world, other) == m.team


def scene_choices(m: _Mind, cands: list[Candidate]) -> None:
    world = m.world
    if world.recipes:
        _crafting(m, cands)
    if m.team:
        if world.ground.capture_points:
            _capture(m, cands)
        _enemies(m, cands)


def _lacking(m: _Mind) -> set[str]:
    """Raw inputs (not made by a recipe) of the recipes the agent cannot craft yet."""
    recipes, inv = m.world.recipes, m.inv
    out: set[str] = set()
    for inputs in recipes.values():
        for kind, n in inputs.items():
            if kind not in recipes and inv.count(kind) < n:
                out.add(kind)
    return out


def _crafting(m: _Mind, cands: list[Candidate]) -> None:
    world, store, p = m.world, m.world.store, m.p
    ready = craftable(world.recipes, m.inv.items, m.inv.gold)
    if ready:
        cands.append((0.35 + 0.3 * p.gather, "craft", {"item": ready[0]}))
        return
    needed = _lacking(m)
    if not needed or m.burden >= 0.9:
        return
    sight = world.rules.vision_radius
    for iid in m.perc.items:
        item = store.try_get(iid, c.Item)
        if (item is not None and item.kind in needed and item.owner in (c.NO_ONE, m.eid)
                and not m.avoids(iid) and ITEMS[item.kind].weight <= m.room
                and m.dist(store.get(iid, c.Position)) <= sight):
            cands.append((0.3 + 0.25 * p.gather, "pickup", {"target": iid}))
            break
    for oid in m.perc.objects:
        obj = store.try_get(oid, c.StaticObject)
        if obj is None or obj.stock <= 0 or m.avoids(oid):
            continue
        kind = OBJECTS[obj.kind]
        if ((kind.yields in needed or kind.rare_yield in needed)
                and m.dist(store.get(oid, c.Position)) <= sight):
            cands.append((0.25 + 0.25 * p.gather, "use", {"target": oid}))
            break


def _capture(m: _Mind, cands: list[Candidate]) -> None:
    world, store = m.world, m.world.store
    radius = world.rules.capture_radius
    best: tuple[int, int, c.Position, bool] | None = None
    for point in sorted(world.ground.capture_points):
        state = world.teams.points.get(point, {})
        ours = state.get("owner") == m.team and not state.get("claimant")
        pos = store.get(point, c.Position)
        there = (pos.x - m.pos.x) ** 2 + (pos.y - m.pos.y) ** 2 <= radius * radius
        if ours and not there:
            continue  # held and unchallenged: others are needed more elsewhere
        key = (0 if not ours else 1, m.dist(pos))
        if best is None or key < best[:2]:
            best = (*key, pos, there)
    if best is None:
        return
    pos = best[2]
    if best[3]:
        cands.append((0.5 + 0.2 * m.p.fight, "idle", {"ticks": HOLD_TICKS}))
    else:
        cands.append((0.45 + 0.15 * m.p.fight, "move_to", {"x": pos.x, "y": pos.y}))


def _enemies(m: _Mind, cands: list[Candidate]) -> None:
    world = m.world
    if m.hp < 0.4:
        return
    for other in m.perc.agents[:5]:
        enemy = team_of(world, other)
        if not enemy or enemy == m.team:
            continue
        opos = world.store.try_get(other, c.Position)
        if opos is not None and m.dist(opos) <= ENEMY_REACH:
            cands.append((0.4 + 0.4 * m.p.fight * m.hp, "attack", {"target": other}))
            return
