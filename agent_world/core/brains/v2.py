"""Built-in brains of rules version 2 on: utility choices by personality.

Each decision scores what makes sense for the agent's needs and surroundings and returns the
best as an ``Action`` (a small random term keeps agents out of lockstep; a bonus for the
current action keeps them from dithering). What changed from the first brains:

- **Trade by need.** Goods are worth to an agent what the market pays, more when it needs
  them (hungry with little food, unarmed and fond of a fight, wounded without herbs) and
  less when it holds plenty. A seller offers spare goods to someone who looks in need of
  them and can pay and carry them, at the market price plus a markup it haggles for; the
  buyer weighs the offer with its own valuation and some mood of the moment, and declines
  when the seller walked off, no longer holds the goods, or it could not carry them.
  Traders buy gluts cheaply to sell on. Gold is worth less to the rich, who spend it more
  readily.
- **Carrying.** Agents pick up, harvest and buy only what they can carry
  (``game.carry_capacity``) and have a use for (food while their stock is low, herbs, a
  better weapon, wood for a shelter, gold); junk goes now and then, and when loaded they
  sell first and drop what is worth least for its weight.
- **Shelters.** Builders (the cautious and gatherers) with the wood for it raise a shelter
  (build_shelter) where none is in sight.
- **Fights.** Fighters pick on the weaker and flee when badly hurt; the others hit back
  only while the attacker stands close, and let it go.
- **No endless failures.** A target an agent could not reach is left alone for a while
  (``world.minds``); targets out of sight are not chosen.
- **Talk** comes from ``speech``: lines from the speaker's state, memory and relationships.
- **Abilities and the angel** come from ``casting``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.brains import casting, scene, speech
from agent_world.core.brains.memo import make_action
from agent_world.core.brains.profiles import PROFILES, Profile
from agent_world.core.goods import WEIGHTS, load, room, units_that_fit
from agent_world.core.items import GOLD, ITEMS, OBJECTS
from agent_world.core.teams import team_of

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["decide", "value"]

COMMITMENT = 0.15
GENEROUS = 0.2  # below this, a personality never gives things away
SPEECH_GAP_TICKS = 150
OFFER_GAP_TICKS = 150
FIGHT_TICKS = 20  # an attack this recent is a fight still going on
AFTER_FIGHT_TICKS = 300  # an attack this recent is still on an agent's mind
KEEP_FOOD = 4  # food units an agent keeps before it sells any
BURDENED = 0.8  # share of the capacity past which selling comes first
DROP_AT = 0.85  # share of the capacity past which spare goods are dropped
JUNK_AT = 0.3  # share of the capacity past which junk is dropped now and then
LIGHTEN_TO = 0.7  # a drop aims to bring the load down to this share
FIGHTER = 0.5  # fight drive above which a personality starts fights and taunts
RICH = 60  # gold past which an agent values each gold less (and spends more readily)
BUILD_WOOD = 3  # wood a shelter takes (build_shelter)
STEAL_CHANCE = 0.07  # chance per decision and agent in reach that a thief thinks of stealing
HEAL_AT = 0.4  # health share below which anyone heals itself with an ability
MEND_AT = 0.65  # health share below which the cautious do
ATTACK_CHANCE = 0.08  # chance per decision and agent in sight that a fighter thinks of a fight

Args = dict[str, Any] | Callable[[], dict[str, Any]]
Candidate = tuple[float, str, Args]


class _Mind:
    """The facts one decision uses, looked up once."""

    __slots__ = ("_spare", "armed", "burden", "casting", "eid", "energy", "food_units", "foods",
                 "hp", "inv", "may_speak", "needs", "p", "perc", "pos", "reserved", "room",
                 "row", "rows", "social", "team", "tick", "world")

    def __init__(self, world: World, eid: int, row: AgentRow) -> None:
        self.world = world
        self.eid = eid
        self.row = row
        self.p: Profile = PROFILES[row.agent.personality]
        self.tick = world.tick
        needs, inv, social = row.needs, row.inv, row.social
        self.pos, self.needs, self.inv = row.pos, needs, inv
        self.perc, self.social = row.perception, social
        self.hp = needs.health / needs.max_health
        self.energy = needs.energy
        self.reserved = reserved = _reserved(world, eid)
        foods: list[str] = []
        units = 0
        for kind, qty in inv.items.items():  # food not promised in an open offer
            if kind in _FOOD_KINDS and qty > reserved.get(kind, 0):
                foods.append(kind)
                units += qty
        self.foods, self.food_units = foods, units
        capacity = world.rules.carry_capacity
        weight = load(inv) if capacity else 0.0
        self.burden = weight / capacity if capacity else 0.0
        self.room = capacity - weight if capacity else math.inf
        self.may_speak = social.last_spoke < self.tick - SPEECH_GAP_TICKS
        self.casting = casting.can_cast(world)
        self._spare: dict[str, int] = {}
        self.armed = _weapon_bonus(inv)  # the damage bonus of the best weapon carried
        self.team = team_of(world, eid) if world.population.teams else ""
        self.rows = world.agent_rows()

    def dist(self, pos: c.Position) -> int:
        return max(abs(pos.x - self.pos.x), abs(pos.y - self.pos.y))

    def avoids(self, target: int) -> bool:
        return self.world.minds.avoids(self.eid, target, self.tick)

    def spare(self, kind: str) -> int:
        """Units of ``kind`` the agent would part with."""
        known = self._spare.get(kind)
        if known is None:
            known = self._spare[kind] = self._count_spare(kind)
        return known

    def _count_spare(self, kind: str) -> int:
        have = self.inv.items.get(kind, 0) - self.reserved.get(kind, 0)
        cat = ITEMS[kind].category
        if cat == "food":
            keep = KEEP_FOOD if self.burden < BURDENED else 2
        elif cat == "weapon":
            keep = 1 if ITEMS[kind].damage >= self.armed else 0
        elif cat == "medicine":
            keep = 1
        elif kind == "wood" and _builder(self):
            keep = BUILD_WOOD
        elif self.world.recipes and scene.is_recipe_input(self.world, kind):
            keep = have
        else:
            keep = 0
        return max(0, have - keep)


def _reserved(world: World, eid: int) -> dict[str, int]:
    """Goods promised in this agent's open offers."""
    out: dict[str, int] = {}
    for offer in world.market.sent(eid):
        for kind, qty in offer["give"].items():
            out[kind] = out.get(kind, 0) + qty
    return out


