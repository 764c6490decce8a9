"""Forager: eats when hungry, gathers the nearest food, keeps clear of whoever hurt it."""

NAME = "forager"
DESCRIPTION = ("Eats when hungry, gathers the nearest food and keeps clear of agents that "
               "attacked it.")
VERSION = 1
PARENT = None

FOOD = ["berries", "apple", "bread", "meat"]
EAT_AT = 45  # hunger (0 fed .. 100 starving) at which it eats what it carries
REST_AT = 20  # energy under which it rests
REST_TICKS = 40
FULL = 6  # food carried: enough, stop gathering
FLEE_HEALTH = 0.5  # share of its health under which it flees an attacker
DANGER_TICKS = 600  # how long an attacker is remembered
KEEP_AWAY = 4  # tiles: a remembered attacker closer than this is fled
WANDER_TICKS = 30


def carried_food(me):
    return sum(me["items"].get(kind, 0) for kind in FOOD)


def decide(obs, memory):
    me = obs["me"]
    tick = obs["tick"]
    # Memory: who attacked it and when (keys are text: memory is JSON).
    danger = {}
    for who, when in memory.get("danger", {}).items():
        if tick - when < DANGER_TICKS:
            danger[who] = when
    if me["attacked_by"] is not None:
        danger[str(me["attacked_by"]["id"])] = tick
    memory = {"danger": danger}

    hit = me["attacked_by"]
    if hit is not None and me["health"] < FLEE_HEALTH * me["max_health"]:
        return {"action": "flee", "args": {"target": hit["id"]}, "memory": memory,
                "reasoning": f"hurt by {hit['name']}"}
    for other in obs["agents"]:
        if str(other["id"]) in danger and other["distance"] < KEEP_AWAY:
            return {"action": "flee", "args": {"target": other["id"]}, "memory": memory,
                    "reasoning": f"{other['name']} attacked me before"}
    food = carried_food(me)
    if me["hunger"] >= EAT_AT and food > 0:
        return {"action": "eat", "args": {}, "memory": memory, "reasoning": "hungry"}
    if me["energy"] < REST_AT:
        return {"action": "rest", "args": {"ticks": REST_TICKS}, "memory": memory}
    if food < FULL:
        for item in obs["items"]:  # nearest first
            if item["kind"] in FOOD:
                return {"action": "pickup", "args": {"target": item["id"]}, "memory": memory,
                        "reasoning": f"{item['kind']} {item['distance']} tiles away"}
        for thing in obs["objects"]:
            if thing["kind"] in ("berry_bush", "tree") and thing["stock"] > 0:
                return {"action": "use", "args": {"target": thing["id"]}, "memory": memory,
                        "reasoning": f"harvest the {thing['kind']}"}
    return {"action": "wander", "args": {"ticks": WANDER_TICKS}, "memory": memory}
