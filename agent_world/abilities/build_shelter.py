"""Raise a shelter from wood."""

NAME = "build_shelter"
DESCRIPTION = "Use 3 wood to raise a shelter on a free tile within 2 tiles."
ENERGY_COST = 15
COOLDOWN = 100
RANGE = 2
ARGS = {"x": "int", "y": "int"}


def execute(ctx):
    tile = ctx["tile"]
    return [
        {"type": "consume", "item": "wood", "qty": 3},
        {"type": "spawn_object", "kind": "shelter", "x": tile["x"], "y": tile["y"]},
    ]
