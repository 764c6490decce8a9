"""Push someone away."""

NAME = "shove"
DESCRIPTION = "Shove an adjacent agent up to 2 tiles away from you."
ENERGY_COST = 5
COOLDOWN = 20
RANGE = 1
ARGS = {"target": "agent"}


def execute(ctx):
    return [{"type": "push", "target": ctx["target"]["id"], "tiles": 2}]
