"""Find food where others see none."""

NAME = "forage"
DESCRIPTION = "Search the ground: always a handful of berries, sometimes an apple too."
ENERGY_COST = 6
COOLDOWN = 60
RANGE = 0
ARGS = {}


def execute(ctx):
    found = [{"type": "create_item", "item": "berries", "qty": 1 + rand_int(0, 1)}]
    if rand_chance(0.25):
        found.append({"type": "create_item", "item": "apple", "qty": 1})
    return found
