"""Read-only views of the world: /list (a table) and /debug (one entity in full)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agent_world.commands.lookup import kind_of, resolve
from agent_world.commands.parsing import EntityRef, ListArgs
from agent_world.config import PERSONALITIES
from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.components import NO_ONE
from agent_world.core.items import ITEMS, OBJECTS
from agent_world.core.world import World
from agent_world.worldlog import format_event

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["DEBUG_EVENTS", "LIST_ROWS", "debug", "format_table", "listing"]

LIST_ROWS = 40
DEBUG_EVENTS = 10
DEBUG_MEMORY = 8
LONG_LIST = 8
SEAM_ATTRS = ("llm", "brains", "remote", "angel")
"""Session parts that may describe an entity: ``describe_entity(eid) -> list[str]``."""


def _num(value: float) -> str:
    return f"{round(value, 2):g}"


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    return ["  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
            for row in (header, *rows)]


# -- /list -----------------------------------------------------------------------------------


def _agent_rows(world: World, personality: str | None) -> list[list[str]]:
    rows = []
    for eid, (agent, pos, needs, _inv, intent, *_rest) in world.agents():
        if personality is not None and agent.personality != personality:
            continue
        rows.append([str(eid), agent.name, agent.personality, agent.brain,
                     f"{pos.x},{pos.y}", _num(needs.health), _num(needs.hunger),
                     _num(needs.energy), str(intent.action) if intent.action else "-"])
    return rows


def _item_rows(world: World, kind: str | None) -> list[list[str]]:
    rows = []
    for eid, (item, pos) in world.store.query(c.Item, c.Position):
        if kind is None or item.kind == kind:
            owner = world.label(item.owner) if item.owner != NO_ONE else "-"
            rows.append([str(eid), item.kind, str(item.qty), f"{pos.x},{pos.y}", owner])
    return rows


def _object_rows(world: World, kind: str | None) -> list[list[str]]:
    rows = []
    for eid, (obj, pos) in world.store.query(c.StaticObject, c.Position):
        if kind is None or obj.kind == kind:
            stock = f"{obj.stock}/{OBJECTS[obj.kind].max_stock}"
            rows.append([str(eid), obj.kind, stock, f"{pos.x},{pos.y}"])
    return rows


_LISTS: dict[str, tuple[tuple[str, ...], Callable[[World, str | None], list[list[str]]]]] = {
    "agents": (("ID", "NAME", "PERSONALITY", "BRAIN", "X,Y", "HEALTH", "HUNGER", "ENERGY",
                "ACTION"), _agent_rows),
    "items": (("ID", "KIND", "QTY", "X,Y", "OWNER"), _item_rows),
    "objects": (("ID", "KIND", "STOCK", "X,Y"), _object_rows),
}


async def listing(console: Console, args: ListArgs) -> list[str]:
    what = args.what
    if what in _LISTS:
        group, filter_ = what, None
    elif what in PERSONALITIES:
        group, filter_ = "agents", what
    elif what in ITEMS:
        group, filter_ = "items", what
    else:
        group, filter_ = "objects", what
    header, rows_of = _LISTS[group]
    rows = rows_of(console.world, filter_)
    noun = group if len(rows) != 1 else group.removesuffix("s")
    title = f"{len(rows)} {noun}" + (f" ({filter_})" if filter_ else "")
    if not rows:
        return [f"{title} at tick {console.world.tick}"]
    lines = [f"{title} at tick {console.world.tick}:",
             *format_table(header, rows[:LIST_ROWS])]
    if len(rows) > LIST_ROWS:
        lines.append(f"... and {len(rows) - LIST_ROWS} more (narrow with /list KIND, or "
                     "/debug ID for one)")
    return lines


# -- /debug ----------------------------------------------------------------------------------


def _value(value: Any) -> str:
    if isinstance(value, float):
        return _num(value)
    if isinstance(value, Action):
        return str(value)
    if isinstance(value, list):
        shown = ", ".join(_value(v) for v in value[:LONG_LIST])
        more = f", ... ({len(value)} in all)" if len(value) > LONG_LIST else ""
        return f"[{shown}{more}]"
    if isinstance(value, dict):
        pairs = list(value.items())
        shown = ", ".join(f"{k}: {_value(v)}" for k, v in pairs[:LONG_LIST])
        more = f", ... ({len(pairs)} in all)" if len(pairs) > LONG_LIST else ""
        return "{" + shown + more + "}"
    return str(value)


def _component_lines(world: World, eid: int) -> list[str]:
    lines = ["components:"]
    for name, comp in world.store.components(eid).items():
        if dataclasses.is_dataclass(comp):
            fields = " ".join(f"{f.name}={_value(getattr(comp, f.name))}"
                              for f in dataclasses.fields(comp))
        else:
            fields = repr(comp)
        lines.append(f"  {name}: {fields}")
    return lines


def _labels(world: World, ids: Sequence[int]) -> str:
    shown = ", ".join(world.label(i) for i in ids[:LONG_LIST])
    more = f" ... ({len(ids)} in all)" if len(ids) > LONG_LIST else ""
    return (shown + more) or "nothing"


def _tile(world: World, tile: int) -> str:
    return f"({tile % world.terrain.width}, {tile // world.terrain.width})"


def _agent_lines(world: World, eid: int) -> list[str]:
    store, tick = world.store, world.tick
    agent, pos = store.get(eid, c.Agent), store.get(eid, c.Position)
    needs, inv = store.get(eid, c.Needs), store.get(eid, c.Inventory)
    intent, combat = store.get(eid, c.Intent), store.get(eid, c.Combat)
    perception, social = store.get(eid, c.Perception), store.get(eid, c.Social)
    memory = store.get(eid, c.Memory)

    seat = world.players.seats.get(eid)
    if seat is not None:
        thinking = (f"played by {seat.player} since tick {seat.since}: its {agent.brain} "
                    "brain is paused; it does only what its player orders (/act, /talk) "
                    "until /release")
    elif intent.plan_source:
        thinking = (f"following a plan from {intent.plan_source} ({len(intent.plan)} queued); "
                    f"the {agent.brain} brain takes over when it ends or on attack")
    else:
        wait = intent.next_think - tick
        thinking = (f"{agent.brain} brain ({agent.personality}); next decision at tick "
                    f"{intent.next_think}" + (f" (in {wait} ticks)" if wait > 0 else " (due)"))
    if intent.action is not None:
        action = f"{intent.action} since tick {intent.since} ({tick - intent.since} ticks)"
        if intent.path:
            # The path's far end is where the walk leads (wander legs have no goal tile).
            action += f"; walking, {len(intent.path)} steps to {_tile(world, intent.path[0])}"
    else:
        action = "none"
    plan = " ; ".join(f"{i}. {a}" for i, a in enumerate(intent.plan, 1)) or "none"
    goods = ", ".join(f"{q} {k}" for k, q in sorted(inv.items.items()))
    defending = (f"; defending until tick {combat.defending_until}"
                 if combat.defending_until > tick else "")
    attacked = (f"; last attacked by {world.label(combat.last_attacker)} at tick "
                f"{combat.last_attacked}" if combat.last_attacker != NO_ONE else "")
    relations = sorted(social.relationships.items(), key=lambda kv: (-kv[1], kv[0]))
    named = ", ".join(f"{world.label(other)}{'' if other in store else ' (gone)'} {v:+.2f}"
                      for other, v in relations) or "none yet"
    heard = " | ".join(f"t={h.get('tick')} {h.get('name')}: \"{h.get('text')}\""
                       for h in perception.heard) or "nothing"
    return [
        f"{world.label(eid)}: agent, {agent.personality}, brain {agent.brain}, at "
        f"({pos.x}, {pos.y}) on {world.describe_tile(pos.x, pos.y)}, born at tick "
        f"{agent.born} (age {tick - agent.born} ticks), kills {agent.kills}",
        f"needs:         health {_num(needs.health)}/{_num(needs.max_health)}, hunger "
        f"{_num(needs.hunger)}/100, energy {_num(needs.energy)}/100",
        f"thinking:      {thinking}",
        f"action:        {action}; last result: {intent.last_result or '-'}",
        f"plan:          {plan}",
        f"inventory:     {inv.gold} gold" + (f"; {goods}" if goods else ""),
        f"combat:        next attack at tick {combat.next_attack}{defending}{attacked}",
        f"reputation:    {social.reputation:+.2f}",
        f"relationships: {named}",
        f"sees:          agents {_labels(world, perception.agents)}; items "
        f"{_labels(world, perception.items)}; objects {_labels(world, perception.objects)}",
        f"heard:         {heard}",
        f"memory ({min(DEBUG_MEMORY, len(memory.recent))} of {len(memory.recent)}, newest "
        "last):" if memory.recent else "memory:        nothing yet",
        *(f"  t={m.get('tick')} {m.get('text')}" for m in memory.recent[-DEBUG_MEMORY:]),
    ]


def _thing_lines(world: World, eid: int) -> list[str]:
    store = world.store
    pos = store.try_get(eid, c.Position)
    where = f" at ({pos.x}, {pos.y})" if pos is not None else ""
    item = store.try_get(eid, c.Item)
    if item is not None:
        owner = world.label(item.owner) if item.owner != NO_ONE else "nobody"
        return [f"{world.label(eid)}: item, {item.qty} {item.kind}{where}, owned by {owner}"]
    obj = store.try_get(eid, c.StaticObject)
    if obj is not None:
        spec = OBJECTS[obj.kind]
        regrow = f", regrows at tick {obj.regrow_at}" if obj.stock < spec.max_stock else ""
        return [f"{world.label(eid)}: object{where}, stock {obj.stock}/{spec.max_stock}"
                f"{regrow}, {'blocks' if spec.blocking else 'does not block'} the tile"]
    return [f"{world.label(eid)}: {kind_of(world, eid)}{where}"]


def _seam_lines(console: Console, eid: int) -> list[str]:
    lines: list[str] = []
    for attr in SEAM_ATTRS:
        part = getattr(console.session, attr, None)
        describe = getattr(part, "describe_entity", None)
        if callable(describe):
            lines.extend(f"{attr}: {line}" for line in describe(eid))
        if attr == "llm":
            for model in getattr(console.session, "llm_models", {}).values():
                lines.extend(f"llm: {line}" for line in model.describe_entity(eid))
    return lines


async def debug(console: Console, ref: EntityRef) -> list[str]:
    world = console.world
    eid = resolve(world, ref)
    lines = _agent_lines(world, eid) if world.is_agent(eid) else _thing_lines(world, eid)
    lines.extend(_seam_lines(console, eid))
    events = console.recent.involving(eid, DEBUG_EVENTS)
    lines.append(f"recent events ({len(events)}, newest last):" if events
                 else "recent events: none seen since the console started")
    lines.extend(f"  t={tick} {format_event(event)}" for tick, event in events)
    lines.extend(_component_lines(world, eid))
    return lines
