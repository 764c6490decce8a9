"""A shimmering guard."""

NAME = "shield"
DESCRIPTION = "Halve all damage you take for 100 ticks."
ENERGY_COST = 8
COOLDOWN = 150
RANGE = 0
ARGS = {}


def execute(ctx):
    return [{"type": "status", "target": ctx["caster"]["id"], "status": "shield",
             "ticks": 100}]
