"""Heal yourself, or an agent close by."""

NAME = "heal"
DESCRIPTION = "Restore 12-18 health to yourself or an agent within 3 tiles."
ENERGY_COST = 8
COOLDOWN = 40
RANGE = 3
ARGS = {"target": "agent?"}


def execute(ctx):
    who = ctx["target"] or ctx["caster"]
    return [{"type": "heal", "target": who["id"], "amount": 12 + rand_int(0, 6)}]