def _weapon_bonus(inv: c.Inventory) -> float:
    best = None
    for kind in inv.items:
        damage = _WEAPON_DAMAGE.get(kind)
        if damage is not None and (best is None or damage > best):
            best = damage
    return 0.0 if best is None else best


def _yield_weight(kind: str) -> float:
    """The most a harvest of one unit from an object of ``kind`` can weigh."""
    spec = OBJECTS[kind]
    return max((ITEMS[k].weight for k in (spec.yields, spec.rare_yield) if k), default=0.0)


FORAGE_WEIGHT = 2.0  # the most a forage brings (2 berries and an apple)


def _food_units(inv: c.Inventory) -> int:
    return sum(q for k, q in inv.items.items() if k in _FOOD_KINDS)


# -- what goods are worth ----------------------------------------------------------------------


def need_factor(world: World, personality: str, needs: c.Needs, inv: c.Inventory,
                kind: str) -> float:
    """How much more (or less) than the market price ``kind`` is worth to an agent."""
    spec = ITEMS[kind]
    cat = spec.category
    p = PROFILES[personality]
    resale = 0.9 if p.trade >= 1.0 else 0.0  # traders buy to sell on
    if cat == "food":
        have = _food_units(inv)
        factor = 1.5 if have < 2 else 0.6 if have >= 8 else 1.0
        if needs.hunger > 50:
            factor *= 1.4
        return max(factor, resale)
    if cat == "weapon":
        best = _weapon_bonus(inv)
        if spec.damage <= best:
            return max(0.3, resale)
        if p.fight > FIGHTER:
            return 1.8
        return max(0.9 if not best else 0.5, resale)
    if cat == "medicine":
        if needs.health < needs.max_health * 0.6:
            return 1.6
        return max(1.1 if kind not in inv.items else 0.6, resale)
    if kind == "wood" and p.gather >= 0.6 and p.fight <= FIGHTER and inv.count(kind) < BUILD_WOOD:
        return 1.2  # a builder short of wood for a shelter
    return 0.3  # materials nobody here uses


def gold_value(inv: c.Inventory) -> float:
    """What one gold is worth to an agent: less to the rich, who spend more readily."""
    return 1.0 if inv.gold <= RICH else max(0.5, RICH / inv.gold)


def value(world: World, personality: str, needs: c.Needs, inv: c.Inventory,
          goods: dict[str, int]) -> float:
    """What ``goods`` are worth to an agent, in gold."""
    total = 0.0
    prices = world.market.prices
    for kind, qty in goods.items():
        if kind == GOLD:
            total += qty * gold_value(inv)
        else:
            total += prices[kind] * qty * need_factor(world, personality, needs, inv, kind)
    return total


