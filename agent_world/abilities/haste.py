"""Quick feet."""

NAME = "haste"
DESCRIPTION = "Walk twice as fast for 60 ticks."
ENERGY_COST = 7
COOLDOWN = 120
RANGE = 0
ARGS = {}


def execute(ctx):
    return [{"type": "status", "target": ctx["caster"]["id"], "status": "haste",
             "ticks": 60}]
