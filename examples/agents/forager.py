"""Tier 1: a forager that only names an action; the world picks the arguments.

    python main.py --config examples/agents/forager.yaml

``decide_action`` answers an action's name; ``sensible_args`` fills in the nearest food for
``pickup``, the nearest object with stock for ``use``, the nearest agent for ``flee``. So
the forager says ``use`` only when that nearest object is a bush or a tree (a rock's stone
and iron would fill its pack), and stops gathering once it carries ``FULL`` meals: a full
pack is what its built-in brain empties between decisions, and food dropped and picked up
again is no food gathered.
"""

from __future__ import annotations

from agent_world.agents import Observation, SimpleBrain

FOOD = ("berries", "apple", "bread", "meat")
FOOD_PLANTS = ("berry_bush", "tree")
FULL = 6  # meals carried: enough, stop gathering


def nearest_harvest(ctx: Observation) -> str | None:
    """The kind of object ``use`` would go to (as ``sensible_args`` picks it), if any."""
    return next((o.kind for o in ctx.objects if o.stock > 0 or o.kind == "shelter"), None)


class Forager(SimpleBrain):
    def decide_action(self, ctx: Observation) -> str:
        me = ctx.me
        food = sum(me.items.get(kind, 0) for kind in FOOD)
        if me.attacked_by is not None and me.health < 0.5 * me.max_health and ctx.agents:
            return "flee"
        if me.hunger > 40 and food:
            return "eat"
        if me.energy < 20:
            return "rest"
        if food >= FULL:
            return "wander"
        if any(item.kind in FOOD for item in ctx.items):
            return "pickup"
        if nearest_harvest(ctx) in FOOD_PLANTS:
            return "use"
        return "wander"