def _wanted(m: _Mind) -> set[str]:
    """The kinds of goods the agent would pick up (and can carry)."""
    p = m.p
    dealer = p.trade >= 1.0 and m.burden < 0.5  # traders take goods to sell on
    out = {GOLD}
    if m.food_units < KEEP_FOOD + 3 or dealer:
        out.update(_FOODS)
    if m.inv.count("herb") < 2 or dealer:
        out.add("herb")
    if p.fight > FIGHTER or not m.armed or p.trade >= 1.0:
        out.update(k for k in _WEAPONS if ITEMS[k].damage > m.armed)
    if _builder(m) and m.inv.count("wood") < BUILD_WOOD:
        out.add("wood")
    room = m.room
    return {k for k in out if WEIGHTS[k] <= room}


_FOODS = tuple(k for k, v in ITEMS.items() if v.category == "food")
_FOOD_KINDS = frozenset(_FOODS)
_WEAPONS = tuple(k for k, v in ITEMS.items() if v.category == "weapon")
_WEAPON_DAMAGE = {k: ITEMS[k].damage for k in _WEAPONS}


def _builder(m: _Mind) -> bool:
    return m.p.gather >= 0.6 and m.p.fight <= FIGHTER


def _fits(world: World, inv: c.Inventory, gain: dict[str, int],
          loss: dict[str, int]) -> bool:
    capacity = world.rules.carry_capacity
    if not capacity:
        return True
    delta = sum(ITEMS[k].weight * q for k, q in gain.items()) - sum(
        ITEMS[k].weight * q for k, q in loss.items())
    return delta <= 0 or delta <= room(world, inv) + 1e-9


# -- offers made to this agent -------------------------------------------------------------------


def _offers(m: _Mind, cands: list[Candidate]) -> None:
    world, eid = m.world, m.eid
    for offer in world.market.received(eid):
        oid = offer["id"]
        give, want = offer["give"], offer["want"]
        sender = offer["from"]
        srow = m.rows.get(sender)
        ok = srow is not None
        if srow is not None:
            near = m.dist(srow.pos) <= world.rules.trade_range + 1  # a step to spare
            sender_has = all(srow.inv.count(k) >= q for k, q in give.items())
            have_all = all(m.inv.count(k) - m.reserved.get(k, 0) >= q for k, q in want.items())
            liking = m.social.relationships.get(sender, 0.0)
            ok = (near and sender_has and have_all and liking > -0.3
                  and _fits(world, m.inv, give, want))
            if ok:
                gain = value(world, m.row.agent.personality, m.needs, m.inv, give)
                cost = value(world, m.row.agent.personality, m.needs, m.inv, want)
                ok = gain * (0.8 + 0.4 * world.rng.random()) >= cost
        if ok:
            cands.append((0.95, "trade_accept", {"offer": oid}))
        else:
            cands.append((0.5, "trade_decline", {"offer": oid}))
        return  # one offer per decision


# -- danger ------------------------------------------------------------------------------------


def _threats(m: _Mind, cands: list[Candidate]) -> int | None:
    """Answers to an attack going on; returns the attacker, if any."""
    world, eid, p, tick = m.world, m.eid, m.p, m.tick
    combat = m.row.combat
    attacker = combat.last_attacker
    if tick - combat.last_attacked > FIGHT_TICKS or attacker == eid or not world.alive(attacker):
        return None
    arow = m.rows.get(attacker)
    if arow is None:
        return None
    dist = m.dist(arow.pos)
    if dist > world.rules.vision_radius:
        return None
    hp = m.hp
    foe_hp = arow.needs.health / arow.needs.max_health
    stronger = foe_hp > hp + 0.15 or _weapon_bonus(arow.inv) > _weapon_bonus(m.inv) + 3
    flee = (p.caution * (1.0 - hp) * 1.6 + (0.45 if stronger else 0.0) + 0.2 * p.caution
            + (0.9 if hp < 0.3 else 0.6 if hp < 0.45 and stronger else 0.0))
    fight = p.fight * hp * 1.2 + 0.35 + (0.0 if stronger else 0.2)
    cands.append((1.0 + flee, "flee", {"target": attacker}))
    # Fighters give chase; everyone else hits back only while the attacker stands close.
    if p.fight > FIGHTER or dist <= 1:
        cands.append((1.0 + fight, "attack", {"target": attacker}))
    if combat.defending_until <= tick and dist <= 1:
        cands.append((0.9 + 0.6 * p.caution * (1.0 - hp), "defend", {}))
    if m.social.last_spoke < tick - 40 and world.rng.random() < 0.3:
        fights = p.fight > FIGHTER
        cands.append((2.5, "say", partial(speech.cry, world, fights, attacker)))
    if m.casting:
        _battle_spells(m, cands, attacker, dist, fight, flee, fleeing=flee > fight)
    return attacker


