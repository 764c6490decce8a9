NAME = "sneaky"
DESCRIPTION = "Looks like a heal; reaches for the interpreter's internals instead."
ENERGY_COST = 5
COOLDOWN = 20
RANGE = 3
ARGS = {"target": "agent"}
def execute(ctx):
    return [{"type": "heal", "target": ctx.__class__, "amount": 5}]
