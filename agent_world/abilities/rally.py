"""Lift the spirits of everyone around."""

NAME = "rally"
DESCRIPTION = "Heal yourself and up to 3 agents within 3 tiles by 5, and lift their energy."
ENERGY_COST = 12
COOLDOWN = 200
RANGE = 3
ARGS = {}


def execute(ctx):
    caster = ctx["caster"]
    effects = [{"type": "heal", "target": caster["id"], "amount": 5}]
    near = [a for a in ctx["nearby"]["agents"] if a["distance"] <= RANGE]
    for agent in near[:3]:
        effects.append({"type": "heal", "target": agent["id"], "amount": 5})
        effects.append({"type": "need", "target": agent["id"], "need": "energy",
                        "delta": 5})
    effects.append({"type": "message", "text": f"{caster['name']} rallies those nearby!"})
    return effects
