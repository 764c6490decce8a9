"""Survivor: cautious; flees attackers and anyone close while weak, heals, eats and rests."""

NAME = "survivor"
DESCRIPTION = ("Cautious: flees whoever attacks it or comes close while it is weak, heals "
               "with herbs, eats, and rests at shelters.")
VERSION = 1
PARENT = None

FOOD = ["berries", "apple", "bread", "meat"]
WEAK = 0.6  # share of its health under which it keeps away from everyone
HEAL_AT = 0.5  # share of its health under which it uses a herb
DISLIKE = -0.2  # feeling under which an agent is kept away from
PERSONAL_SPACE = 3  # tiles
EAT_AT = 40  # hunger at which it eats
REST_AT = 35  # energy under which it rests
REST_TICKS = 60
SHELTER_REACH = 6  # tiles it walks to rest at a shelter
CALM_TICKS = 200  # after an attack, how long it stays wary of the attacker


def decide(obs, memory):
    me = obs["me"]
    tick = obs["tick"]
    health = me["health"] / me["max_health"]
    hit = me["attacked_by"]
    if hit is not None:
        memory = {"wary_of": hit["id"], "since": tick}
    elif tick - memory.get("since", -CALM_TICKS) >= CALM_TICKS:
        memory = {}

    if hit is not None:
        return {"action": "flee", "args": {"target": hit["id"]}, "memory": memory,
                "reasoning": f"attacked by {hit['name']}"}
    if health < HEAL_AT and me["items"].get("herb", 0) > 0:
        return {"action": "use", "args": {"item": "herb"}, "memory": memory,
                "reasoning": "healing"}
    for other in obs["agents"]:  # nearest first
        if other["distance"] > PERSONAL_SPACE:
            break
        disliked = other["feeling"] is not None and other["feeling"] < DISLIKE
        if health < WEAK or disliked or other["id"] == memory.get("wary_of"):
            return {"action": "flee", "args": {"target": other["id"]}, "memory": memory,
                    "reasoning": f"keeping away from {other['name']}"}
    if me["hunger"] >= EAT_AT and sum(me["items"].get(k, 0) for k in FOOD) > 0:
        return {"action": "eat", "args": {}, "memory": memory, "reasoning": "hungry"}
    if me["energy"] < REST_AT:
        for thing in obs["objects"]:
            if thing["kind"] == "shelter" and thing["distance"] <= SHELTER_REACH:
                return {"action": "use", "args": {"target": thing["id"]}, "memory": memory,
                        "reasoning": "resting at a shelter"}
        return {"action": "rest", "args": {"ticks": REST_TICKS}, "memory": memory}
    for item in obs["items"]:
        if item["kind"] in FOOD or item["kind"] == "herb":
            return {"action": "pickup", "args": {"target": item["id"]}, "memory": memory}
    for thing in obs["objects"]:
        if thing["kind"] == "berry_bush" and thing["stock"] > 0:
            return {"action": "use", "args": {"target": thing["id"]}, "memory": memory}
    return {"action": "idle", "args": {"ticks": 20}, "memory": memory}
