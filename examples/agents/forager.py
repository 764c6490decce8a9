"""Tier 1: a forager that only names an action; the world picks the arguments.

    python main.py --config examples/agents/forager.yaml

``decide_action`` answers an action's name; ``sensible_args`` fills in the nearest food for
``pickup``, the nearest bush or tree with stock for ``use``, the nearest agent for ``flee``.
"""

from __future__ import annotations

from agent_world.agents import Observation, SimpleBrain

FOOD = ("berries", "apple", "bread", "meat")


class Forager(SimpleBrain):
    def decide_action(self, ctx: Observation) -> str:
        me = ctx.me
        if me.attacked_by is not None and me.health < 0.5 * me.max_health and ctx.agents:
            return "flee"
        if me.hunger > 40 and any(me.items.get(kind, 0) for kind in FOOD):
            return "eat"
        if me.energy < 20:
            return "rest"
        if any(item.kind in FOOD for item in ctx.items):
            return "pickup"
        if any(obj.stock > 0 and obj.kind in ("berry_bush", "tree") for obj in ctx.objects):
            return "use"
        return "wander"