def _battle_spells(m: _Mind, cands: list[Candidate], foe: int, dist: int, fight: float,
                   flee: float, *, fleeing: bool) -> None:
    world, eid, p, hp = m.world, m.eid, m.p, m.hp
    energy = m.energy
    if (p.fight > FIGHTER and dist <= 6 and casting.tempted(world, "fire_bolt")
            and casting.ready(world, eid, "fire_bolt", energy)):
        cands.append((1.1 + fight, "use_ability", {"ability": "fire_bolt", "target": foe}))
    if (dist <= 1 and (hp < 0.45 or (p.fight > FIGHTER and casting.tempted(world, "shove")))
            and casting.ready(world, eid, "shove", energy)):
        cands.append((1.05 + max(fight, flee), "use_ability",
                      {"ability": "shove", "target": foe}))
    if ((p.caution >= 1.0 or (p.caution >= 0.5 and casting.tempted(world, "shield")))
            and not world.abilities.has_status(eid, "shield", m.tick)
            and casting.ready(world, eid, "shield", energy)):
        cands.append((1.2 + p.caution, "use_ability", {"ability": "shield"}))
    if hp < HEAL_AT and casting.ready(world, eid, "heal", energy):
        cands.append((1.0 + p.caution + (1.0 - hp), "use_ability", {"ability": "heal"}))
    for need in ("slow", "root", "poison", "blink") if fleeing else ("poison", "root"):
        for name in casting.known_for(world, eid, need):
            spec = casting.ready(world, eid, name, energy)
            args = spec and casting.args_for(world, eid, spec, need, foe, "")
            if args:
                cands.append((1.15 + max(fight, flee), "use_ability", args))
                return


def _after_fight(m: _Mind, cands: list[Candidate]) -> None:
    """Calm again after a fight: time to ask the angel for a defence, if none is known."""
    world, combat, p = m.world, m.row.combat, m.p
    since = m.tick - combat.last_attacked
    if not m.casting or since <= FIGHT_TICKS or since > AFTER_FIGHT_TICKS:
        return
    if world.rng.random() > 0.3:
        return
    need = ("poison" if p.fight > FIGHTER else "slow" if p.caution >= 1.0
            else "root" if p.gather >= 1.0 else "regen")
    args = casting.wants_to_ask(world, m.eid, need)
    if args is not None:
        cands.append((0.7, "request_ability", args))


# -- needs -------------------------------------------------------------------------------------


def _hunger(m: _Mind, cands: list[Candidate]) -> None:
    world, p, needs = m.world, m.p, m.needs
    h = needs.hunger / 100.0
    foods = m.foods
    if foods and needs.hunger > 35:
        # The most filling food that does not go to waste.
        fitting = [k for k in foods if ITEMS[k].nutrition <= needs.hunger + 10] or foods
        best = max(fitting, key=lambda k: (ITEMS[k].nutrition, k))
        cands.append((0.3 + h * 1.1, "eat", {"item": best}))
        return
    if foods or needs.hunger < 30:
        return
    store = world.store
    sight = world.rules.vision_radius
    found = False
    for iid in m.perc.items:
        item = store.try_get(iid, c.Item)
        if (item is None or ITEMS[item.kind].category != "food"
                or item.owner not in (c.NO_ONE, m.eid) or m.avoids(iid)):
            continue
        ipos = store.get(iid, c.Position)
        if m.dist(ipos) <= sight and m.room >= ITEMS[item.kind].weight:
            cands.append((h * 1.2 + 0.1 * p.gather, "pickup", {"target": iid}))
            found = True
            break
    for oid in m.perc.objects:
        obj = store.try_get(oid, c.StaticObject)
        if (obj is None or obj.stock <= 0 or obj.kind not in ("tree", "berry_bush")
                or m.avoids(oid) or m.room < _yield_weight(obj.kind)
                or m.dist(store.get(oid, c.Position)) > sight):
            continue
        cands.append((h * 1.1 + 0.1 * p.gather, "use", {"target": oid}))
        found = True
        break
    if m.inv.gold > 0:
        _buy_food(m, cands, h)
    if m.casting and m.room >= FORAGE_WEIGHT:
        _magic_food(m, cands, h, found)
    cands.append((h * 0.5, "wander", {"ticks": 40}))
    if needs.hunger > 80 and m.may_speak and m.perc.agents:
        cands.append((0.6, "say", partial(speech.asking_for_food, world)))


