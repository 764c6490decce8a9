"""A ranged attack."""

NAME = "fire_bolt"
DESCRIPTION = "Hurl a bolt of fire at an agent up to 6 tiles away for 6-10 damage."
ENERGY_COST = 10
COOLDOWN = 25
RANGE = 6
ARGS = {"target": "agent"}


def execute(ctx):
    target = ctx["target"]
    damage = 6 + rand_int(0, 4)
    return [
        {"type": "damage", "target": target["id"], "amount": damage},
        {"type": "message", "text": f"A bolt of fire streaks toward {target['name']}!"},
    ]
