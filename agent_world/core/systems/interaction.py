"""Interaction: pickup, drop, eat, use, rest, say, give, trade, steal, and the scenario
mechanics' craft and team_say.

Goods move only as far as the receiver can carry them (``core.goods``): a pickup takes what
fits and leaves the rest, a harvest, gift or trade that would overload someone does not
happen. A trade pays the market its fee (``game.market_fee``: a share of the gold that
changes hands, which leaves the world). An accepted trade that cannot go through (the
sender walked off or no longer has the goods, someone cannot pay or carry) is undone: a
``trade_undone`` event with the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.actions import Action
from agent_world.core.components import NO_ONE
from agent_world.core.goods import fits, load, units_that_fit
from agent_world.core.items import GOLD, ITEMS, OBJECTS
from agent_world.core.social import adjust_relationship, adjust_reputation, witnesses
from agent_world.core.systems.acting import chebyshev, fail, finish, give_up_on, reach, start
from agent_world.core.systems.crafting import craft
from agent_world.core.systems.teamplay import team_say

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["interaction_system", "notice_theft"]

IDLE_TICKS = 10
REST_TICKS = 300
MAX_WITNESS_EFFECTS = 8


def _in_reach(world: World, eid: int, row: AgentRow, action: Action) -> c.Position | None:
    """The target's position once within reach; None while still walking (or failed)."""
    intent, pos = row.intent, row.pos
    target = action.args["target"]
    tpos = world.store.try_get(target, c.Position)
    if tpos is None:
        fail(world, eid, intent, f"#{target} is gone")
        return None
    if chebyshev(pos.x, pos.y, tpos.x, tpos.y) > reach(world, action):
        return None
    return tpos


def _target_agent(world: World, eid: int, row: AgentRow, action: Action) -> int | None:
    """The targeted agent once in reach, failing the action if it is not a living agent."""
    target: int = action.args["target"]
    if world.store.try_get(target, c.Position) is not None and not world.alive(target):
        fail(world, eid, row.intent, f"{world.label(target)} is not a living agent")
        return None
    if _in_reach(world, eid, row, action) is None:
        return None
    return target


def notice_theft(world: World, thief: int, victim: int, x: int, y: int) -> None:
    """Reputation and relationships after a theft that was noticed."""
    adjust_reputation(world, thief, -world.rules.steal_reputation_cost)
    adjust_relationship(world, victim, thief, -0.5)
    world.remember(victim, f"{world.label(thief)} robbed me")
    for other in witnesses(world, x, y, thief, victim)[:MAX_WITNESS_EFFECTS]:
        adjust_relationship(world, other, thief, -0.2)


def _pickup(world: World, eid: int, row: AgentRow, action: Action) -> None:
    intent, inv = row.intent, row.inv
    target = action.args["target"]
    item = world.store.try_get(target, c.Item)
    if item is None:
        fail(world, eid, intent, f"{world.label(target)} is not an item on the ground")
        return
    pos = _in_reach(world, eid, row, action)
    if pos is None:
        return
    qty = units_that_fit(world, inv, item.kind, item.qty)
    if qty <= 0:
        fail(world, eid, intent, f"cannot carry {world.label(target)}: {_burden(world, inv)}")
        give_up_on(world, eid, target)
        return
    inv.add(item.kind, qty)
    owner = item.owner
    if qty == item.qty:
        marked = world.store.try_get(target, c.SecondHand)
        second_hand = marked.qty if marked is not None else 0
        world.remove_entity(target)
    else:  # what does not fit stays on the ground
        second_hand = world.ground.take(target, item, qty)
    # Units carried before are picked up, not gathered: the metrics read the event.
    world.emit(ev.PICKUP, agent=eid, name=world.name_of(eid), item=item.kind, qty=qty,
               item_id=target, **({"second_hand": second_hand} if second_hand else {}))
    if owner not in (NO_ONE, eid) and world.alive(owner):
        opos = world.store.get(owner, c.Position)
        radius = world.rules.vision_radius
        seen = (opos.x - pos.x) ** 2 + (opos.y - pos.y) ** 2 <= radius * radius
        world.count("thefts")
        world.emit(ev.THEFT, agent=eid, name=world.name_of(eid), victim=owner,
                   victim_name=world.name_of(owner), item=item.kind, qty=qty,
                   noticed=seen)
        if seen:
            notice_theft(world, eid, owner, pos.x, pos.y)
    finish(intent)


