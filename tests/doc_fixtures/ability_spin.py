NAME = "spin"
DESCRIPTION = "Spins forever: the step budget stops it."
ENERGY_COST = 5
COOLDOWN = 20
RANGE = 0
ARGS = {}


def execute(ctx):
    while True:
        pass
