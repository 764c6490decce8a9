"""The live feed: what changed in the world since the last frame, computed once for every
client.

A tick observer. After a tick it keeps the tick's events in a ring (for ``/api/events``) and,
when some client is watching and a frame is due, schedules the frame for after the tick
(``defer``: the event loop's ``call_soon``), while the loop waits for the next one. A frame
compares every agent's drawn state (position, health, flags, packed into one int) with the
last frame's, and reads only the items and objects the world noted as changed
(``World.ground.changes``, kept only while someone watches). Frames are spaced out so that
they stay inside ``web.frame_budget`` of the main thread's time.

Deltas carry absolute values (a position, not a step), so a client that applies a delta to
a keyframe taken a little later, or twice, ends with the same picture.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_world.core import components as c
from agent_world.core.world import AgentRow, World
from agent_world.types import ENTITY_KEYS, Event, TickReport
from agent_world.worldlog import sentence

__all__ = ["AGENT_FIELDS", "FIELDS", "ITEM_FIELDS", "LAYERS", "OBJECT_FIELDS", "PLAYED", "BBox",
           "Delta", "LiveFeed", "agent_record", "event_position", "with_lines"]

LAYERS = ("agents", "items", "objects")
AGENT_FIELDS = ("id", "x", "y", "hp", "flags", "name", "personality", "brain", "team")
ITEM_FIELDS = ("id", "x", "y", "qty", "kind")
OBJECT_FIELDS = ("id", "x", "y", "stock", "kind")
FIELDS = {"agents": AGENT_FIELDS, "items": ITEM_FIELDS, "objects": OBJECT_FIELDS}
THINKING = 1  # agent flag: waiting for its brain's answer
DEFENDING = 2  # agent flag: defending
PLAYED = 4  # agent flag: a person plays it (its brain is paused)

Record = list[Any]


@dataclass(frozen=True, slots=True)
class BBox:
    """Tiles from (x0, y0) to (x1, y1), both included."""

    x0: int
    y0: int
    x1: int
    y1: int

    def holds(self, x: int, y: int) -> bool:
        return self.x0 <= x <= self.x1 and self.y0 <= y <= self.y1


def _health(needs: c.Needs) -> int:
    if needs.max_health <= 0:
        return 0
    return max(0, min(100, int(100 * needs.health / needs.max_health + 0.5)))


def _flags(eid: int, combat: c.Combat, tick: int, thinking: frozenset[int],
           played: Mapping[int, object]) -> int:
    return (THINKING if eid in thinking else 0) | (
        DEFENDING if combat.defending_until > tick else 0) | (
        PLAYED if played and eid in played else 0)


_BITS = 21  # per field but the last (unbounded): a tile coordinate, a health percentage
_MASK = (1 << _BITS) - 1


def _pack(*fields: int) -> int:
    packed = 0
    for i, value in enumerate(fields):
        packed |= value << (i * _BITS)
    return packed


def _unpack(packed: int, n: int) -> list[int]:
    fields = [(packed >> (i * _BITS)) & _MASK for i in range(n - 1)]
    fields.append(packed >> ((n - 1) * _BITS))
    return fields


def agent_record(world: World, eid: int, row: AgentRow,
                 thinking: frozenset[int]) -> Record:
    """An agent as clients draw it (fields as in ``AGENT_FIELDS``; ``team`` is "" for
    none)."""
    agent, pos, needs = row.agent, row.pos, row.needs
    team = world.store.try_get(eid, c.Team)
    return [eid, pos.x, pos.y, _health(needs),
            _flags(eid, row.combat, world.tick, thinking, world.players.seats),
            agent.name, agent.personality, agent.brain, team.name if team is not None else ""]


def _item_record(eid: int, item: c.Item, pos: c.Position) -> Record:
    return [eid, pos.x, pos.y, item.qty, item.kind]


def _object_record(eid: int, obj: c.StaticObject, pos: c.Position) -> Record:
    return [eid, pos.x, pos.y, obj.stock, obj.kind]


def event_position(world: World, event: Mapping[str, Any]) -> tuple[int, int] | None:
    """Where an event happened: its own ``x``/``y``, else where the first entity it names
    stands now (called in the tick that emitted it)."""
    x, y = event.get("x"), event.get("y")
    if isinstance(x, int) and isinstance(y, int):
        return x, y
    for key in ENTITY_KEYS:
        eid = event.get(key)
        if isinstance(eid, int):
            pos = world.store.try_get(eid, c.Position) if eid in world.store else None
            if pos is not None:
                return pos.x, pos.y
    return None


def with_lines(lines: list[Event]) -> list[Event]:
    """``lines`` with each one's ``line``: the world log's sentence for it (the viewer shows
    it). Added where a line first leaves the process (a frame, an API reply), never in the
    tick; a line that has one keeps it."""
    for line in lines:
        if "line" not in line:
            line["line"] = sentence(line)
    return lines


@dataclass(slots=True)
class Delta:
    """Changes between two frames, per layer: records that appeared (``add``, whole), records
    whose changing fields changed (``upd``: the record's leading fields, up to the last one
    that can change), ids that went (``drop``), and the events in between."""

    tick: int
    add: dict[str, dict[int, Record]] = field(default_factory=lambda: {k: {} for k in LAYERS})
    upd: dict[str, dict[int, Record]] = field(default_factory=lambda: {k: {} for k in LAYERS})
    drop: dict[str, set[int]] = field(default_factory=lambda: {k: set() for k in LAYERS})
    events: list[Event] = field(default_factory=list)
    events_dropped: int = 0

    def merge(self, later: Delta, max_events: int) -> None:
        """Fold a later delta into this one (a client that takes frames less often)."""
        self.tick = later.tick
        for layer in LAYERS:
            add, upd, drop = self.add[layer], self.upd[layer], self.drop[layer]
            for eid, rec in later.add[layer].items():
                add[eid] = rec
                upd.pop(eid, None)
                drop.discard(eid)
            for eid, rec in later.upd[layer].items():
                if eid in add:
                    add[eid] = [*rec, *add[eid][len(rec):]]
                else:
                    upd[eid] = rec
            for eid in later.drop[layer]:
                add.pop(eid, None)
                upd.pop(eid, None)
                drop.add(eid)
        room = max_events - len(self.events)
        self.events.extend(later.events[:room])
        self.events_dropped += later.events_dropped + max(0, len(later.events) - room)

    def empty(self) -> bool:
        return not self.events and not any(
            self.add[k] or self.upd[k] or self.drop[k] for k in LAYERS)


class LiveFeed:
    """Ring of recent events plus frame deltas for the web clients (main thread only)."""

    def __init__(self, world: World, *, ring_events: int,
                 thinking: Callable[[], frozenset[int]] | None = None,
                 frame_budget: float = 0.05, max_events_per_frame: int = 500,
                 clock: Callable[[], float] = time.perf_counter,
                 defer: Callable[[Callable[[], None]], Any] | None = None) -> None:
        self.world = world
        self.ring: deque[Event] = deque(maxlen=ring_events)
        self.thinking = thinking or frozenset
        self.frame_budget = frame_budget
        self.max_events = max_events_per_frame
        self.clock = clock
        # How a frame gets off the tick: the server passes its event loop's call_soon, so
        # the frame is built after the tick, while the loop waits for the next one. Without
        # it (tests, benchmarks) a frame is built inside on_tick.
        self.defer = defer
        self._deferred = False
        self.watchers = 0  # clients that want frames; none: no frame is ever built
        self.listeners: list[Callable[[Delta], None]] = []
        # What clients last saw, per layer: id -> the record's changing fields packed into
        # one int (position first); the base the next frame is compared with. Ints, not
        # tuples: the garbage collector never walks a dict that holds only ints.
        self._seen: dict[str, dict[int, int]] = {k: {} for k in LAYERS}
        self._pending: list[Event] = []
        self._pending_dropped = 0
        self._next_frame_at = 0.0
        self.frames = 0
        self.frame_ms: deque[float] = deque(maxlen=200)

    def watch(self) -> None:
        """A client starts watching (it takes a keyframe now). The first one makes the feed
        note what is on the map now, the base the next frame is compared with, and has the
        world keep the ids of the items and objects that change."""
        if not self.watchers:
            for layer in LAYERS:
                self._seen[layer] = self.states(layer)
            self.world.ground.track_changes(True)
            self._pending, self._pending_dropped = [], 0
        self.watchers += 1

    def rebind(self, world: World) -> None:
        """Follow a replaced world (a served replay's seek). Memory holds nothing of it
        yet; what clients saw is of the old world, so the base is taken anew."""
        self.world.ground.track_changes(False)
        self.world = world
        self.ring.clear()
        self._pending, self._pending_dropped = [], 0
        if self.watchers:
            for layer in LAYERS:
                self._seen[layer] = self.states(layer)
            world.ground.track_changes(True)

    def unwatch(self) -> None:
        self.watchers = max(0, self.watchers - 1)
        if not self.watchers:
            self.world.ground.track_changes(False)
            self._seen = {k: {} for k in LAYERS}

    # -- tick observer ------------------------------------------------------------------------

    def on_tick(self, report: TickReport) -> None:
        tick = report.tick
        world = self.world
        ring = self.ring
        # The event log's own shapes (an input's data nested), so a line reads the same
        # whether it comes from memory or from the save folder; placed where it happened.
        fresh: list[Event] = []
        for line, fields in (
                *(({"tick": tick, "seq": inp.seq, "kind": "input", "type": inp.type,
                    "source": inp.source, "data": inp.data}, inp.data)
                  for inp in report.inputs),
                *(({"tick": tick, "seq": i, "kind": "event", **event}, event)
                  for i, event in enumerate(report.events))):
            where = event_position(world, fields)
            if where is not None and "x" not in line:
                line["x"], line["y"] = where
            fresh.append(line)
        ring.extend(fresh)
        if not self.watchers:
            return
        room = self.max_events - len(self._pending)
        self._pending.extend(fresh[:room])
        self._pending_dropped += max(0, len(fresh) - room)
        if self._deferred or self.clock() < self._next_frame_at:
            return
        if self.defer is None:
            self.frame()
        else:
            self._deferred = True
            self.defer(self._deferred_frame)

    def _deferred_frame(self) -> None:
        self._deferred = False
        if self.watchers:
            self.frame()

    # -- frames -------------------------------------------------------------------------------

    def frame(self) -> Delta:
        """Compare the world with the last frame, hand the delta to the listeners and space
        the next frame out by what this one cost."""
        started = self.clock()
        delta = Delta(tick=self.world.tick)
        self._diff_agents(delta)
        self._diff_ground(delta)
        delta.events, self._pending = with_lines(self._pending), []
        delta.events_dropped, self._pending_dropped = self._pending_dropped, 0
        for listener in self.listeners:
            listener(delta)
        cost = self.clock() - started
        self.frames += 1
        self.frame_ms.append(cost * 1000)
        # Spend at most frame_budget of the main thread's time on frames, on average.
        self._next_frame_at = started + cost / self.frame_budget
        return delta

    def busy_for(self) -> float:
        """Seconds until the feed's share of the main thread (``frame_budget``) has room
        for more work: a keyframe asked for now waits this long."""
        return max(0.0, self._next_frame_at - self.clock())

    def spend(self, work: Callable[[], bytes]) -> bytes:
        """Do ``work`` (a keyframe) and count its cost against the feed's budget: the next
        frame, and the next keyframe, wait in proportion."""
        started = self.clock()
        out = work()
        cost = self.clock() - started
        self._next_frame_at = max(self._next_frame_at, started + cost / self.frame_budget)
        return out

    def states(self, layer: str) -> dict[int, int]:
        """The changing fields of every entity of a layer now, packed (``pack``)."""
        world = self.world
        if layer == "agents":
            return self._agent_states()
        if layer == "items":
            return {eid: _pack(pos.x, pos.y, item.qty)
                    for eid, (item, pos) in world.store.query(c.Item, c.Position)}
        return {eid: _pack(pos.x, pos.y, obj.stock)
                for eid, (obj, pos) in world.store.query(c.StaticObject, c.Position)}

    def _agent_states(self) -> dict[int, int]:
        # The hottest loop of a frame (every agent, every frame): _pack, _health and _flags
        # written out.
        tick = self.world.tick
        thinking = self.thinking()
        played = self.world.players.seats
        out: dict[int, int] = {}
        y_at, hp_at, flags_at = _BITS, 2 * _BITS, 3 * _BITS
        for eid, row in self.world.agents():
            pos, needs = row.pos, row.needs
            top = needs.max_health
            hp = int(100 * needs.health / top + 0.5) if top > 0 else 0
            hp = 0 if hp < 0 else 100 if hp > 100 else hp
            flags = (THINKING if eid in thinking else 0) | (
                DEFENDING if row.combat.defending_until > tick else 0) | (
                PLAYED if played and eid in played else 0)
            out[eid] = pos.x | pos.y << y_at | hp << hp_at | flags << flags_at
        return out

    def record(self, layer: str, eid: int) -> Record | None:
        """One entity's whole record as clients draw it, or None if it is gone."""
        world = self.world
        if layer == "agents":
            row = world.agent_row(eid)
            return None if row is None else agent_record(world, eid, row, self.thinking())
        store = world.store
        pos = store.try_get(eid, c.Position) if eid in store else None
        if pos is None:
            return None
        if layer == "items":
            item = store.try_get(eid, c.Item)
            return None if item is None else _item_record(eid, item, pos)
        obj = store.try_get(eid, c.StaticObject)
        return None if obj is None else _object_record(eid, obj, pos)

    def records(self, layer: str, bbox: BBox | None = None) -> list[Record]:
        """Every record of a layer (inside ``bbox`` when given), ascending by id."""
        world = self.world
        if layer == "agents":
            thinking = self.thinking()
            found = [agent_record(world, eid, row, thinking) for eid, row in world.agents()]
        elif layer == "items":
            found = [_item_record(eid, item, pos)
                     for eid, (item, pos) in world.store.query(c.Item, c.Position)]
        else:
            found = [_object_record(eid, obj, pos)
                     for eid, (obj, pos) in world.store.query(c.StaticObject, c.Position)]
        if bbox is None:
            return found
        return [rec for rec in found if bbox.holds(rec[1], rec[2])]

    def _diff_agents(self, delta: Delta) -> None:
        """Agents move and change every tick: all of them are compared."""
        before = self._seen["agents"]
        now = self.states("agents")
        add, upd = delta.add["agents"], delta.upd["agents"]
        fresh = 0
        for eid, state in now.items():
            old = before.get(eid)
            if old is None:
                fresh += 1
                rec = self.record("agents", eid)
                if rec is not None:
                    add[eid] = rec
            elif old != state:
                upd[eid] = [eid, state & _MASK, state >> _BITS & _MASK,
                            state >> 2 * _BITS & _MASK, state >> 3 * _BITS]
        if len(before) + fresh > len(now):  # some went
            delta.drop["agents"].update(before.keys() - now.keys())
        self._seen["agents"] = now

    def _diff_ground(self, delta: Delta) -> None:
        """Items and objects change rarely: only those the world says changed are read."""
        changes = self.world.ground.changes
        if not changes:
            return
        self.world.ground.track_changes(True)  # a fresh set for the next frame
        for eid in changes:
            now = self._ground_state(eid)
            for layer in ("items", "objects"):
                seen = self._seen[layer]
                old = seen.get(eid)
                if now is None or now[0] != layer:
                    if old is not None:
                        del seen[eid]
                        delta.drop[layer].add(eid)
                    continue
                state = now[1]
                if old is None:
                    rec = self.record(layer, eid)
                    if rec is not None:
                        delta.add[layer][eid] = rec
                elif old != state:
                    delta.upd[layer][eid] = [eid, *_unpack(state, 3)]
                seen[eid] = state

    def _ground_state(self, eid: int) -> tuple[str, int] | None:
        """An item's or object's layer and packed state, or None if it is gone."""
        store = self.world.store
        pos = store.try_get(eid, c.Position) if eid in store else None
        if pos is None:
            return None
        item = store.try_get(eid, c.Item)
        if item is not None:
            return "items", _pack(pos.x, pos.y, item.qty)
        obj = store.try_get(eid, c.StaticObject)
        return None if obj is None else ("objects", _pack(pos.x, pos.y, obj.stock))

    # -- figures ------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        ms = sorted(self.frame_ms)
        return {"frames": self.frames,
                "frame_ms_p50": round(ms[len(ms) // 2], 3) if ms else 0.0,
                "frame_ms_max": round(ms[-1], 3) if ms else 0.0,
                "ring_events": len(self.ring)}

