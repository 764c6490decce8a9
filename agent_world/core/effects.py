"""The effect vocabulary: what ability code may ask the world to do, and how the world does it.

Effects arrive as untrusted JSON data. ``parse_effects`` checks their shape strictly (exact
types, known keys only, finite numbers, no nesting) and raises ``MalformedEffects``: an
ability that returns malformed data is broken and gets disabled. ``check_effects`` then
applies the world's rules (range, the caster's rights over goods, caps from the
``abilities`` settings, what is on a tile) and returns a refusal reason or None: a refused
cast fails the action but the ability stays. ``apply_effects`` changes the world; it runs
only after every effect of the cast passed the check, so a cast happens whole or not at all.

Effects (type: keys -- rule; RANGE is the ability's, caps are ``abilities`` settings):

- damage: target, amount -- a living agent within RANGE; total <= max_damage; shield halves
- heal: target, amount -- a living agent within RANGE; total <= max_heal
- move: x, y -- the caster only, once per cast, to a free tile within RANGE and
  max_move_tiles
- push: target, tiles -- another living agent within RANGE; total <= max_push_tiles
- transfer: item, qty, from, to -- the caster's goods to an agent within RANGE, or goods of
  an object or an unowned ground item within RANGE to the caster; the receiver must be able
  to carry them (game.carry_capacity)
- create_item: item, qty, to? -- food, materials or herbs, for the caster or an agent
  within RANGE who can carry them; total qty <= max_created_items
- consume: item, qty -- goods the caster carries
- need: target, need, delta -- hunger or energy of a living agent within RANGE;
  total abs(delta) of each need <= max_need_change
- message: text, to? -- heard within the hearing radius, like speech
- spawn_object: kind, x, y -- one per cast, on a free tile within RANGE
- status: target, status, ticks -- a living agent within RANGE; total ticks of one status
  on one agent <= max_status_ticks

A total is over the whole cast: all its effects of that type, on every target
(``CastTotals``), so eight blows of 30 are one blow of 240 to the damage cap. Worlds saved
before the ``abilities.caps`` setting existed keep the old rule, each effect capped alone
(``caps: effect``) and any number of moves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core.abilities import STATUSES, AbilitySpec
from agent_world.core.actions import MAX_QTY, MAX_TEXT
from agent_world.core.components import NO_ONE
from agent_world.core.goods import load, room
from agent_world.core.items import ITEMS, OBJECTS
from agent_world.core.social import adjust_relationship

if TYPE_CHECKING:
    from agent_world.config import AbilitiesConfig
    from agent_world.core.world import World

__all__ = ["EFFECTS", "CastTotals", "Effect", "MalformedEffects", "apply_effects",
           "cast_cap_refusal", "check_effects", "parse_effects"]

MAX_ID = 2**62
MAX_COORD = 1_000_000
MAX_NUMBER = 1e9
CREATABLE = frozenset(k for k, spec in ITEMS.items()
                      if spec.category in ("food", "material", "medicine"))
NEEDS = ("hunger", "energy")

# type -> key -> value kind; a kind ending in "?" marks an optional key.
EFFECTS: dict[str, dict[str, str]] = {
    "damage": {"target": "id", "amount": "num"},
    "heal": {"target": "id", "amount": "num"},
    "move": {"x": "coord", "y": "coord"},
    "push": {"target": "id", "tiles": "count"},
    "transfer": {"item": "item", "qty": "count", "from": "id", "to": "id"},
    "create_item": {"item": "item", "qty": "count", "to": "id?"},
    "consume": {"item": "item", "qty": "count"},
    "need": {"target": "id", "need": "need", "delta": "num"},
    "message": {"text": "text", "to": "id?"},
    "spawn_object": {"kind": "object", "x": "coord", "y": "coord"},
    "status": {"target": "id", "status": "status", "ticks": "count"},
}


def chebyshev(ax: int, ay: int, bx: int, by: int) -> int:
    return max(abs(ax - bx), abs(ay - by))


class MalformedEffects(ValueError):
    """The returned data is not a list of well-formed effects (the ability is broken)."""


@dataclass(frozen=True, slots=True)
class Effect:
    type: str
    args: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.args[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.args.get(key, default)


def _check_value(where: str, kind: str, value: Any) -> None:
    vt = type(value)
    if kind == "id":
        ok = vt is int and 0 <= value < MAX_ID
        want = f"an entity id (whole number in [0, {MAX_ID}))"
    elif kind == "coord":
        ok = vt is int and -MAX_COORD <= value <= MAX_COORD
        want = "a whole number (tile coordinate)"
    elif kind == "count":
        ok = vt is int and 1 <= value <= MAX_QTY
        want = f"a whole number in [1, {MAX_QTY}]"
    elif kind == "num":
        ok = vt in (int, float) and math.isfinite(value) and abs(value) <= MAX_NUMBER
        want = "a finite number"
    elif kind == "item":
        ok = vt is str and value in ITEMS
        want = f"an item kind ({', '.join(ITEMS)})"
    elif kind == "object":
        ok = vt is str and value in OBJECTS
        want = f"an object kind ({', '.join(OBJECTS)})"
    elif kind == "need":
        ok = vt is str and value in NEEDS
        want = "'hunger' or 'energy'"
    elif kind == "status":
        ok = vt is str and value in STATUSES
        want = f"a status ({', '.join(STATUSES)})"
    elif kind == "text":
        ok = (vt is str and 0 < len(value) <= MAX_TEXT and bool(value.strip())
              and value.isprintable())
        want = f"printable text of 1-{MAX_TEXT} characters"
    else:  # pragma: no cover - a table bug
        raise AssertionError(f"unknown effect value kind {kind!r}")
    if not ok:
        shown = repr(value)[:60] if vt in (int, float, str, bool) else f"a {vt.__name__}"
        raise MalformedEffects(f"{where} must be {want}, got {shown}")


def parse_effects(raw: Any, max_effects: int) -> list[Effect]:
    """Untrusted result data -> effects, or MalformedEffects naming the first problem.

    Never recurses and never looks inside a value it does not expect: containers where a
    scalar belongs are rejected by their type alone."""
    if type(raw) is not list:
        raise MalformedEffects(f"execute must return a list of effects, got a "
                               f"{type(raw).__name__}")
    if len(raw) > max_effects:
        raise MalformedEffects(f"{len(raw)} effects returned; at most {max_effects} "
                               "(abilities.max_effects)")
    effects = []
    for i, item in enumerate(raw):
        where = f"effect {i}"
        if type(item) is not dict:
            raise MalformedEffects(f"{where} must be a dict like {{'type': 'heal', ...}}, "
                                   f"got a {type(item).__name__}")
        kind = item.get("type")
        if type(kind) is not str or kind not in EFFECTS:
            shown = repr(kind)[:40] if type(kind) is str else f"a {type(kind).__name__}"
            raise MalformedEffects(f"{where}: type must be one of {', '.join(EFFECTS)}, "
                                   f"got {shown}")
        spec = EFFECTS[kind]
        for key in item:
            if key != "type" and key not in spec:
                shown = repr(key)[:40] if type(key) is str else f"a {type(key).__name__}"
                raise MalformedEffects(f"{where} ({kind}): unknown key {shown} (keys: "
                                       f"{', '.join(k for k in spec)})")
        args: dict[str, Any] = {}
        for key, value_kind in spec.items():
            if key not in item:
                if not value_kind.endswith("?"):
                    raise MalformedEffects(f"{where} ({kind}): missing key {key!r}")
                continue
            _check_value(f"{where} ({kind}).{key}", value_kind.removesuffix("?"), item[key])
            args[key] = item[key]
        effects.append(Effect(kind, args))
    return effects


# -- caps per cast -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CastTotals:
    """What one cast asks for in all, over every effect and target: the quantities the
    per-cast caps limit. ``CastTotals.of(effects)``."""

    damage: float = 0.0
    heal: float = 0.0
    created: int = 0  # items, over every create_item effect
    pushed: int = 0  # tiles, over every push effect
    moves: int = 0
    needs: Mapping[str, float] = field(default_factory=dict)  # need -> sum of abs(delta)
    statuses: Mapping[tuple[int, str], int] = field(default_factory=dict)  # ticks

    def __post_init__(self) -> None:
        numbers = [self.damage, self.heal, self.created, self.pushed, self.moves,
                   *self.needs.values(), *self.statuses.values()]
        if not all(math.isfinite(n) and n >= 0 for n in numbers):
            raise ValueError(f"cast totals must be finite numbers >= 0, got {self!r:.200}")

    @classmethod
    def of(cls, effects: Sequence[Effect]) -> CastTotals:
        """Totals of parsed effects. A negative amount is left out: the effect's own check
        refuses it, and it must not make room under a cap for the others."""
        sums = {"damage": 0.0, "heal": 0.0}
        created = pushed = moves = 0
        needs: dict[str, float] = {}
        statuses: dict[tuple[int, str], int] = {}
        for e in effects:
            t = e.type
            if t in sums:
                sums[t] += max(0.0, float(e["amount"]))
            elif t == "create_item":
                created += e["qty"]
            elif t == "push":
                pushed += e["tiles"]
            elif t == "move":
                moves += 1
            elif t == "need":
                needs[e["need"]] = needs.get(e["need"], 0.0) + abs(float(e["delta"]))
            elif t == "status":
                key = (e["target"], e["status"])
                statuses[key] = statuses.get(key, 0) + e["ticks"]
        return cls(damage=sums["damage"], heal=sums["heal"], created=created, pushed=pushed,
                   moves=moves, needs=needs, statuses=statuses)


def cast_cap_refusal(totals: CastTotals, rules: AbilitiesConfig,
                     label: Callable[[int], str] = lambda eid: f"#{eid}") -> str | None:
    """None if the totals of one cast are within the per-cast caps; otherwise the first cap
    broken, with the total, the cap and the setting (``label`` names a target)."""
    if totals.moves > 1:
        return (f"{totals.moves} moves in one cast; a cast may move its caster once "
                "(abilities.caps is 'cast')")
    checks: list[tuple[str, float, float, str]] = [
        (f"damage {totals.damage:g}", totals.damage, rules.max_damage, "max_damage"),
        (f"heal {totals.heal:g}", totals.heal, rules.max_heal, "max_heal"),
        (f"created items {totals.created}", totals.created, rules.max_created_items,
         "max_created_items"),
        (f"push tiles {totals.pushed}", totals.pushed, rules.max_push_tiles,
         "max_push_tiles"),
    ]
    checks += [(f"{need} change {total:g}", total, rules.max_need_change, "max_need_change")
               for need, total in totals.needs.items()]
    checks += [(f"{status} on {label(target)} for {ticks} ticks", ticks,
                rules.max_status_ticks, "max_status_ticks")
               for (target, status), ticks in totals.statuses.items()]
    for what, total, cap, setting in checks:
        if total > cap:
            return (f"{what} in one cast exceeds the cap of {cap:g} per cast "
                    f"(abilities.{setting})")
    return None


# -- rules ---------------------------------------------------------------------------------


class _Refused(Exception):
    pass


class _Check:
    """Checks effects one by one against the world as the earlier ones would leave it
    (goods the caster gives away or consumes, tiles filled by spawned objects)."""

    def __init__(self, world: World, caster: int, spec: AbilitySpec) -> None:
        self.world = world
        self.caster = caster
        self.range = spec.meta.range
        self.rules = world.ability_rules
        self.per_effect = self.rules.caps == "effect"  # else the totals were checked
        self.pos = world.store.get(caster, c.Position)
        self.spent: dict[str, int] = {}  # goods leaving the caster
        self.gained: dict[int, float] = {}  # weight each agent receives in this cast
        self.stock_taken: dict[int, int] = {}
        self.item_taken: dict[int, int] = {}
        self.spawned: set[tuple[int, int]] = set()

    def within(self, eid: int, what: str) -> c.Position:
        pos = self.world.store.try_get(eid, c.Position)
        if pos is None:
            raise _Refused(f"{what} #{eid} does not exist")
        if chebyshev(self.pos.x, self.pos.y, pos.x, pos.y) > self.range:
            raise _Refused(f"{what} {self.world.label(eid)} is out of range "
                           f"({self.range} tiles)")
        return pos

    def living(self, eid: int) -> None:
        if not self.world.alive(eid) or not self.world.is_agent(eid):
            raise _Refused(f"#{eid} is not a living agent")
        self.within(eid, "agent")

    def carries(self, kind: str, qty: int) -> None:
        inv = self.world.store.get(self.caster, c.Inventory)
        have = inv.count(kind) - self.spent.get(kind, 0)
        if have < qty:
            raise _Refused(f"the caster carries {max(0, have)} {kind}, not {qty}")
        self.spent[kind] = self.spent.get(kind, 0) + qty
        self.gained[self.caster] = self.gained.get(self.caster, 0.0) - ITEMS[kind].weight * qty

    def receives(self, eid: int, kind: str, qty: int) -> None:
        """``eid`` can carry ``qty`` more ``kind`` on top of what the cast gave it so far."""
        weight = ITEMS[kind].weight * qty
        gained = self.gained.get(eid, 0.0) + weight
        self.gained[eid] = gained
        if weight <= 0 or not self.world.rules.carry_capacity:
            return
        inv = self.world.store.get(eid, c.Inventory)
        if gained > room(self.world, inv) + 1e-9:
            raise _Refused(f"{self.world.label(eid)} cannot carry {qty} more {kind} "
                           f"(carrying {load(inv):g} of {self.world.rules.carry_capacity:g})")

    def free_tile(self, x: int, y: int, blocking: bool) -> None:
        world = self.world
        if not world.terrain.in_bounds(x, y) or world.terrain.is_blocked(x, y):
            raise _Refused(f"tile ({x}, {y}) is {world.describe_tile(x, y)}")
        if (x, y) in self.spawned or world.ground.objects.at(x, y):
            raise _Refused(f"tile ({x}, {y}) already holds an object")
        if blocking and (world.agents_grid.at(x, y) or world.ground.items.at(x, y)):
            raise _Refused(f"tile ({x}, {y}) is occupied")

    def cap(self, what: str, value: float, cap: float, setting: str) -> None:
        if value > cap:
            raise _Refused(f"{what} {value:g} exceeds the cap of {cap:g} (abilities.{setting})")

    def effect_cap(self, what: str, value: float, cap: float, setting: str) -> None:
        """A cap on one effect alone (``caps: effect``; under ``cast`` the totals hold it)."""
        if self.per_effect:
            self.cap(what, value, cap, setting)

    def check(self, e: Effect) -> None:
        r = self.rules
        t = e.type
        if t in ("damage", "heal"):
            self.living(e["target"])
            if e["amount"] <= 0:
                raise _Refused(f"{t} amount must be > 0")
            self.effect_cap(t, e["amount"], r.max_damage if t == "damage" else r.max_heal,
                            f"max_{t}")
        elif t == "move":
            x, y = e["x"], e["y"]
            distance = chebyshev(self.pos.x, self.pos.y, x, y)
            self.cap("move distance", distance, min(self.range, r.max_move_tiles),
                     "max_move_tiles or RANGE")
            if not self.world.terrain.in_bounds(x, y) or self.world.terrain.is_blocked(x, y):
                raise _Refused(f"tile ({x}, {y}) is {self.world.describe_tile(x, y)}")
        elif t == "push":
            if e["target"] == self.caster:
                raise _Refused("an ability cannot push its own caster (use move)")
            self.living(e["target"])
            self.effect_cap("push", e["tiles"], r.max_push_tiles, "max_push_tiles")
        elif t == "transfer":
            self.transfer(e)
        elif t == "create_item":
            if e["item"] not in CREATABLE:
                raise _Refused(f"{e['item']} cannot be created (only "
                               f"{', '.join(sorted(CREATABLE))})")
            self.effect_cap("create_item qty", e["qty"], r.max_created_items,
                            "max_created_items")
            to = e.get("to", self.caster)
            if to != self.caster:
                self.living(to)
            self.receives(to, e["item"], e["qty"])
        elif t == "consume":
            self.carries(e["item"], e["qty"])
        elif t == "need":
            self.living(e["target"])
            self.effect_cap(f"{e['need']} change", abs(e["delta"]), r.max_need_change,
                            "max_need_change")
        elif t == "message":
            to = e.get("to")
            if to is not None and not self.world.is_agent(to):
                raise _Refused(f"#{to} is not an agent")
        elif t == "spawn_object":
            if self.spawned:
                raise _Refused("one spawn_object per cast")
            x, y = e["x"], e["y"]
            if chebyshev(self.pos.x, self.pos.y, x, y) > self.range:
                raise _Refused(f"tile ({x}, {y}) is out of range ({self.range} tiles)")
            self.free_tile(x, y, OBJECTS[e["kind"]].blocking)
            self.spawned.add((x, y))
        elif t == "status":
            self.living(e["target"])
            self.effect_cap("status ticks", e["ticks"], r.max_status_ticks,
                            "max_status_ticks")

    def transfer(self, e: Effect) -> None:
        world, caster = self.world, self.caster
        src, dst, kind, qty = e["from"], e["to"], e["item"], e["qty"]
        if src == caster:
            if dst == caster:
                raise _Refused("a transfer needs two parties")
            self.living(dst)
            self.carries(kind, qty)
            self.receives(dst, kind, qty)
            return
        if dst != caster:
            raise _Refused("an ability moves goods from its caster, or from an object or an "
                           "unowned ground item to its caster; nothing else")
        self.within(src, "source")
        obj = world.store.try_get(src, c.StaticObject)
        item = world.store.try_get(src, c.Item)
        if obj is not None:
            spec = OBJECTS[obj.kind]
            if kind not in (spec.yields, spec.rare_yield) or not spec.yields:
                raise _Refused(f"{world.label(src)} does not yield {kind}")
            left = obj.stock - self.stock_taken.get(src, 0)
            if left < qty:
                raise _Refused(f"{world.label(src)} has {left} left, not {qty}")
            self.stock_taken[src] = self.stock_taken.get(src, 0) + qty
        elif item is not None:
            if item.kind != kind:
                raise _Refused(f"{world.label(src)} is {item.kind}, not {kind}")
            if item.owner not in (NO_ONE, caster):
                raise _Refused(f"{world.label(src)} belongs to {world.label(item.owner)}")
            left = item.qty - self.item_taken.get(src, 0)
            if left < qty:
                raise _Refused(f"{world.label(src)} holds {left}, not {qty}")
            self.item_taken[src] = self.item_taken.get(src, 0) + qty
        else:
            raise _Refused(f"goods can come from the caster, an object or a ground item; "
                           f"{world.label(src)} is none of these")
        self.receives(caster, kind, qty)


def check_effects(world: World, caster: int, spec: AbilitySpec,
                  effects: list[Effect]) -> str | None:
    """None if the whole cast may happen; otherwise why not (naming the cap, or the
    effect that breaks a rule)."""
    if world.ability_rules.caps == "cast":
        refusal = cast_cap_refusal(CastTotals.of(effects), world.ability_rules, world.label)
        if refusal is not None:
            return refusal
    check = _Check(world, caster, spec)
    for i, effect in enumerate(effects):
        try:
            check.check(effect)
        except _Refused as exc:
            return f"effect {i} ({effect.type}): {exc}"
    return None


# -- application ---------------------------------------------------------------------------


def _push(world: World, caster: int, target: int, tiles: int) -> str:
    store = world.store
    cpos, tpos = store.get(caster, c.Position), store.get(target, c.Position)
    dx = (tpos.x > cpos.x) - (tpos.x < cpos.x)
    dy = (tpos.y > cpos.y) - (tpos.y < cpos.y)
    if dx == dy == 0:
        dx = 1
    moved = 0
    for _ in range(tiles):
        nx, ny = tpos.x + dx, tpos.y + dy
        if not world.terrain.in_bounds(nx, ny) or world.terrain.is_blocked(nx, ny):
            break
        tpos.x, tpos.y = nx, ny
        moved += 1
    if moved:
        world.agents_grid.moved(target)
        store.get(target, c.Intent).path = []
    return f"push {world.label(target)} {moved} tiles"


def _transfer(world: World, caster: int, e: Effect) -> str:
    store = world.store
    src, dst, kind, qty = e["from"], e["to"], e["item"], e["qty"]
    if src == caster:
        store.get(caster, c.Inventory).take(kind, qty)
        store.get(dst, c.Inventory).add(kind, qty)
        return f"give {qty} {kind} to {world.label(dst)}"
    obj = store.try_get(src, c.StaticObject)
    if obj is not None:
        world.ground.deplete(src, obj, qty, world.tick)
        store.get(caster, c.Inventory).add(kind, qty)
        return f"take {qty} {kind} from {world.label(src)}"
    item = store.get(src, c.Item)
    label = world.label(src)
    if item.qty <= qty:
        world.remove_entity(src)  # keeps the ground tally
    else:
        world.ground.take(src, item, qty)
    store.get(caster, c.Inventory).add(kind, qty)
    return f"take {qty} {kind} from {label}"


def _message(world: World, caster: int, text: str, to: int | None) -> str:
    pos = world.store.get(caster, c.Position)
    entry: dict[str, Any] = {"tick": world.tick, "from": caster,
                             "name": world.name_of(caster), "text": text}
    if to is not None:
        entry["to"] = to
    heard = 0
    for _d2, other in world.agents_grid.near(pos.x, pos.y, world.rules.hearing_radius):
        if other == caster:
            continue
        log = world.store.get(other, c.Perception).heard
        log.append(dict(entry))
        if len(log) > c.HEARD_SIZE:
            del log[0]
        heard += 1
    return f"message {text!r} (heard by {heard})"


def apply_effects(world: World, caster: int, effects: list[Effect]) -> list[str]:
    """Carry out checked effects; returns one short line per effect for the event."""
    store = world.store
    book = world.abilities
    tick = world.tick
    done: list[str] = []
    for e in effects:
        t = e.type
        if t == "damage":
            target = e["target"]
            if not world.alive(target):
                done.append(f"damage: {world.label(target)} already down")
                continue
            amount = float(e["amount"])
            if book.has_status(target, "shield", tick):
                amount /= 2
            needs = store.get(target, c.Needs)
            needs.health = round(needs.health - amount, 2)
            combat = store.get(target, c.Combat)
            if target != caster:
                combat.last_attacker = caster
                combat.last_attacked = tick
                adjust_relationship(world, target, caster, -0.25)
                world.remember(target, f"{world.label(caster)} struck me with an ability "
                                       f"for {amount:g}")
            done.append(f"damage {amount:g} to {world.label(target)}")
        elif t == "heal":
            target = e["target"]
            if not world.alive(target):
                continue
            needs = store.get(target, c.Needs)
            needs.health = round(min(needs.max_health, needs.health + float(e["amount"])), 2)
            done.append(f"heal {float(e['amount']):g} to {world.label(target)}")
        elif t == "move":
            pos = store.get(caster, c.Position)
            pos.x, pos.y = e["x"], e["y"]
            world.agents_grid.moved(caster)
            store.get(caster, c.Intent).path = []
            done.append(f"move to ({pos.x}, {pos.y})")
        elif t == "push":
            if world.alive(e["target"]):
                done.append(_push(world, caster, e["target"], e["tiles"]))
        elif t == "transfer":
            done.append(_transfer(world, caster, e))
        elif t == "create_item":
            to = e.get("to", caster)
            store.get(to, c.Inventory).add(e["item"], e["qty"])
            world.count("items_created")
            done.append(f"create {e['qty']} {e['item']} for {world.label(to)}")
        elif t == "consume":
            store.get(caster, c.Inventory).take(e["item"], e["qty"])
            done.append(f"consume {e['qty']} {e['item']}")
        elif t == "need":
            target = e["target"]
            if not world.alive(target):
                continue
            needs = store.get(target, c.Needs)
            value = getattr(needs, e["need"]) + float(e["delta"])
            setattr(needs, e["need"], round(min(100.0, max(0.0, value)), 2))
            done.append(f"{e['need']} {float(e['delta']):+g} for {world.label(target)}")
        elif t == "message":
            done.append(_message(world, caster, e["text"], e.get("to")))
        elif t == "spawn_object":
            eid = world.spawn_object(e["kind"], e["x"], e["y"])
            store.get(eid, c.StaticObject).owner = caster
            done.append(f"raise a {e['kind']} at ({e['x']}, {e['y']})")
        elif t == "status":
            target = e["target"]
            active = book.statuses.setdefault(target, {})
            active[e["status"]] = max(active.get(e["status"], -1), tick + e["ticks"] - 1)
            done.append(f"{e['status']} on {world.label(target)} for {e['ticks']} ticks")
    return done