def _magic_food(m: _Mind, cands: list[Candidate], h: float, found: bool) -> None:
    """Forage; or, with forage out of reach, an ability the angel taught for food, or a
    request for one."""
    world, eid, p = m.world, m.eid, m.p
    if casting.ready(world, eid, "forage", m.energy):
        cands.append((h * (0.8 + 0.5 * p.gather) + (0.0 if found else 0.2), "use_ability",
                      {"ability": "forage"}))
        return
    if found or m.needs.hunger <= 60:
        return
    for name in casting.known_for(world, eid, "food"):
        spec = casting.ready(world, eid, name, m.energy)
        args = spec and casting.args_for(world, eid, spec, "food", None, "")
        if args:
            cands.append((h * 1.2, "use_ability", args))
            return
    ask = casting.wants_to_ask(world, eid, "food")
    if ask is not None:
        cands.append((h * 0.8, "request_ability", ask))


def _buy_food(m: _Mind, cands: list[Candidate], h: float) -> None:
    world = m.world
    for other in m.perc.agents[:4]:
        orow = m.rows.get(other)
        if orow is None or m.avoids(other) or m.social.relationships.get(other, 0.0) < -0.3:
            continue
        oinv = orow.inv
        have = [k for k in oinv.items if ITEMS[k].category == "food" and oinv.items[k] >= 2]
        if not have or _food_units(oinv) < 3:
            continue
        kind = max(have, key=lambda k: (ITEMS[k].nutrition / world.market.prices[k], k))
        price = max(1, math.ceil(world.market.prices[kind] * (1.0 + 0.4 * h)))
        if price <= m.inv.gold and _may_offer(m, other):
            cands.append((h * 0.9 * (0.5 + m.p.trade), "trade_offer",
                          {"target": other, "give": {GOLD: price}, "want": {kind: 1}}))
            if m.may_speak and world.rng.random() < 0.3:
                cands.append((h * 0.5, "say",
                              partial(speech.buy_pitch, world, other, kind, price)))
        return


def _may_offer(m: _Mind, other: int) -> bool:
    """Not too soon after the last offer, and none still waiting on ``other``."""
    if m.tick - m.social.last_offer < OFFER_GAP_TICKS:
        return False
    world, eid = m.world, m.eid
    return not world.market.is_waiting(eid, other)


def _energy(m: _Mind, cands: list[Candidate]) -> None:
    world, needs, p = m.world, m.needs, m.p
    hp = m.hp
    if "herb" in m.inv.items and hp < 0.6:
        cands.append((0.4 + (1.0 - hp), "use", {"item": "herb"}))
    if (m.casting and hp < (MEND_AT if p.caution >= 1.0 else HEAL_AT)
            and casting.ready(world, m.eid, "heal", m.energy)):
        cands.append((0.3 + (1.0 - hp) * (0.6 + p.caution), "use_ability", {"ability": "heal"}))
    if needs.energy >= 30:
        return
    tiredness = 1.0 - needs.energy / 100.0
    sheltered = False
    for oid in m.perc.objects:
        obj = world.store.try_get(oid, c.StaticObject)
        if (obj is not None and obj.kind == "shelter" and not m.avoids(oid)
                and m.dist(world.store.get(oid, c.Position)) <= world.rules.vision_radius):
            cands.append((tiredness * 1.2, "use", {"target": oid}))
            sheltered = True
            break
    cands.append((tiredness * 1.1, "rest", {"ticks": 120}))
    if m.casting and not sheltered:
        for name in casting.known_for(world, m.eid, "energy"):
            spec = world.abilities.get(name)
            args = spec and casting.args_for(world, m.eid, spec, "energy", None, "")
            cooling = world.abilities.cooldowns.get(m.eid, {}).get(name, 0) > m.tick
            if args and not cooling and spec and needs.energy >= spec.meta.energy_cost:
                cands.append((tiredness * 1.3, "use_ability", args))
                return
        if needs.energy < 20:
            ask = casting.wants_to_ask(world, m.eid, "energy")
            if ask is not None:
                cands.append((tiredness * 0.9, "request_ability", ask))


# -- other agents ------------------------------------------------------------------------------


