NAME = "gust"
DESCRIPTION = "A gust of wind that pushes an agent up to 4 tiles away."
ENERGY_COST = 6
COOLDOWN = 30
RANGE = 4
ARGS = {"target": "agent"}


def execute(ctx):
    return [{"type": "push", "target": ctx["target"]["id"], "tiles": 2}]
