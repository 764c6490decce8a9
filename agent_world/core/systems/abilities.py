"""Abilities: casting (use_ability), asking the angel (request_ability), status effects.

Runs after combat. Each tick it collects every cast that may happen (known, enabled ability;
arguments as its ARGS ask; target in range, otherwise the caster keeps walking; cooldown
over; energy enough), hands all of them to the runner in one batch, then settles the
results in caster order: effects that pass the world's rules are applied whole, and start
the cooldown (never shorter than ``abilities.min_cooldown_ticks``); code that failed
(an exception, the step budget, a bad result) disables its ability at once.

The step budget is the limit that decides about code, the same on every machine; so is
``abilities.tick_steps``, past which the tick's remaining casts wait a tick (postponed). A
call killed from outside by a backstop (the sandbox's wall-clock or CPU limit, its memory
limit, a dead worker: far beyond what code within its budget takes, so it stops only code
that ran away) fails its cast and counts a strike against the ability; only
``abilities.kills_to_disable`` kills in a row disable it; a call that comes back, ok or
error, ends the run.

A kill or a postponement is recorded at once as an ``ability_outcome`` input of this tick
(``World.report_input``), and a kill shows as an ``ability_killed`` event: an outside event,
counted in ``/stats``, the run's summary line and the report. A replay brings that input
back with the tick's inputs; its handler files it in ``AbilityBook.recorded`` and this
system uses it instead of running the call, so the replay agrees with what happened
whatever the machine.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.abilities import (
    MAX_SOURCE_CHARS,
    AbilityError,
    AbilityMeta,
    AbilitySpec,
    ability_seed,
    effective_cooldown,
)
from agent_world.core.actions import Action
from agent_world.core.brains.casting import need_of, request_interval
from agent_world.core.effects import (
    MalformedEffects,
    apply_effects,
    check_effects,
    parse_effects,
)
from agent_world.core.systems.acting import chebyshev, fail, finish
from agent_world.types import (
    ABILITY_ERROR,
    ABILITY_KILLED,
    ABILITY_POSTPONED,
    RECORDED_STATUSES,
    AbilityCall,
    AbilityResult,
)

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = [
    "OUTCOME_INPUT",
    "AbilityInputError",
    "abilities_system",
    "accept_input",
    "build_ctx",
    "disable_ability",
    "outcome_input",
    "refused_input",
    "state_input",
]

OUTCOME_INPUT = "ability_outcome"
STATUS_HEALTH_PER_TICK = 0.5
NEARBY = 8  # entities of each kind a ctx lists (nearest first)


class AbilityInputError(ValueError):
    """An ability input that cannot be applied (the world answers ``input_rejected``)."""


@dataclass(slots=True)
class _Cast:
    eid: int
    row: AgentRow
    spec: AbilitySpec
    call: AbilityCall


# -- context -------------------------------------------------------------------------------


def _describe(world: World, eid: int, origin: c.Position) -> dict[str, Any] | None:
    store = world.store
    pos = store.try_get(eid, c.Position)
    if pos is None:
        return None
    where = {"id": eid, "x": pos.x, "y": pos.y,
             "distance": chebyshev(origin.x, origin.y, pos.x, pos.y)}
    agent = store.try_get(eid, c.Agent)
    if agent is not None:
        needs = store.get(eid, c.Needs)
        return {**where, "kind": "agent", "name": agent.name,
                "health": round(needs.health, 2), "max_health": needs.max_health,
                "energy": round(needs.energy, 2), "hunger": round(needs.hunger, 2),
                "statuses": world.abilities.statuses_of(eid, world.tick)}
    obj = store.try_get(eid, c.StaticObject)
    if obj is not None:
        return {**where, "kind": "object", "object": obj.kind, "stock": obj.stock}
    item = store.try_get(eid, c.Item)
    if item is not None:
        return {**where, "kind": "item", "item": item.kind, "qty": item.qty,
                "owner": item.owner}
    return {**where, "kind": "other"}


def build_ctx(world: World, eid: int, row: AgentRow, spec: AbilitySpec,
              action: Action) -> dict[str, Any]:
    """Everything one call may see, as plain JSON data (a copy: the code cannot reach the
    world through it)."""
    agent, pos, needs, inv = row.agent, row.pos, row.needs, row.inv
    tick = world.tick
    meta = spec.meta
    radius = world.rules.vision_radius
    args = {k: v for k, v in action.args.items() if k != "ability"}
    target = args.get("target")
    tile = None
    if "x" in args and "y" in args:
        x, y = args["x"], args["y"]
        tile = {"x": x, "y": y, "distance": chebyshev(pos.x, pos.y, x, y),
                "blocked": world.terrain.is_blocked(x, y), "what": world.describe_tile(x, y)}
    store = world.store
    agents: list[dict[str, Any]] = []
    for _d2, other in world.agents_grid.near(pos.x, pos.y, radius):
        if other != eid and len(agents) < NEARBY:
            opos = store.get(other, c.Position)
            agents.append({"id": other, "name": world.name_of(other), "x": opos.x,
                           "y": opos.y, "health": round(store.get(other, c.Needs).health, 2),
                           "distance": chebyshev(pos.x, pos.y, opos.x, opos.y)})
    objects: list[dict[str, Any]] = []
    for _d2, oid in world.ground.objects.near(pos.x, pos.y, radius)[:NEARBY]:
        obj, opos = store.get(oid, c.StaticObject), store.get(oid, c.Position)
        objects.append({"id": oid, "kind": obj.kind, "x": opos.x, "y": opos.y,
                        "stock": obj.stock, "distance": chebyshev(pos.x, pos.y, opos.x,
                                                                  opos.y)})
    items: list[dict[str, Any]] = []
    for _d2, iid in world.ground.items.near(pos.x, pos.y, radius)[:NEARBY]:
        item, ipos = store.get(iid, c.Item), store.get(iid, c.Position)
        items.append({"id": iid, "kind": item.kind, "qty": item.qty, "owner": item.owner,
                      "x": ipos.x, "y": ipos.y,
                      "distance": chebyshev(pos.x, pos.y, ipos.x, ipos.y)})
    return {
        "tick": tick,
        "seed": ability_seed(world.seed, tick, eid, meta.name),
        "ability": {"name": meta.name, "range": meta.range, "energy_cost": meta.energy_cost,
                    "cooldown": effective_cooldown(meta, world.ability_rules)},
        "caster": {"id": eid, "name": agent.name, "x": pos.x, "y": pos.y,
                   "health": round(needs.health, 2), "max_health": needs.max_health,
                   "energy": round(needs.energy, 2), "hunger": round(needs.hunger, 2),
                   "gold": inv.gold, "items": dict(inv.items),
                   "statuses": world.abilities.statuses_of(eid, tick),
                   "reputation": round(row.social.reputation, 3)},
        "args": args,
        "target": None if target is None else _describe(world, target, pos),
        "tile": tile,
        "nearby": {"agents": agents, "objects": objects, "items": items},
        "world": {"width": world.terrain.width, "height": world.terrain.height},
    }


# -- casting -------------------------------------------------------------------------------


def _prepare(world: World, eid: int, row: AgentRow, action: Action,
             queued: int) -> _Cast | None:
    """The cast, if it may happen this tick; None if it failed or must wait."""
    intent, pos = row.intent, row.pos
    book = world.abilities
    name: str = action.args["ability"]
    spec = book.get(name)
    if spec is None:
        hint = difflib.get_close_matches(name, book.names(), n=1)
        extra = f"; did you mean {hint[0]!r}?" if hint else ""
        fail(world, eid, intent, f"no ability named {name!r}{extra}")
        return None
    if name in book.disabled:
        fail(world, eid, intent, f"{name} is disabled: {book.disabled[name]}")
        return None
    if book.runner is None:
        fail(world, eid, intent, "abilities cannot run: no sandbox is attached to this world")
        return None
    meta = spec.meta
    for key in meta.required():
        if key not in action.args:
            fail(world, eid, intent, f"{name} needs argument {key} ({meta.kind(key)})")
            return None
    for key in action.args:
        if key != "ability" and key not in meta.args:
            takes = ", ".join(meta.args) or "none"
            fail(world, eid, intent, f"{name} takes no argument {key} (its arguments: {takes})")
            return None
    store = world.store
    target = action.args.get("target")
    if target is not None:
        kind = meta.kind("target")
        tpos = store.try_get(target, c.Position)
        wrong = (tpos is None
                 or (kind == "agent" and not (world.is_agent(target) and world.alive(target)))
                 or (kind == "object" and not store.has(target, c.StaticObject))
                 or (kind == "item" and not store.has(target, c.Item)))
        if wrong or tpos is None:
            fail(world, eid, intent, f"{name} needs a target of kind {kind}; "
                 f"{world.label(target)} is not one")
            return None
        if chebyshev(pos.x, pos.y, tpos.x, tpos.y) > meta.range:
            return None  # movement walks the caster into range
    if "x" in action.args or "y" in action.args:
        x, y = action.args.get("x"), action.args.get("y")
        if x is None or y is None or not world.terrain.in_bounds(x, y):
            fail(world, eid, intent, f"{name} needs x and y of a tile on the map")
            return None
        if chebyshev(pos.x, pos.y, x, y) > meta.range:
            fail(world, eid, intent, f"({x}, {y}) is out of range for {name} "
                 f"({meta.range} tiles)")
            return None
    tick = world.tick
    ready = book.cooldowns.get(eid, {}).get(name, 0)
    if tick < ready:
        fail(world, eid, intent, f"{name} is cooling down ({ready - tick} ticks left)")
        return None
    if row.needs.energy < meta.energy_cost:
        fail(world, eid, intent, f"too tired for {name} (energy {row.needs.energy:.0f}, it "
             f"costs {meta.energy_cost:g})")
        return None
    if queued >= world.ability_rules.calls_per_tick:
        return None  # this tick's calls are used up: cast next tick
    call = AbilityCall(caster=eid, ability=name, digest=spec.digest, source=spec.source,
                       ctx=build_ctx(world, eid, row, spec, action))
    return _Cast(eid, row, spec, call)


def disable_ability(world: World, name: str, reason: str, caster: int = 0) -> None:
    """Disable an ability (it fails every later use) and say why in the world log."""
    world.abilities.disable(name, reason)
    world.count("abilities_disabled")
    fields: dict[str, Any] = {"ability": name, "reason": reason[:300]}
    if caster:
        fields |= {"agent": caster, "name": world.name_of(caster)}
    world.emit(ev.ABILITY_DISABLED, **fields)


def _killed(world: World, cast: _Cast, reason: str) -> None:
    """A call killed from outside: the cast fails, and the ability takes a strike; the
    ``kills_to_disable``-th in a row disables it."""
    eid, name, intent = cast.eid, cast.spec.name, cast.row.intent
    limit = world.ability_rules.kills_to_disable
    strikes = world.abilities.strike(name)
    world.emit(ev.ABILITY_KILLED, ability=name, agent=eid, name=world.name_of(eid),
               reason=reason, strikes=strikes, limit=limit)
    if strikes >= limit:
        # With a limit of 1 (worlds saved before strikes existed) the words are the old ones.
        run = "" if limit == 1 else (f" ({strikes} killed calls in a row; "
                                     f"abilities.kills_to_disable is {limit})")
        disable_ability(world, name, f"was stopped: {reason}{run}", eid)
        fail(world, eid, intent, f"{name} was stopped: {reason}")
        return
    fail(world, eid, intent, f"{name} was stopped: {reason} ({strikes} of {limit} killed "
         "calls in a row disable it: abilities.kills_to_disable)")


def _settle(world: World, cast: _Cast, result: AbilityResult) -> None:
    eid, spec = cast.eid, cast.spec
    needs, intent = cast.row.needs, cast.row.intent
    name = spec.name
    book = world.abilities
    if result.status == ABILITY_POSTPONED:
        world.count("ability_calls_postponed")
        return  # the action stays: the caster tries again next tick
    if needs.health <= 0:
        finish(intent, "failed: fell before the ability took effect")
        return
    if name in book.disabled:
        fail(world, eid, intent, f"{name} is disabled: {book.disabled[name]}")
        return
    if result.status == ABILITY_KILLED:
        _killed(world, cast, result.reason)
        return
    book.completed(name)
    if result.status == ABILITY_ERROR:
        disable_ability(world, name, f"failed: {result.reason}", eid)
        fail(world, eid, intent, f"{name} failed: {result.reason}")
        return
    try:
        effects = parse_effects(result.effects, world.ability_rules.max_effects)
    except MalformedEffects as exc:
        disable_ability(world, name, f"returned malformed effects: {exc}", eid)
        fail(world, eid, intent, f"{name} returned malformed effects: {exc}")
        return
    refusal = check_effects(world, eid, spec, effects)
    if refusal is None and needs.energy < spec.meta.energy_cost:
        refusal = "too tired by now"
    if refusal is not None:
        world.count("ability_casts_refused")
        fail(world, eid, intent, f"{name}: {refusal}")
        return
    done = apply_effects(world, eid, effects)
    needs.energy = max(0.0, needs.energy - spec.meta.energy_cost)
    cooldown = effective_cooldown(spec.meta, world.ability_rules)
    if cooldown:
        book.cooldowns.setdefault(eid, {})[name] = world.tick + cooldown
    world.count("ability_casts")
    world.emit(ev.ABILITY, agent=eid, name=world.name_of(eid), ability=name, effects=done)
    finish(intent, f"ok: {'; '.join(done)[:120]}" if done else "ok")


def _cast(world: World, casts: list[_Cast]) -> None:
    book = world.abilities
    recorded = book.recorded
    pending = [cast for cast in casts if (cast.eid, cast.spec.name) not in recorded]
    results: list[AbilityResult] = []
    if pending:
        assert book.runner is not None  # _prepare checked
        rules = world.ability_rules
        results = book.runner.run([cast.call for cast in pending], replaying=world.replaying,
                                  steps=rules.step_budget, alloc=rules.alloc_budget,
                                  tick_steps=rules.tick_steps)
        if len(results) != len(pending):
            raise RuntimeError(f"the ability runner returned {len(results)} results for "
                               f"{len(pending)} calls")
    fresh = iter(results)
    for cast in casts:
        record = recorded.get((cast.eid, cast.spec.name))
        if record is not None:
            result = AbilityResult(status=record["status"], reason=record["reason"])
        else:
            result = next(fresh)
            if result.status in RECORDED_STATUSES:
                world.report_input(OUTCOME_INPUT, {"caster": cast.eid,
                                                   "ability": cast.spec.name,
                                                   "status": result.status,
                                                   "reason": result.reason[:300]},
                                   source="sandbox")
        _settle(world, cast, result)


# -- statuses and requests -----------------------------------------------------------------


def _tick_statuses(world: World) -> None:
    book, store, tick = world.abilities, world.store, world.tick
    for eid in list(book.statuses):
        active = book.statuses[eid]
        needs = store.try_get(eid, c.Needs)
        if needs is None:
            del book.statuses[eid]
            continue
        if active.get("regen", -1) >= tick:
            needs.health = round(min(needs.max_health,
                                     needs.health + STATUS_HEALTH_PER_TICK), 2)
        if active.get("poison", -1) >= tick:
            needs.health = round(needs.health - STATUS_HEALTH_PER_TICK, 2)
        for status in [s for s, until in active.items() if until < tick]:
            del active[status]
        if not active:
            del book.statuses[eid]


def _request(world: World, eid: int, row: AgentRow, action: Action) -> None:
    book = world.abilities
    since = row.intent.since
    for req in book.requests.values():
        if req["agent"] == eid and req["since"] == since:
            return  # asked already; waiting for the answer
    rid = book.next_request
    book.next_request += 1
    text: str = action.args["text"]
    book.requests[rid] = {"id": rid, "agent": eid, "since": since, "text": text,
                          "tick": world.tick}
    world.count("ability_requests")
    world.emit(ev.ABILITY_REQUESTED, request=rid, agent=eid, name=world.name_of(eid), text=text)
    need = need_of(text) if world.ruleset.teaches_needs else None
    if need is not None:  # a built-in brain's request: the answer is taught for that need
        world.minds.asked(rid, eid, need, world.tick)
        world.minds.next_request = world.tick + request_interval(world)


def _requester(world: World, req: Mapping[str, Any]) -> c.Intent | None:
    """The asking agent's intent if it is still waiting for this request."""
    intent = world.store.try_get(req["agent"], c.Intent)
    if (intent is not None and intent.action is not None
            and intent.action.name == "request_ability" and intent.since == req["since"]):
        return intent
    return None