def _sale(m: _Mind, other: int, orow: AgentRow) -> tuple[dict[str, int], int] | None:
    """Goods this agent would offer ``other`` (who looks in need of them, or is a trader
    who buys to sell on) and the price."""
    world = m.world
    oinv, oneeds, oagent = orow.inv, orow.needs, orow.agent
    if oinv.gold <= 0:
        return None
    op = PROFILES[oagent.personality]
    merchant = op.trade >= 1.0
    hungry_look = _food_units(oinv) < 2 or oneeds.hunger > 70
    hurt_look = oneeds.health < oneeds.max_health * 0.6
    armed = _weapon_bonus(oinv)
    builder = op.gather >= 0.6 and op.fight <= FIGHTER and oinv.count("wood") < BUILD_WOOD
    best: tuple[float, str, bool] | None = None
    for kind in m.inv.items:
        spare = m.spare(kind)
        if spare <= 0:
            continue
        spec = ITEMS[kind]
        cat = spec.category
        needed = ((cat == "food" and hungry_look)
                  or (cat == "weapon" and spec.damage > armed and op.fight > FIGHTER)
                  or (cat == "medicine" and (hurt_look or kind not in oinv.items))
                  or (kind == "wood" and builder))
        resold = not needed and merchant and cat in ("food", "medicine", "weapon")
        if not (needed or resold):
            continue
        worth = world.market.prices[kind] * spare
        if best is None or worth > best[0]:
            best = (worth, kind, needed)
    if best is None:
        return None
    kind, needed = best[1], best[2]
    unit = world.market.prices[kind]
    qty = min(m.spare(kind), max(1, math.ceil(1.5 / unit)))
    if needed:
        markup = 1.0 + 0.35 * world.rng.random() + (0.1 if m.p.trade >= 1.0 else 0.0)
    else:  # to a merchant, at a discount
        markup = 0.75 + 0.2 * world.rng.random()
    price = max(1, round(qty * unit * markup))
    if price > oinv.gold or not _fits(world, oinv, {kind: qty}, {}):
        return None
    return {kind: qty}, price


def _bargain(m: _Mind, orow: AgentRow) -> tuple[dict[str, int], int] | None:
    """A trader's bid for food or herbs another holds in plenty (it sells them on)."""
    world = m.world
    oinv = orow.inv
    for kind, qty in sorted(oinv.items.items(), key=lambda kq: (-kq[1], kq[0])):
        if qty >= 8 and ITEMS[kind].category in ("food", "medicine"):
            take = min(qty - 4, 3)
            price = max(1, math.floor(world.market.prices[kind] * take * 0.8))
            if price <= m.inv.gold and _fits(world, m.inv, {kind: take}, {}):
                return {kind: take}, price
        break  # only their biggest stock is worth a bid
    return None


def _company(m: _Mind, cands: list[Candidate]) -> None:
    """Fighting, stealing, trading, giving and talking with those in sight."""
    world, eid, p = m.world, m.eid, m.p
    rng = world.rng
    hp = m.hp
    can_feed = m.food_units >= 3
    hearing = world.rules.hearing_radius
    for other in m.perc.agents[:3]:
        orow = m.rows.get(other)
        if orow is None:
            continue
        opos, oneeds, oinv = orow.pos, orow.needs, orow.inv
        dist = m.dist(opos)
        if dist > world.rules.vision_radius:
            continue
        liking = m.social.relationships.get(other, 0.0)
        rich = oinv.gold > 5 or bool(oinv.items)
        avoided = m.avoids(other)
        # No violence within a team.
        hostile = not avoided and not (m.team and scene.mates(m, other))
        # Violence: rare, aimed at the weak, the disliked and the well-off, never at someone
        # who looks stronger.
        if (p.fight > FIGHTER and hp > 0.6 and m.energy > 30 and liking < 0.3 and hostile
                and rng.random() < ATTACK_CHANCE * p.fight
                and oneeds.health <= m.needs.health
                and _weapon_bonus(oinv) <= _weapon_bonus(m.inv) + 3):
            score = p.fight * hp * 0.55 + (0.25 if rich else 0.0)
            score += max(0.0, -liking) * 0.4
            if (m.casting and 2 <= dist <= 6 and casting.tempted(world, "fire_bolt")
                    and casting.ready(world, eid, "fire_bolt", m.energy)):
                cands.append((score + 0.05, "use_ability",
                              {"ability": "fire_bolt", "target": other}))
            cands.append((score, "attack", {"target": other}))
            if m.may_speak:
                cands.append((score + 0.05, "say",
                              partial(speech.threat, world, other, orow)))
        if (m.casting and p.fight > FIGHTER and dist <= 1 and liking < 0
                and casting.tempted(world, "shove")
                and casting.ready(world, eid, "shove", m.energy)):
            cands.append((0.35 + max(0.0, -liking) * 0.3, "use_ability",
                          {"ability": "shove", "target": other}))
        if (p.steal > 0 and rich and liking < 0.2 and dist <= 4 and hostile
                and rng.random() < STEAL_CHANCE * p.steal):
            cands.append((p.steal * 0.6, "steal", {"target": other}))
        # Commerce: sell spare goods to someone who needs them; traders bid for gluts.
        if liking > -0.3 and dist <= 6 and not avoided and _may_offer(m, other):
            sale = _sale(m, other, orow)
            if sale is not None:
                goods, price = sale
                urgent = 0.25 if m.burden >= BURDENED else 0.0
                cands.append((p.trade * 0.5 + 0.1 + urgent, "trade_offer",
                              {"target": other, "give": goods, "want": {GOLD: price}}))
                if m.may_speak and rng.random() < 0.5:
                    kind, qty = next(iter(goods.items()))
                    cands.append((p.trade * 0.3, "say",
                                  partial(speech.sell_pitch, world, other, kind, qty, price)))
            elif p.trade >= 1.0:
                bid = _bargain(m, orow)
                if bid is not None:
                    goods, price = bid
                    cands.append((0.35, "trade_offer",
                                  {"target": other, "give": {GOLD: price}, "want": goods}))
        # Generosity: food for a friend who has none (if they can carry it).
        if (p.generosity >= GENEROUS and liking > 0.1 and dist <= 6 and can_feed
                and not _food_units(oinv) and units_that_fit(world, oinv, m.foods[0], 1)):
            cands.append((p.generosity * 0.8, "give",
                          {"target": other, "item": m.foods[0], "qty": 1}))
        # Talk: a greeting, news or a remark, from the speaker's own life.
        if m.may_speak and dist <= hearing and rng.random() < 0.3 * p.social:
            cands.append((p.social * 0.3, "say",
                          partial(speech.chat, world, eid, m.row, other)))
    if m.casting:
        _social_spells(m, cands)