def _drop(world: World, eid: int, row: AgentRow, action: Action) -> None:
    pos, inv, intent = row.pos, row.inv, row.intent
    kind, qty = action.args["item"], action.args.get("qty", 1)
    if inv.count(kind) < qty:
        fail(world, eid, intent, f"carrying {inv.count(kind)} {kind}, not {qty}")
        return
    inv.take(kind, qty)
    world.spawn_item(kind, qty, pos.x, pos.y, owner=eid, carried=True)
    world.emit(ev.DROP, agent=eid, name=world.name_of(eid), item=kind, qty=qty)
    finish(intent)


def _eat(world: World, eid: int, row: AgentRow, action: Action) -> None:
    needs, inv, intent = row.needs, row.inv, row.intent
    kind = action.args.get("item")
    if kind is None:
        foods = [k for k in inv.items if ITEMS[k].category == "food"]
        if not foods:
            fail(world, eid, intent, "no food carried")
            return
        kind = max(foods, key=lambda k: (ITEMS[k].nutrition, k))
    if ITEMS[kind].category != "food":
        fail(world, eid, intent, f"{kind} is not food")
        return
    if inv.count(kind) < 1:
        fail(world, eid, intent, f"not carrying any {kind}")
        return
    inv.take(kind, 1)
    needs.hunger = max(0.0, needs.hunger - ITEMS[kind].nutrition)
    world.count("meals")
    world.emit(ev.EAT, agent=eid, name=world.name_of(eid), item=kind,
               hunger=round(needs.hunger, 1))
    finish(intent)


def _use(world: World, eid: int, row: AgentRow, action: Action) -> None:
    needs, inv, intent = row.needs, row.inv, row.intent
    if "item" in action.args:
        kind = action.args["item"]
        spec = ITEMS[kind]
        if spec.heal <= 0:
            fail(world, eid, intent, f"{kind} cannot be used (eat food; weapons work when "
                 "carried)")
            return
        if inv.count(kind) < 1:
            fail(world, eid, intent, f"not carrying any {kind}")
            return
        inv.take(kind, 1)
        needs.health = min(needs.max_health, needs.health + spec.heal)
        world.emit(ev.USE, agent=eid, name=world.name_of(eid), item=kind,
                   health=round(needs.health, 1))
        finish(intent)
        return
    target = action.args["target"]
    obj = world.store.try_get(target, c.StaticObject)
    if obj is None:
        fail(world, eid, intent, f"{world.label(target)} is not an object")
        return
    if _in_reach(world, eid, row, action) is None:
        return
    kind = OBJECTS[obj.kind]
    if obj.kind == "shelter":
        start(world, intent, Action(name="rest"))
        return
    if obj.stock <= 0:
        fail(world, eid, intent, f"nothing left on {world.label(target)}")
        give_up_on(world, eid, target)
        return
    got = kind.yields
    if kind.rare_yield and world.rng.random() < kind.rare_chance:
        got = kind.rare_yield
    if not units_that_fit(world, inv, got, 1):
        fail(world, eid, intent, f"cannot carry the {got} of {world.label(target)}: "
             f"{_burden(world, inv)}")
        return
    world.ground.deplete(target, obj, 1, world.tick)
    inv.add(got, 1)
    world.emit(ev.HARVEST, agent=eid, name=world.name_of(eid), object=obj.kind, item=got)
    finish(intent)


def _rest(world: World, eid: int, row: AgentRow, action: Action) -> None:
    needs, intent = row.needs, row.intent
    ticks = action.args.get("ticks", REST_TICKS)
    if needs.energy >= 100.0 or world.tick - intent.since >= ticks:
        finish(intent)


def _idle(world: World, eid: int, row: AgentRow, action: Action) -> None:
    intent = row.intent
    if world.tick - intent.since >= action.args.get("ticks", IDLE_TICKS):
        finish(intent)


def _say(world: World, eid: int, row: AgentRow, action: Action) -> None:
    pos, intent, social = row.pos, row.intent, row.social
    text: str = action.args["text"]
    to = action.args.get("to")
    name = world.name_of(eid)
    heard_by = [e for _d2, e in world.agents_grid.near(pos.x, pos.y, world.rules.hearing_radius)
                if e != eid]
    entry = {"tick": world.tick, "from": eid, "name": name, "text": text}
    if to is not None:
        entry["to"] = to
    store = world.store
    for listener in heard_by:
        heard = store.get(listener, c.Perception).heard
        heard.append(entry)
        if len(heard) > c.HEARD_SIZE:
            del heard[0]
    social.last_spoke = world.tick
    world.count("speech")
    event = {"agent": eid, "name": name, "text": text, "heard_by": len(heard_by)}
    if to is not None:
        event["to"] = to
        event["to_name"] = world.name_of(to)
    world.emit(ev.SAY, **event)
    finish(intent)


