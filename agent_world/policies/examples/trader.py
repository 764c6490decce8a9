"""Trader: sells its surplus for gold, takes offers worth it, never deals with attackers."""

NAME = "trader"
DESCRIPTION = ("Sells what it has too much of, accepts offers worth it at market prices and "
               "never trades with an agent that attacked it.")
VERSION = 1
PARENT = None

FOOD = ["berries", "apple", "bread", "meat"]
KEEP = 2  # of each kind it carries, never sold
BATCH = 3  # units offered at once
MARKUP = 1.2  # asking price over market value
MIN_GAIN = 0.0  # value in gold an accepted offer must bring at least
EAT_AT = 50  # hunger at which it eats
REACH = 3  # tiles: how close a buyer must be (trade_offer reaches 3)
FOOD_GOLD = 4  # gold it offers for food when it has none
GRUDGES = 8  # attackers remembered (the latest)


def worth(goods, prices):
    total = 0.0
    for kind, qty in goods.items():
        total += qty * (1.0 if kind == "gold" else prices.get(kind, 1.0))
    return total


def holds(me, goods):
    for kind, qty in goods.items():
        held = me["gold"] if kind == "gold" else me["items"].get(kind, 0)
        if held < qty:
            return False
    return True


def decide(obs, memory):
    me = obs["me"]
    prices = obs["prices"]
    grudges = memory.get("grudges", [])
    hit = me["attacked_by"]
    if hit is not None and hit["id"] not in grudges:
        grudges = (grudges + [hit["id"]])[-GRUDGES:]
    memory = {"grudges": grudges}

    for offer in obs["offers"]:
        gain = worth(offer["gives"], prices) - worth(offer["wants"], prices)
        if offer["sender"] in grudges or not holds(me, offer["wants"]) or gain < MIN_GAIN:
            return {"action": "trade_decline", "args": {"offer": offer["id"]},
                    "memory": memory, "reasoning": f"not worth it from {offer['sender_name']}"}
        return {"action": "trade_accept", "args": {"offer": offer["id"]}, "memory": memory,
                "reasoning": f"gains {gain:.1f} gold of value"}
    food = sum(me["items"].get(kind, 0) for kind in FOOD)
    if me["hunger"] >= EAT_AT and food > 0:
        return {"action": "eat", "args": {}, "memory": memory, "reasoning": "hungry"}
    buyers = [a for a in obs["agents"] if a["id"] not in grudges and a["distance"] <= REACH]
    surplus = {kind: n - KEEP for kind, n in me["items"].items() if n > KEEP}
    if buyers and surplus:
        kind = max(surplus, key=lambda k: surplus[k] * prices.get(k, 1.0))
        qty = min(surplus[kind], BATCH)
        price = max(1, round(prices.get(kind, 1.0) * qty * MARKUP))
        return {"action": "trade_offer",
                "args": {"target": buyers[0]["id"], "give": {kind: qty},
                         "want": {"gold": price}},
                "memory": memory, "reasoning": f"selling {qty} {kind} for {price} gold"}
    if buyers and food == 0 and me["gold"] >= FOOD_GOLD:
        return {"action": "trade_offer",
                "args": {"target": buyers[0]["id"], "give": {"gold": FOOD_GOLD},
                         "want": {"berries": 2}},
                "memory": memory, "reasoning": "buying food"}
    if obs["items"]:  # nearest first: goods to sell or eat
        item = obs["items"][0]
        return {"action": "pickup", "args": {"target": item["id"]}, "memory": memory,
                "reasoning": f"picking up {item['kind']}"}
    return {"action": "wander", "args": {"ticks": 30}, "memory": memory,
            "reasoning": "looking for customers"}