def _expire_requests(world: World) -> None:
    book = world.abilities
    limit = world.ability_rules.request_timeout_ticks
    for rid, req in list(book.requests.items()):
        if world.tick - req["tick"] < limit:
            continue
        del book.requests[rid]
        intent = _requester(world, req)
        if intent is not None:
            fail(world, req["agent"], intent, f"the angel did not answer within {limit} ticks")
        world.emit(ev.ABILITY_REQUEST_EXPIRED, request=rid, agent=req["agent"])


_CASTING = ("use_ability", "request_ability")


def abilities_system(world: World) -> None:
    book = world.abilities
    if book.statuses:
        _tick_statuses(world)
    casts: list[_Cast] = []
    for eid, row in world.schedule.doing(world, _CASTING):
        action = row.intent.action
        if action is None:
            continue
        if action.name == "use_ability":
            cast = _prepare(world, eid, row, action, len(casts))
            if cast is not None:
                casts.append(cast)
        elif action.name == "request_ability":
            _request(world, eid, row, action)
    if book.requests:
        _expire_requests(world)
    if casts:
        _cast(world, casts)
    book.recorded.clear()


# -- inputs --------------------------------------------------------------------------------


def _int(data: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if type(value) is not int:
        raise AbilityInputError(f"{key} must be a whole number, got {value!r:.40}")
    return value


def _text(data: Mapping[str, Any], key: str, limit: int = 300) -> str:
    value = data.get(key)
    if type(value) is not str or len(value) > limit:
        raise AbilityInputError(f"{key} must be text of at most {limit} characters")
    return value


def accept_input(world: World, data: Mapping[str, Any]) -> None:
    """``ability``: a new ability enters the world (from the angel or the operator)."""
    request = _int(data, "request", 0)
    req = world.abilities.requests.pop(request, None) if request else None
    try:
        source = _text(data, "source", MAX_SOURCE_CHARS)
        meta = AbilityMeta.from_dict(data.get("meta") or {})
        if data.get("name") != meta.name:
            raise AbilityError(f"name {data.get('name')!r:.40} differs from the metadata's "
                               f"NAME {meta.name!r}")
        spec = AbilitySpec(meta=meta, source=source, digest=_text(data, "sha256", 64),
                           origin=_text(data, "origin", 40) if "origin" in data else "",
                           accepted=world.tick)
        world.abilities.add(spec)
    except (AbilityError, AbilityInputError) as exc:
        if request:
            world.minds.answered(request, None, alive=False)
        if req is not None:
            intent = _requester(world, req)
            if intent is not None:
                fail(world, req["agent"], intent, f"the angel's ability was refused: {exc}")
        raise AbilityInputError(str(exc)) from None
    if request and request in world.minds.requested:
        asker = int(world.minds.requested[request]["agent"])
        if world.minds.answered(request, meta.name, alive=world.alive(asker)) is not None \
                and req is None and world.alive(asker):
            # The asker stopped waiting, but learns the answer when it comes.
            world.remember(asker, f"the angel granted me {meta.name}: {meta.description}")
    world.count("abilities_accepted")
    fields: dict[str, Any] = {"ability": meta.name, "description": meta.description,
                              "origin": spec.origin, "sha256": spec.digest[:12]}
    if req is not None:
        fields |= {"request": request, "agent": req["agent"],
                   "name": world.name_of(req["agent"])}
        intent = _requester(world, req)
        if intent is not None:
            finish(intent, f"ok: learned {meta.name}")
            world.remember(req["agent"], f"the angel granted me {meta.name}: "
                                         f"{meta.description}")
    world.emit(ev.ABILITY_ACCEPTED, **fields)


def refused_input(world: World, data: Mapping[str, Any]) -> None:
    """``ability_refused``: the angel could not write what a request asked for."""
    request = _int(data, "request")
    reason = _text(data, "reason")
    world.minds.answered(request, None, alive=False)
    req = world.abilities.requests.pop(request, None)
    if req is None:
        raise AbilityInputError(f"there is no open ability request {request}")
    intent = _requester(world, req)
    if intent is not None:
        fail(world, req["agent"], intent, f"the angel refused: {reason}")
    world.count("ability_requests_refused")
    world.emit(ev.ABILITY_REFUSED, request=request, agent=req["agent"],
               name=world.name_of(req["agent"]), reason=reason)


def outcome_input(world: World, data: Mapping[str, Any]) -> None:
    """``ability_outcome`` (from a log only): file it for this tick's casts to use."""
    status = data.get("status")
    if status not in RECORDED_STATUSES:
        raise AbilityInputError(f"status must be one of {', '.join(RECORDED_STATUSES)}")
    caster, name = _int(data, "caster"), _text(data, "ability", 40)
    world.abilities.recorded[(caster, name)] = {"status": status,
                                                "reason": _text(data, "reason")}


def state_input(world: World, data: Mapping[str, Any]) -> None:
    """``ability_state``: the operator disables (with a reason) or re-enables an ability."""
    name = _text(data, "ability", 40)
    book = world.abilities
    if book.get(name) is None:
        raise AbilityInputError(f"no ability named {name!r}")
    enabled = data.get("enabled")
    if type(enabled) is not bool:
        raise AbilityInputError("enabled must be true or false")
    if enabled:
        if book.disabled.pop(name, None) is not None:
            world.emit(ev.ABILITY_ENABLED, ability=name)
    else:
        disable_ability(world, name, _text(data, "reason") if "reason" in data
                        else "disabled by the operator")
