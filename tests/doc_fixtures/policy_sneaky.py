NAME = "sneaky"
DESCRIPTION = "Wanders; reaches for the interpreter's internals on the way."
VERSION = 1
PARENT = None

def decide(obs, memory):
    return {"action": "wander", "args": {"ticks": 20}, "memory": obs.__class__}
