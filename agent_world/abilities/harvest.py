"""Gather from a tree, bush or rock without walking up to it."""

NAME = "harvest"
DESCRIPTION = "Take up to 2 units of what a tree, berry bush or rock within 2 tiles yields."
ENERGY_COST = 4
COOLDOWN = 20
RANGE = 2
ARGS = {"target": "object"}


def execute(ctx):
    yields = {"tree": "apple", "berry_bush": "berries", "rock": "stone"}
    target = ctx["target"]
    kind = yields.get(target["object"])
    if kind is None or target["stock"] < 1:
        return [{"type": "message", "text": "There is nothing to harvest here."}]
    qty = min(2, target["stock"])
    return [{"type": "transfer", "item": kind, "qty": qty, "from": target["id"],
             "to": ctx["caster"]["id"]}]
