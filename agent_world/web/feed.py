"""The live feed: what changed in the world since the last frame, computed once for every
client.

A tick observer. After a tick it keeps the tick's events in a ring (for ``/api/events``) and,
when some client is watching and a frame is due, compares what clients draw (agents'
position, health and thinking mark; item stacks; objects' stock) with the previous frame.
The comparison is one pass over the drawable entities per frame, never per client, and the
feed spaces frames out so that it stays inside ``web.frame_budget`` of the tick period (a
frame that cost more than its share postpones the next one).

Deltas carry absolute values (a position, not a step), so a client that applies a delta to
a keyframe taken a little later, or twice, ends with the same picture.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_world.console.recent import ENTITY_KEYS
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.types import Event, TickReport

__all__ = ["AGENT_FIELDS", "FIELDS", "ITEM_FIELDS", "LAYERS", "OBJECT_FIELDS", "BBox", "Delta",
           "LiveFeed", "agent_record", "event_position"]

LAYERS = ("agents", "items", "objects")
AGENT_FIELDS = ("id", "x", "y", "hp", "flags", "name", "personality", "brain")
ITEM_FIELDS = ("id", "x", "y", "qty", "kind")
OBJECT_FIELDS = ("id", "x", "y", "stock", "kind")
FIELDS = {"agents": AGENT_FIELDS, "items": ITEM_FIELDS, "objects": OBJECT_FIELDS}
THINKING = 1  # agent flag: waiting for its brain's answer
DEFENDING = 2  # agent flag: defending

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


def _flags(eid: int, combat: c.Combat, tick: int, thinking: frozenset[int]) -> int:
    return (THINKING if eid in thinking else 0) | (
        DEFENDING if combat.defending_until > tick else 0)


def agent_record(eid: int, row: tuple[Any, ...], tick: int, thinking: frozenset[int]) -> Record:
    """An agent as clients draw it (fields as in ``AGENT_FIELDS``)."""
    agent, pos, needs = row[0], row[1], row[2]
    return [eid, pos.x, pos.y, _health(needs), _flags(eid, row[5], tick, thinking),
            agent.name, agent.personality, agent.brain]


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
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.world = world
        self.ring: deque[Event] = deque(maxlen=ring_events)
        self.thinking = thinking or frozenset
        self.frame_budget = frame_budget
        self.max_events = max_events_per_frame
        self.clock = clock
        self.watchers = 0  # clients that want frames; none: no frame is ever built
        self.listeners: list[Callable[[Delta], None]] = []
        # What clients last saw, per layer: id -> the record's changing fields (position
        # first); the base the next frame is compared with.
        self._seen: dict[str, dict[int, tuple[Any, ...]]] = {k: {} for k in LAYERS}
        self._pending: list[Event] = []
        self._pending_dropped = 0
        self._next_frame_at = 0.0
        self.frames = 0
        self.frame_ms: deque[float] = deque(maxlen=200)

    def watch(self) -> None:
        """A client starts watching (it takes a keyframe now). The first one makes the feed
        note what is on the map now, the base the next frame is compared with."""
        if not self.watchers:
            for layer in LAYERS:
                self._seen[layer] = self.states(layer)
            self._pending, self._pending_dropped = [], 0
        self.watchers += 1

    def unwatch(self) -> None:
        self.watchers = max(0, self.watchers - 1)

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
        if self.clock() >= self._next_frame_at:
            self.frame()

    # -- frames -------------------------------------------------------------------------------

    def frame(self) -> Delta:
        """Compare the world with the last frame, hand the delta to the listeners and space
        the next frame out by what this one cost."""
        started = self.clock()
        delta = Delta(tick=self.world.tick)
        for layer in LAYERS:
            self._diff(layer, delta)
        delta.events, self._pending = self._pending, []
        delta.events_dropped, self._pending_dropped = self._pending_dropped, 0
        for listener in self.listeners:
            listener(delta)
        cost = self.clock() - started
        self.frames += 1
        self.frame_ms.append(cost * 1000)
        # Spend at most frame_budget of the main thread's time on frames, on average.
        self._next_frame_at = started + cost / self.frame_budget
        return delta

    def states(self, layer: str) -> dict[int, tuple[Any, ...]]:
        """The changing fields of every entity of a layer now (position first)."""
        world = self.world
        if layer == "agents":
            tick = world.tick
            thinking = self.thinking()
            return {eid: (row[1].x, row[1].y, _health(row[2]),
                          _flags(eid, row[5], tick, thinking))
                    for eid, row in world.agents()}
        if layer == "items":
            return {eid: (pos.x, pos.y, item.qty)
                    for eid, (item, pos) in world.store.query(c.Item, c.Position)}
        return {eid: (pos.x, pos.y, obj.stock)
                for eid, (obj, pos) in world.store.query(c.StaticObject, c.Position)}

    def record(self, layer: str, eid: int) -> Record | None:
        """One entity's whole record as clients draw it, or None if it is gone."""
        world = self.world
        if layer == "agents":
            row = world.agent_row(eid)
            return None if row is None else agent_record(eid, row, world.tick,
                                                         self.thinking())
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
            tick, thinking = world.tick, self.thinking()
            found = [agent_record(eid, row, tick, thinking) for eid, row in world.agents()]
        elif layer == "items":
            found = [_item_record(eid, item, pos)
                     for eid, (item, pos) in world.store.query(c.Item, c.Position)]
        else:
            found = [_object_record(eid, obj, pos)
                     for eid, (obj, pos) in world.store.query(c.StaticObject, c.Position)]
        if bbox is None:
            return found
        return [rec for rec in found if bbox.holds(rec[1], rec[2])]

    def _diff(self, layer: str, delta: Delta) -> None:
        before = self._seen[layer]
        now = self.states(layer)
        add, upd = delta.add[layer], delta.upd[layer]
        for eid, state in now.items():
            old = before.pop(eid, None)
            if old is None:
                rec = self.record(layer, eid)
                if rec is not None:
                    add[eid] = rec
            elif old != state:
                upd[eid] = [eid, *state]
        delta.drop[layer].update(before)
        self._seen[layer] = now

    # -- figures ------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        ms = sorted(self.frame_ms)
        return {"frames": self.frames,
                "frame_ms_p50": round(ms[len(ms) // 2], 3) if ms else 0.0,
                "frame_ms_max": round(ms[-1], 3) if ms else 0.0,
                "ring_events": len(self.ring)}

