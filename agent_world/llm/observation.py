"""Observations: what one agent can see, hear and remember, as compact JSON-only data.

Built on the main thread (the only thread that may read the world) and handed to a worker as
plain data. Only what the agent perceives goes in: its own state, the nearest agents, items
and objects it sees, speech it heard, offers made to it, and its own recent memory.
"""

from __future__ import annotations

from typing import Any

from agent_world.core import components as c
from agent_world.core.world import World

__all__ = ["MAX_HEARD", "MAX_SEEN", "observe"]

MAX_SEEN = 5
MAX_HEARD = 4
MAX_REMEMBERED = 3
RECENT_ATTACK_TICKS = 20


def _r(x: float) -> int:
    return round(x)


def _dist(pos: c.Position, other: c.Position) -> int:
    return max(abs(pos.x - other.x), abs(pos.y - other.y))


def observe(world: World, eid: int) -> dict[str, Any]:
    """The observation of living agent ``eid`` (main thread only)."""
    store = world.store
    agent = store.get(eid, c.Agent)
    pos = store.get(eid, c.Position)
    needs = store.get(eid, c.Needs)
    inv = store.get(eid, c.Inventory)
    intent = store.get(eid, c.Intent)
    combat = store.get(eid, c.Combat)
    perc = store.get(eid, c.Perception)
    social = store.get(eid, c.Social)
    memory = store.get(eid, c.Memory)
    tick = world.tick

    you: dict[str, Any] = {
        "id": eid, "name": agent.name, "at": [pos.x, pos.y],
        "health_pct": _r(100 * needs.health / needs.max_health),
        "energy": _r(needs.energy), "hunger": _r(needs.hunger),
        "gold": inv.gold, "items": dict(inv.items),
        "reputation": round(social.reputation, 2),
        "doing": str(intent.action) if intent.action else "nothing",
    }
    if intent.plan:
        you["plan_left"] = [str(a) for a in intent.plan]
    if intent.last_result and intent.last_result != "ok":
        you["last_result"] = intent.last_result
    if tick - combat.last_attacked <= RECENT_ATTACK_TICKS and combat.last_attacker:
        you["attacked_by"] = {"id": combat.last_attacker,
                              "name": world.name_of(combat.last_attacker),
                              "ticks_ago": tick - combat.last_attacked}

    agents = []
    for other in perc.agents[:MAX_SEEN]:
        opos = store.try_get(other, c.Position)
        oneeds = store.try_get(other, c.Needs)
        if opos is None or oneeds is None:
            continue
        seen: dict[str, Any] = {"id": other, "name": world.name_of(other),
                                "at": [opos.x, opos.y], "dist": _dist(pos, opos),
                                "health_pct": _r(100 * oneeds.health / oneeds.max_health)}
        feeling = social.relationships.get(other)
        if feeling:
            seen["feeling"] = round(feeling, 2)
        agents.append(seen)

    items = []
    for iid in perc.items[:MAX_SEEN]:
        item = store.try_get(iid, c.Item)
        ipos = store.try_get(iid, c.Position)
        if item is None or ipos is None:
            continue
        items.append({"id": iid, "kind": item.kind, "qty": item.qty, "at": [ipos.x, ipos.y],
                      "dist": _dist(pos, ipos)})

    objects = []
    for oid in perc.objects[:MAX_SEEN]:
        obj = store.try_get(oid, c.StaticObject)
        opos = store.try_get(oid, c.Position)
        if obj is None or opos is None:
            continue
        objects.append({"id": oid, "kind": obj.kind, "at": [opos.x, opos.y],
                        "dist": _dist(pos, opos), "stock": obj.stock})

    heard = []
    for said in perc.heard[-MAX_HEARD:]:
        entry = {"from": f"{said.get('name')}#{said.get('from')}", "text": said.get("text"),
                 "ticks_ago": tick - int(said.get("tick", tick))}
        if said.get("to") == eid:
            entry["to_you"] = True
        heard.append(entry)

    offers = []
    for oid in world.offers_to.get(eid, ())[:MAX_SEEN]:
        offer = world.offers[oid]
        offers.append({"offer": oid, "from": f"{world.name_of(offer['from'])}#{offer['from']}",
                       "gives_you": offer["give"], "wants": offer["want"],
                       "expires_in": offer["expires"] - tick})

    obs: dict[str, Any] = {"you": you}
    if agents:
        obs["agents"] = agents
    if items:
        obs["items"] = items
    if objects:
        obs["objects"] = objects
    if heard:
        obs["heard"] = heard
    if offers:
        obs["offers_to_you"] = offers
    remembered = [m["text"] for m in memory.recent[-MAX_REMEMBERED:]]
    if remembered:
        obs["happened"] = remembered
    # Prices of what matters here only: goods carried, seen, or offered to the agent.
    kinds = {*inv.items, *(i["kind"] for i in items), "gold"}
    for offer in offers:
        kinds.update(offer["gives_you"], offer["wants"])
    obs["prices"] = {k: round(v, 1) for k, v in world.prices.items() if k in kinds}
    return obs
