"""Make yourself heard."""

NAME = "proclaim"
DESCRIPTION = "Say something in a voice everyone within hearing notices."
ENERGY_COST = 1
COOLDOWN = 10
RANGE = 0
ARGS = {"text": "text"}


def execute(ctx):
    text = ctx["args"]["text"].strip()
    return [{"type": "message", "text": f"{ctx['caster']['name']} proclaims: {text}"[:160]}]
