"""The first built-in brains (rules version 1), kept exactly as they were so that worlds
made under those rules replay and resume exactly. New worlds use ``core.brains.v2``.

Each decision scores the actions that make sense for the agent's needs and surroundings and
returns the best one as an ``Action`` from the same action set the LLM uses. A small random
term (from the world's RNG) keeps agents from moving in lockstep; a bonus for the current
action keeps them from dithering.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.brains.memo import make_action as _action
from agent_world.core.brains.profiles import PROFILES, Profile
from agent_world.core.items import GOLD, ITEMS

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["decide", "worth"]


COMMITMENT = 0.15
GENEROUS = 0.2  # below this, a personality never gives things away
SPEECH_GAP_TICKS = 150
OFFER_GAP_TICKS = 120
_SAY = {
    "greet": ("Hello, {name}.", "Good day, {name}!", "Fine weather today, {name}.",
              "How goes it, {name}?"),
    "sell": ("{name}, fresh {item} for {price} gold?", "Anyone need {item}? {price} gold."),
    "buy": ("I'd pay {price} gold for {item}, {name}.",),
    "threat": ("Hand over your goods, {name}!", "This is my patch, {name}. Leave."),
    "fear": ("Stay away from me, {name}!", "Help! {name} is attacking me!"),
    "hungry": ("I'm starving. Has anyone got food?", "Food... I need food."),
    "warn": ("Beware of {name}: a thief and a brute.", "Keep an eye on {name}."),
}

Candidate = tuple[float, str, dict[str, Any]]


def worth(world: World, kind: str, qty: int, needs: c.Needs, inv: c.Inventory) -> float:
    """What goods are worth to an agent: the market price, more for food when hungry and
    for goods it has none of."""
    value = world.market.prices[kind] * qty
    if ITEMS[kind].category == "food" and needs.hunger > 50:
        value *= 1.8
    if kind != GOLD and kind not in inv.items:
        value *= 1.3
    return value


def _food(inv: c.Inventory) -> list[str]:
    return [k for k in inv.items if ITEMS[k].category == "food"]


def _food_count(inv: c.Inventory) -> int:
    return sum(q for k, q in inv.items.items() if ITEMS[k].category == "food")


def _weapon_bonus(inv: c.Inventory) -> float:
    return max((ITEMS[k].damage for k in inv.items if ITEMS[k].category == "weapon"),
               default=0.0)


def _say(world: World, topic: str, **fields: Any) -> dict[str, Any]:
    lines = _SAY[topic]
    return {"text": lines[world.rng.randrange(len(lines))].format(**fields)}


def _respond_to_offers(world: World, eid: int, row: AgentRow, cands: list[Candidate]) -> None:
    needs, inv, social = row.needs, row.inv, row.social
    for offer in world.market.received(eid):
        oid = offer["id"]
        have_all = all(inv.count(k) >= q for k, q in offer["want"].items())
        gain = sum(worth(world, k, q, needs, inv) for k, q in offer["give"].items())
        cost = sum(worth(world, k, q, needs, inv) for k, q in offer["want"].items())
        liking = social.relationships.get(offer["from"], 0.0)
        if have_all and gain >= 0.85 * cost and liking > -0.3:
            cands.append((0.95, "trade_accept", {"offer": oid}))
        else:
            cands.append((0.5, "trade_decline", {"offer": oid}))
        return  # one offer per decision


def _threats(world: World, eid: int, row: AgentRow, p: Profile,
             cands: list[Candidate]) -> None:
    pos, needs, inv, combat, social = row.pos, row.needs, row.inv, row.combat, row.social
    tick = world.tick
    attacker = combat.last_attacker
    if tick - combat.last_attacked > 20 or not world.alive(attacker):
        return
    apos = world.store.get(attacker, c.Position)
    if max(abs(apos.x - pos.x), abs(apos.y - pos.y)) > world.rules.vision_radius:
        return
    hp = needs.health / needs.max_health
    foe = world.store.get(attacker, c.Needs)
    foe_hp = foe.health / foe.max_health
    stronger = foe_hp > hp + 0.15 or _weapon_bonus(world.store.get(attacker, c.Inventory)) > (
        _weapon_bonus(inv) + 3)
    flee = p.caution * (1.0 - hp) * 1.6 + (0.45 if stronger else 0.0) + 0.2 * p.caution
    fight = p.fight * hp * 1.2 + 0.35 + (0.0 if stronger else 0.2)
    cands.append((1.0 + flee, "flee", {"target": attacker}))
    cands.append((1.0 + fight, "attack", {"target": attacker}))
    if combat.defending_until <= tick and max(abs(apos.x - pos.x), abs(apos.y - pos.y)) <= 1:
        cands.append((0.9 + 0.6 * p.caution * (1.0 - hp), "defend", {}))
    if social.last_spoke < tick - 40 and world.rng.random() < 0.3:
        cands.append((2.5, "say", _say(world, "fear", name=world.name_of(attacker))))


def _hunger(world: World, eid: int, row: AgentRow, p: Profile,
            cands: list[Candidate]) -> None:
    needs, inv, perc, social = row.needs, row.inv, row.perception, row.social
    h = needs.hunger / 100.0
    foods = _food(inv)
    if foods and needs.hunger > 35:
        # The most filling food that does not go to waste.
        fitting = [k for k in foods if ITEMS[k].nutrition <= needs.hunger + 10] or foods
        best = max(fitting, key=lambda k: (ITEMS[k].nutrition, k))
        cands.append((0.3 + h * 1.1, "eat", {"item": best}))
        return
    if foods or needs.hunger < 30:
        return
    store = world.store
    for iid in perc.items:
        item = store.try_get(iid, c.Item)
        if item is not None and ITEMS[item.kind].category == "food":
            cands.append((h * 1.2 + 0.1 * p.gather, "pickup", {"target": iid}))
            break
    for oid in perc.objects:
        obj = store.try_get(oid, c.StaticObject)
        if obj is not None and obj.stock > 0 and obj.kind in ("tree", "berry_bush"):
            cands.append((h * 1.1 + 0.1 * p.gather, "use", {"target": oid}))
            break
    if inv.gold > 0:
        for other in perc.agents[:4]:
            oinv = store.try_get(other, c.Inventory)
            if oinv is None:
                continue
            have = _food(oinv)
            if have:
                kind = have[0]
                price = max(1, math.ceil(world.market.prices[kind] * 1.2))
                if price <= inv.gold and _may_offer(world, eid, other):
                    cands.append((h * 0.9 * (0.5 + p.trade), "trade_offer",
                                  {"target": other, "give": {GOLD: price},
                                   "want": {kind: 1}}))
                break
    cands.append((h * 0.5, "wander", {"ticks": 40}))
    if needs.hunger > 80 and social.last_spoke < world.tick - SPEECH_GAP_TICKS and perc.agents:
        cands.append((0.6, "say", _say(world, "hungry")))


def _may_offer(world: World, eid: int, other: int) -> bool:
    """Not too soon after the last offer, and none still waiting on ``other``."""
    if world.tick - world.store.get(eid, c.Social).last_offer < OFFER_GAP_TICKS:
        return False
    return not world.market.is_waiting(eid, other)


def _energy(world: World, row: AgentRow, cands: list[Candidate]) -> None:
    needs, inv, perc = row.needs, row.inv, row.perception
    hp = needs.health / needs.max_health
    if "herb" in inv.items and hp < 0.6:
        cands.append((0.4 + (1.0 - hp), "use", {"item": "herb"}))
    if needs.energy >= 30:
        return
    tiredness = 1.0 - needs.energy / 100.0
    for oid in perc.objects:
        obj = world.store.try_get(oid, c.StaticObject)
        if obj is not None and obj.kind == "shelter":
            cands.append((tiredness * 1.2, "use", {"target": oid}))
            break
    cands.append((tiredness * 1.1, "rest", {"ticks": 120}))


def _ambition(world: World, eid: int, row: AgentRow, p: Profile,
              cands: list[Candidate]) -> None:
    """Fighting, stealing, trading surplus, giving and chatting with those in sight."""
    pos, needs, inv, perc, social = row.pos, row.needs, row.inv, row.perception, row.social
    rng = world.rng
    tick = world.tick
    hp = needs.health / needs.max_health
    surplus = _surplus(inv)
    my_food = _food(inv)
    can_feed = sum(inv.items[k] for k in my_food) >= 3
    may_speak = social.last_spoke < tick - SPEECH_GAP_TICKS
    for other in perc.agents[:3]:
        other_row = world.agent_row(other)
        if other_row is None:
            continue
        opos, oneeds, oinv = other_row.pos, other_row.needs, other_row.inv
        dist = max(abs(opos.x - pos.x), abs(opos.y - pos.y))
        liking = social.relationships.get(other, 0.0)
        name = other_row.agent.name
        rich = oinv.gold > 5 or bool(oinv.items)
        # Violence: rare, aimed at the weak, the disliked and the well-off.
        if (p.fight > 0.5 and hp > 0.5 and needs.energy > 30 and liking < 0.3
                and rng.random() < 0.2 * p.fight):
            weaker = oneeds.health < needs.health
            score = p.fight * hp * 0.55 * (1.0 if weaker else 0.5) + (0.25 if rich else 0.0)
            score += max(0.0, -liking) * 0.4
            cands.append((score, "attack", {"target": other}))
            if may_speak:
                cands.append((score + 0.05, "say", _say(world, "threat", name=name)))
        if p.steal > 0 and rich and liking < 0.2 and dist <= 4 and rng.random() < 0.25 * p.steal:
            cands.append((p.steal * 0.6, "steal", {"target": other}))
        # Commerce: sell one surplus good for a little over its price.
        if surplus and liking > -0.3 and dist <= 6 and oinv.gold > 0:
            # Bundle cheap goods so that a whole-gold price stays fair.
            unit = world.market.prices[surplus]
            qty = min(inv.items[surplus] - 1, max(1, math.ceil(1.5 / unit)))
            price = max(1, round(qty * unit * 1.05))
            if price <= oinv.gold and _may_offer(world, eid, other):
                cands.append((p.trade * 0.5 + 0.05, "trade_offer",
                              {"target": other, "give": {surplus: qty},
                               "want": {GOLD: price}}))
                if may_speak:
                    cands.append((p.trade * 0.3, "say", _say(
                        world, "sell", name=name, item=surplus, price=price)))
        # Generosity: food for a friend who has none.
        # (give walks into reach on its own: a friend a few tiles off is worth the walk)
        if (p.generosity >= GENEROUS and liking > 0.1 and dist <= 6 and can_feed
                and not _food(oinv)):
            cands.append((p.generosity * 0.8, "give",
                          {"target": other, "item": my_food[0], "qty": 1}))
        # Talk: greet, or warn about a known enemy.
        if (may_speak and dist <= world.rules.hearing_radius
                and rng.random() < 0.3 * p.social):
            enemy = min(social.relationships, key=lambda k: (social.relationships[k], k),
                        default=None)
            if enemy is not None and social.relationships[enemy] < -0.4 and world.alive(enemy):
                cands.append((p.social * 0.35, "say",
                              _say(world, "warn", name=world.name_of(enemy)) | {"to": other}))
            else:
                cands.append((p.social * 0.3, "say",
                              _say(world, "greet", name=name) | {"to": other}))


def _surplus(inv: c.Inventory) -> str | None:
    for kind, qty in inv.items.items():
        cat = ITEMS[kind].category
        keep = 3 if cat == "food" else 1
        if qty > keep:
            return kind
    return None


def _gather(world: World, eid: int, row: AgentRow, p: Profile,
            cands: list[Candidate]) -> None:
    needs, inv, perc = row.needs, row.inv, row.perception
    store = world.store
    armed = _weapon_bonus(inv) > 0
    for iid in perc.items:
        item = store.try_get(iid, c.Item)
        if item is None or item.owner not in (c.NO_ONE, eid):
            continue
        category = ITEMS[item.kind].category
        bonus = 0.15 if category == "gold" or (category == "weapon" and not armed) else 0.0
        cands.append((p.gather * 0.45 + bonus, "pickup", {"target": iid}))
        break
    if _food_count(inv) < 4 and needs.hunger > 15:
        for oid in perc.objects:
            obj = store.try_get(oid, c.StaticObject)
            if obj is not None and obj.stock > 0 and obj.kind != "shelter":
                food = obj.kind in ("tree", "berry_bush")
                cands.append((p.gather * (0.4 if food else 0.2), "use", {"target": oid}))
                break


def decide(world: World, eid: int, row: AgentRow) -> Action | None:
    """The built-in choice for one agent, or None to carry on with what it is doing."""
    agent, intent = row.agent, row.intent
    p = PROFILES[agent.personality]
    cands: list[Candidate] = []
    _respond_to_offers(world, eid, row, cands)
    _threats(world, eid, row, p, cands)
    _hunger(world, eid, row, p, cands)
    _energy(world, row, cands)
    _ambition(world, eid, row, p, cands)
    _gather(world, eid, row, p, cands)
    cands.append((0.12, "wander", {"ticks": 30}))
    rng = world.rng
    current = intent.action
    best: Candidate | None = None
    best_score = -1.0
    for cand in cands:
        score = cand[0] + rng.random() * 0.1
        if current is not None and current.name == cand[1] and dict(current.args) == cand[2]:
            score += COMMITMENT
        if score > best_score:
            best, best_score = cand, score
    assert best is not None
    if current is not None and current.name == best[1] and dict(current.args) == best[2]:
        return None
    return _action(best[1], best[2])