def _social_spells(m: _Mind, cands: list[Candidate]) -> None:
    """Traders proclaim their wares and rally those around them."""
    world, eid, p = m.world, m.eid, m.p
    if p.trade < 1.0 and p.social < 0.8:
        return
    agents = m.perc.agents
    if not agents:
        return
    close = 0
    weary = 0
    for other in agents[:6]:
        orow = m.rows.get(other)
        if orow is not None and m.dist(orow.pos) <= 3:
            close += 1
            oneeds = orow.needs
            if oneeds.health < oneeds.max_health * 0.8 or oneeds.energy < 50:
                weary += 1
    if (close >= 2 and weary >= 2 and casting.tempted(world, "rally")
            and casting.ready(world, eid, "rally", m.energy)):
        cands.append((0.3 + 0.15 * weary, "use_ability", {"ability": "rally"}))
    if (len(agents) >= 2 and m.may_speak and casting.tempted(world, "proclaim")
            and casting.ready(world, eid, "proclaim", m.energy)):
        goods = [k for k in m.inv.items if m.spare(k) > 0]
        if goods:
            kind = goods[world.rng.randrange(len(goods))]
            price = max(1.0, world.market.prices[kind] * 1.1)
            text = speech.advert(world, m.row.agent.name, kind, price)
            cands.append((0.4, "use_ability", {"ability": "proclaim", "text": text}))


# -- goods -------------------------------------------------------------------------------------


def _gather(m: _Mind, cands: list[Candidate]) -> None:
    world, p = m.world, m.p
    store = world.store
    armed = m.armed > 0
    sight = world.rules.vision_radius
    if m.burden < 0.95 and m.perc.items:
        wanted = _wanted(m)
        for iid in m.perc.items:
            item = store.try_get(iid, c.Item)
            if (item is None or item.kind not in wanted or item.owner not in (c.NO_ONE, m.eid)
                    or m.avoids(iid) or m.dist(store.get(iid, c.Position)) > sight):
                continue
            category = ITEMS[item.kind].category
            bonus = 0.15 if category == "gold" or (category == "weapon" and not armed) else 0.0
            cands.append((p.gather * 0.45 + bonus, "pickup", {"target": iid}))
            break
    if m.food_units < KEEP_FOOD + 2 and m.needs.hunger > 15 and m.burden < 0.9:
        harvester = (m.casting and p.gather >= 1.0 and casting.tempted(world, "harvest")
                     and casting.ready(world, m.eid, "harvest", m.energy))
        for oid in m.perc.objects:
            obj = store.try_get(oid, c.StaticObject)
            if obj is None or obj.stock <= 0 or obj.kind == "shelter" or m.avoids(oid):
                continue
            if obj.kind not in ("tree", "berry_bush") or m.room < _yield_weight(obj.kind):
                continue
            dist = m.dist(store.get(oid, c.Position))
            if dist > sight:
                continue
            if harvester and dist <= 2 and m.room >= 2 * ITEMS[OBJECTS[obj.kind].yields].weight:
                cands.append((p.gather * 0.55, "use_ability",
                              {"ability": "harvest", "target": oid}))
            cands.append((p.gather * 0.4, "use", {"target": oid}))
            break
    if (m.casting and m.food_units < KEEP_FOOD + 2 and m.room >= FORAGE_WEIGHT
            and p.gather >= 1.0 and casting.tempted(world, "forage")
            and casting.ready(world, m.eid, "forage", m.energy)):
        cands.append((p.gather * 0.3, "use_ability", {"ability": "forage"}))