def _give(world: World, eid: int, row: AgentRow, action: Action) -> None:
    inv, intent = row.inv, row.intent
    kind, qty = action.args["item"], action.args.get("qty", 1)
    if inv.count(kind) < qty:
        fail(world, eid, intent, f"carrying {inv.count(kind)} {kind}, not {qty}")
        return
    target = _target_agent(world, eid, row, action)
    if target is None:
        return
    receiver = world.store.get(target, c.Inventory)
    if not fits(world, receiver, {kind: qty}):
        fail(world, eid, intent, f"{world.label(target)} cannot carry {qty} {kind}: "
             f"{_burden(world, receiver)}")
        return
    inv.take(kind, qty)
    receiver.add(kind, qty)
    adjust_relationship(world, target, eid, 0.15)
    adjust_relationship(world, eid, target, 0.05)
    adjust_reputation(world, eid, 0.01)
    world.remember(target, f"{world.label(eid)} gave me {qty} {kind}")
    world.count("gifts")
    world.emit(ev.GIFT, agent=eid, name=world.name_of(eid), target=target,
               target_name=world.name_of(target), item=kind, qty=qty)
    finish(intent)


def _burden(world: World, inv: c.Inventory) -> str:
    return f"carrying {load(inv):g} of {world.rules.carry_capacity:g}"


def _lacking(inv: c.Inventory, goods: dict[str, int]) -> str | None:
    for kind, qty in goods.items():
        if inv.count(kind) < qty:
            return f"{qty} {kind} (has {inv.count(kind)})"
    return None


def _trade_offer(world: World, eid: int, row: AgentRow, action: Action) -> None:
    inv, intent = row.inv, row.intent
    give, want = dict(action.args["give"]), dict(action.args["want"])
    missing = _lacking(inv, give)
    if missing:
        fail(world, eid, intent, f"cannot offer {missing}")
        return
    target = _target_agent(world, eid, row, action)
    if target is None:
        return
    if world.market.is_waiting(eid, target):
        fail(world, eid, intent, f"already waiting for {world.label(target)} to answer")
        return
    oid = world.market.open(world.tick, eid, target, give, want)
    row.social.last_offer = world.tick
    world.remember(target, f"{world.label(eid)} offers {give} for {want} (offer {oid})")
    world.emit(ev.TRADE_OFFER, agent=eid, name=world.name_of(eid), target=target,
               target_name=world.name_of(target), offer=oid, give=give, want=want)
    finish(intent)


def _trade_accept(world: World, eid: int, row: AgentRow, action: Action) -> None:
    pos, inv, intent = row.pos, row.inv, row.intent
    oid = action.args["offer"]
    offer = world.market.offer(oid)
    if offer is None or offer["to"] != eid:
        fail(world, eid, intent, f"no open offer {oid} to you")
        return
    sender = offer["from"]
    spos = world.store.try_get(sender, c.Position)
    if spos is None or chebyshev(pos.x, pos.y, spos.x, spos.y) > world.rules.trade_range + 2:
        world.market.close(oid)
        _undone(world, eid, intent, offer, f"{world.label(sender)} is no longer near")
        return
    sinv = world.store.get(sender, c.Inventory)
    missing = _lacking(sinv, offer["give"]) or _lacking(inv, offer["want"])
    if missing:
        world.market.close(oid)
        _undone(world, eid, intent, offer, f"the trade fell through: missing {missing}")
        return
    if not fits(world, inv, offer["give"], offer["want"]):
        world.market.close(oid)
        _undone(world, eid, intent, offer, f"the trade fell through: {world.label(eid)} "
                f"cannot carry it ({_burden(world, inv)})")
        return
    if not fits(world, sinv, offer["want"], offer["give"]):
        world.market.close(oid)
        _undone(world, eid, intent, offer, f"the trade fell through: {world.label(sender)} "
                f"cannot carry it ({_burden(world, sinv)})")
        return
    for kind, qty in offer["give"].items():
        sinv.take(kind, qty)
        inv.add(kind, qty)
    for kind, qty in offer["want"].items():
        inv.take(kind, qty)
        sinv.add(kind, qty)
    fee = (_market_fee(world, inv, offer["give"].get(GOLD, 0))
           + _market_fee(world, sinv, offer["want"].get(GOLD, 0)))
    world.market.close(oid)
    for a, b in ((eid, sender), (sender, eid)):
        adjust_relationship(world, a, b, 0.1)
        adjust_reputation(world, a, 0.02)
    world.remember(sender, f"{world.label(eid)} accepted offer {oid}")
    world.count("trades")
    world.emit(ev.TRADE, agent=sender, name=world.name_of(sender), target=eid,
               target_name=world.name_of(eid), offer=oid, give=offer["give"],
               want=offer["want"], **({"fee": fee} if world.rules.market_fee else {}))
    finish(intent)


