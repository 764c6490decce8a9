"""Cover a few tiles in an instant."""

NAME = "dash"
DESCRIPTION = "Dash to a free tile up to 5 tiles away."
ENERGY_COST = 6
COOLDOWN = 30
RANGE = 5
ARGS = {"x": "int", "y": "int"}


def execute(ctx):
    tile = ctx["tile"]
    if tile["blocked"]:
        return [{"type": "message", "text": "Something blocks the way."}]
    return [{"type": "move", "x": tile["x"], "y": tile["y"]}]