def _burden(m: _Mind, cands: list[Candidate]) -> None:
    """Shed weight: junk (materials nobody here uses, weapons past the one it fights with)
    goes now and then; when nearly full, whatever is worth least for its weight (spare goods
    first; everything only when it carries more than it may, after the operator's /give).
    Selling comes first (offers score higher while burdened); dropping is what is left."""
    world = m.world
    if not world.rules.carry_capacity:
        return
    if m.burden >= JUNK_AT and world.rng.random() < 0.25:
        junk = [k for k in m.inv.items if _junk(m, k)]
        if junk:
            kind = min(junk, key=lambda k: (world.market.prices[k] / ITEMS[k].weight, k))
            cands.append((0.15 + 0.3 * m.burden, "drop", {"item": kind, "qty": m.spare(kind)}))
    if m.burden < DROP_AT:
        return
    spare = [k for k in m.inv.items if ITEMS[k].weight > 0 and m.spare(k) > 0]
    if not spare and m.burden > 1.0:
        spare = [k for k in m.inv.items if ITEMS[k].weight > 0]
    if not spare:
        return
    kind = min(spare, key=lambda k: (world.market.prices[k] / ITEMS[k].weight, k))
    capacity = world.rules.carry_capacity
    excess = load(m.inv) - capacity * LIGHTEN_TO
    qty = max(1, min(m.spare(kind) or m.inv.items[kind],
                     math.ceil(excess / ITEMS[kind].weight)))
    cands.append((0.3 + (m.burden - DROP_AT) * 6, "drop", {"item": kind, "qty": qty}))


def _junk(m: _Mind, kind: str) -> bool:
    cat = ITEMS[kind].category
    if m.world.recipes and scene.is_recipe_input(m.world, kind):
        return False
    if cat == "material":
        return m.spare(kind) > 0
    return cat == "weapon" and m.p.trade < 1.0 and m.spare(kind) > 0


def _build(m: _Mind, cands: list[Candidate]) -> None:
    """A builder with the wood for it raises a shelter where none is in sight."""
    world, store = m.world, m.world.store
    if (not _builder(m) or m.inv.count("wood") < BUILD_WOOD or m.energy < 40
            or not casting.ready(world, m.eid, "build_shelter", m.energy)):
        return
    for oid in m.perc.objects:
        obj = store.try_get(oid, c.StaticObject)
        if obj is not None and obj.kind == "shelter":
            return
    terrain = world.terrain
    for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, -1), (1, -1), (-1, 1)):
        x, y = m.pos.x + dx, m.pos.y + dy
        if (terrain.in_bounds(x, y) and not terrain.is_blocked(x, y)
                and not world.ground.objects.at(x, y)):
            cands.append((0.4, "use_ability", {"ability": "build_shelter", "x": x, "y": y}))
            return


# -- the choice --------------------------------------------------------------------------------


def decide(world: World, eid: int, row: AgentRow) -> Action | None:
    """The built-in choice for one agent, or None to carry on with what it is doing."""
    m = _Mind(world, eid, row)
    cands: list[Candidate] = []
    _offers(m, cands)
    if _threats(m, cands) is None:
        _after_fight(m, cands)
    _hunger(m, cands)
    _energy(m, cands)
    _company(m, cands)
    _gather(m, cands)
    _burden(m, cands)
    if m.casting:
        _build(m, cands)
    if m.world.recipes or m.team:
        scene.scene_choices(m, cands)
    cands.append((0.12, "wander", {"ticks": 30}))
    random = world.rng.random
    current = row.intent.action
    doing = current.name if current is not None else None
    doing_args: dict[str, Any] | None = None
    best: Candidate | None = None
    best_score = -1.0
    for cand in cands:
        score = cand[0] + random() * 0.1
        if doing == cand[1] and not callable(cand[2]):
            if doing_args is None:
                assert current is not None
                doing_args = dict(current.args)
            if doing_args == cand[2]:
                score += COMMITMENT
        if score > best_score:
            best, best_score = cand, score
    assert best is not None
    args = best[2]
    if callable(args):
        args = args()
    if doing == best[1]:
        assert current is not None
        if dict(current.args) == args:
            return None
    return make_action(best[1], args)