def _undone(world: World, eid: int, intent: c.Intent, offer: dict[str, Any],
            reason: str) -> None:
    """An accepted trade that cannot go through: the accepting agent's action ends as
    failed (it remembers why, as for any failure) and the world hears ``trade_undone``."""
    action = intent.action
    finish(intent, f"failed: {reason}")
    sender = offer["from"]
    world.emit(ev.TRADE_UNDONE, agent=eid, name=world.name_of(eid), target=sender,
               target_name=world.name_of(sender), offer=offer["id"], reason=reason)
    world.remember(eid, f"{action} failed: {reason}")


def _market_fee(world: World, payee: c.Inventory, gold: int) -> int:
    """The market's share of ``gold`` just paid to ``payee`` (rounded up or down by chance,
    so that on average it is exactly the fee); it leaves the world."""
    rate = world.rules.market_fee
    if not rate or not gold:
        return 0
    due = gold * rate
    fee = int(due) + (1 if world.rng.random() < due - int(due) else 0)
    fee = min(fee, payee.gold)
    if fee:
        payee.take(GOLD, fee)
        world.market.burn(fee)
        world.count("market_fees", fee)
    return fee


def _trade_decline(world: World, eid: int, row: AgentRow, action: Action) -> None:
    intent = row.intent
    oid = action.args["offer"]
    offer = world.market.offer(oid)
    if offer is None or offer["to"] != eid:
        fail(world, eid, intent, f"no open offer {oid} to you")
        return
    world.market.close(oid)
    world.remember(offer["from"], f"{world.label(eid)} declined offer {oid}")
    world.emit(ev.TRADE_DECLINED, agent=eid, name=world.name_of(eid), target=offer["from"],
               target_name=world.name_of(offer["from"]), offer=oid)
    finish(intent)


def _steal(world: World, eid: int, row: AgentRow, action: Action) -> None:
    pos, inv, intent = row.pos, row.inv, row.intent
    target = _target_agent(world, eid, row, action)
    if target is None:
        return
    rng = world.rng
    victim_inv = world.store.get(target, c.Inventory)
    chance = world.rules.steal_success_chance
    if world.store.get(target, c.Combat).defending_until > world.tick:
        chance /= 2
    success = rng.random() < chance
    kind, qty = "", 0
    if success:
        kinds = [k for k in sorted(victim_inv.items) if units_that_fit(world, inv, k, 1)]
        if victim_inv.gold > 0 and (not kinds or rng.random() < 0.5):
            kind, qty = GOLD, min(victim_inv.gold, rng.randint(1, 10))
        elif kinds:
            kind, qty = kinds[rng.randrange(len(kinds))], 1
        else:
            success = False
    noticed = not success or rng.random() < 0.5
    if success:
        victim_inv.take(kind, qty)
        inv.add(kind, qty)
        world.count("thefts")
    else:
        world.count("failed_thefts")
    world.emit(ev.THEFT, agent=eid, name=world.name_of(eid), victim=target,
               victim_name=world.name_of(target), item=kind, qty=qty, success=success,
               noticed=noticed)
    if noticed:
        notice_theft(world, eid, target, pos.x, pos.y)
    if success:
        finish(intent)
    else:
        fail(world, eid, intent, f"{world.label(target)} caught me")
        give_up_on(world, eid, target)


_HANDLERS: dict[str, Callable[[World, int, AgentRow, Action], None]] = {
    "pickup": _pickup,
    "drop": _drop,
    "eat": _eat,
    "use": _use,
    "rest": _rest,
    "idle": _idle,
    "say": _say,
    "give": _give,
    "trade_offer": _trade_offer,
    "trade_accept": _trade_accept,
    "trade_decline": _trade_decline,
    "steal": _steal,
    "craft": craft,
    "team_say": team_say,
}


def interaction_system(world: World) -> None:
    handlers = _HANDLERS
    for eid, row in world.schedule.doing(world, handlers):
        action = row.intent.action
        if action is not None:
            handler = handlers.get(action.name)
            if handler is not None:
                handler(world, eid, row, action)
