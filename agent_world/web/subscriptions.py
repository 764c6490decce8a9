"""What a WebSocket client asked to see, and the frames each kind of request gets.

Clients that ask for the same thing share one ``Group``: its frames are filtered, merged and
encoded once and the same bytes go to every member, so 20 clients watching everything cost
one encoding per frame, not 20.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from agent_world.core.components import COMPONENTS
from agent_world.types import ENTITY_KEYS
from agent_world.web.feed import (
    FIELDS,
    LAYERS,
    BBox,
    Delta,
    LiveFeed,
)

__all__ = [
    "MAX_ENTITIES",
    "MAX_RATE",
    "Group",
    "Subscription",
    "SubscriptionError",
    "keyframe",
    "parse_subscription",
]

MAX_RATE = 30.0
MAX_ENTITIES = 16
MAX_TYPES = 64


class SubscriptionError(ValueError):
    """A subscribe message that cannot be honoured; the message names the field."""


@dataclass(frozen=True, slots=True)
class Subscription:
    layers: tuple[str, ...] = LAYERS
    bbox: BBox | None = None
    events: frozenset[str] | None = None  # None: every type
    entities: frozenset[int] | None = None  # events naming these only (None: any)
    components: tuple[str, ...] = ()  # sent for ``entities`` when they change
    rate: float = 10.0  # frames per second at most

    def wants_event(self, event: Mapping[str, Any]) -> bool:
        if self.events is not None and event.get("type") not in self.events:
            return False
        if self.entities is not None and not any(
                event.get(k) in self.entities for k in ENTITY_KEYS):
            return False
        if self.bbox is not None and self.entities is None:
            x, y = event.get("x"), event.get("y")
            if isinstance(x, int) and isinstance(y, int) and not self.bbox.holds(x, y):
                return False
        return True


def _ints(value: Any, name: str, *, count: int | None = None) -> list[int]:
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise SubscriptionError(f"{name} must be a list of whole numbers, got {value!r}")
    if count is not None and len(value) != count:
        raise SubscriptionError(f"{name} must have {count} numbers, got {len(value)}")
    return value


def parse_subscription(msg: Mapping[str, Any]) -> Subscription:
    """Read a ``{"op": "subscribe", ...}`` message; SubscriptionError names what is wrong."""
    known = {"op", "layers", "bbox", "events", "entities", "components", "rate"}
    extra = sorted(set(msg) - known)
    if extra:
        raise SubscriptionError(f"unknown field {extra[0]!r} (fields: {', '.join(sorted(known))})")
    layers = msg.get("layers", list(LAYERS))
    if not isinstance(layers, list) or not all(la in LAYERS for la in layers):
        raise SubscriptionError(f"layers must be a list drawn from {', '.join(LAYERS)}, got "
                                f"{layers!r}")
    bbox = None
    if msg.get("bbox") is not None:
        x0, y0, x1, y1 = _ints(msg["bbox"], "bbox", count=4)
        if x1 < x0 or y1 < y0:
            raise SubscriptionError(f"bbox must be [x0, y0, x1, y1] with x0 <= x1 and "
                                    f"y0 <= y1, got {msg['bbox']!r}")
        bbox = BBox(x0, y0, x1, y1)
    events = msg.get("events")
    if events is not None:
        if (not isinstance(events, list) or len(events) > MAX_TYPES
                or not all(isinstance(e, str) and len(e) <= 64 for e in events)):
            raise SubscriptionError(f"events must be a list of at most {MAX_TYPES} event "
                                    f"types (null for all), got {events!r}")
        events = frozenset(events)
    entities = msg.get("entities")
    if entities is not None:
        ids = _ints(entities, "entities")
        if len(ids) > MAX_ENTITIES:
            raise SubscriptionError(f"entities: at most {MAX_ENTITIES} ids, got {len(ids)}")
        entities = frozenset(ids)
    components = msg.get("components", [])
    if not isinstance(components, list) or not all(k in COMPONENTS for k in components):
        raise SubscriptionError(f"components must be a list drawn from "
                                f"{', '.join(COMPONENTS)}, got {components!r}")
    if components and not entities:
        raise SubscriptionError("components are sent for the subscribed entities: give "
                                "entities as well")
    rate = msg.get("rate", 10)
    if (not isinstance(rate, (int, float)) or isinstance(rate, bool)
            or not 0.1 <= rate <= MAX_RATE):
        raise SubscriptionError(f"rate must be a number of frames per second from 0.1 to "
                                f"{MAX_RATE:g}, got {rate!r}")
    return Subscription(layers=tuple(la for la in LAYERS if la in layers), bbox=bbox,
                        events=events, entities=entities, components=tuple(components),
                        rate=float(rate))


def keyframe(feed: LiveFeed, sub: Subscription) -> dict[str, Any]:
    """Everything a subscription draws, as it is now."""
    world = feed.world
    frame: dict[str, Any] = {
        "t": "key", "tick": world.tick,
        "map": {"width": world.terrain.width, "height": world.terrain.height},
        "fields": {layer: FIELDS[layer] for layer in sub.layers},
    }
    for layer in sub.layers:
        frame[layer] = feed.records(layer, sub.bbox)
    if sub.components and sub.entities:
        frame["detail"] = component_detail(feed, sub)
    return frame


def component_detail(feed: LiveFeed, sub: Subscription) -> dict[str, Any]:
    store = feed.world.store
    out: dict[str, Any] = {}
    for eid in sorted(sub.entities or ()):
        if eid not in store:
            out[str(eid)] = None
            continue
        comps = store.components(eid)
        out[str(eid)] = {name: comps[name] for name in sub.components if name in comps}
    return out


class Group:
    """The clients of one subscription: one filtered, merged, encoded frame for all."""

    def __init__(self, sub: Subscription, feed: LiveFeed, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sub = sub
        self.feed = feed
        self.clock = clock
        self.members: set[Any] = set()
        self.visible: dict[str, set[int]] = {layer: set() for layer in sub.layers}
        self.pending: Delta | None = None
        self.next_at = 0.0
        self._detail: bytes = b""
        self._keyframe: tuple[tuple[int, int, int], bytes] | None = None

    def start(self) -> dict[str, Any]:
        """A keyframe for a new member (and the start of what this group tracks)."""
        frame = keyframe(self.feed, self.sub)
        if self.sub.bbox is not None:
            for layer in self.sub.layers:
                self.visible[layer].update(rec[0] for rec in frame[layer])
        return frame

    def restart(self) -> None:
        """Forget what the members were sent (their world was replaced)."""
        self.pending = None
        self._detail = b""
        for visible in self.visible.values():
            visible.clear()

    def _now(self) -> tuple[int, int, int]:
        world = self.feed.world
        return id(world), world.tick, self.feed.frames

    def has_keyframe(self) -> bool:
        """Whether the keyframe of the world as it is now is built already."""
        return self._keyframe is not None and self._keyframe[0] == self._now()

    def keyframe(self) -> bytes:
        """The encoded keyframe for members joining or catching up now: built once for the
        world as it is, however many ask before it changes."""
        key = self._now()
        if self._keyframe is None or self._keyframe[0] != key:
            self._keyframe = (key, orjson.dumps(self.start(), option=orjson.OPT_NON_STR_KEYS))
        return self._keyframe[1]

    def take(self, delta: Delta) -> bytes | None:
        """Fold in the feed's new delta; the encoded frame when one is due, else None."""
        mine = self._filter(delta)
        if self.pending is None:
            self.pending = mine
        else:
            self.pending.merge(mine, self.feed.max_events)
        # Frames are due on a grid of the subscription's period, with a quarter period of
        # slack: frames that come at the world's own rate, a little early or late, are all
        # sent; a group that fell behind by more than a period starts a new grid.
        now = self.clock()
        period = 1.0 / self.sub.rate
        if now < self.next_at - period / 4:
            return None
        self.next_at = max(self.next_at, now - period) + period
        pending, self.pending = self.pending, None
        frame = _delta_frame(pending, self.sub.layers)
        if self.sub.components and self.sub.entities:
            detail = orjson.dumps(component_detail(self.feed, self.sub),
                                  option=orjson.OPT_NON_STR_KEYS)
            if detail != self._detail:
                self._detail = detail
                frame["detail"] = orjson.Fragment(detail)
        if pending.empty() and "detail" not in frame:
            frame = {"t": "delta", "tick": pending.tick}  # a heartbeat: the tick moved on
        return orjson.dumps(frame, option=orjson.OPT_NON_STR_KEYS)

    def _filter(self, delta: Delta) -> Delta:
        sub = self.sub
        out = Delta(tick=delta.tick)
        out.events = [e for e in delta.events if sub.wants_event(e)]
        out.events_dropped = delta.events_dropped
        bbox = sub.bbox
        for layer in sub.layers:
            if bbox is None:  # copies: a pending delta is merged into, and groups share
                out.add[layer], out.upd[layer] = dict(delta.add[layer]), dict(delta.upd[layer])
                out.drop[layer] = set(delta.drop[layer])
                continue
            visible = self.visible[layer]
            add, upd, drop = out.add[layer], out.upd[layer], out.drop[layer]
            for eid, rec in delta.add[layer].items():
                if bbox.holds(rec[1], rec[2]):
                    add[eid] = rec
                    visible.add(eid)
            for eid, rec in delta.upd[layer].items():
                inside = bbox.holds(rec[1], rec[2])
                if eid in visible:
                    if inside:
                        upd[eid] = rec
                    else:
                        drop.add(eid)
                        visible.discard(eid)
                elif inside:
                    whole = self.feed.record(layer, eid)
                    if whole is not None:
                        add[eid] = whole
                        visible.add(eid)
            for eid in delta.drop[layer]:
                if eid in visible:
                    drop.add(eid)
                    visible.discard(eid)
        return out


def _delta_frame(delta: Delta, layers: tuple[str, ...]) -> dict[str, Any]:
    frame: dict[str, Any] = {"t": "delta", "tick": delta.tick}
    for layer in layers:
        add, upd, drop = delta.add[layer], delta.upd[layer], delta.drop[layer]
        if add or upd or drop:
            part: dict[str, list[Any]] = {}
            if add:
                part["add"] = list(add.values())
            if upd:
                part["upd"] = list(upd.values())
            if drop:
                part["drop"] = sorted(drop)
            frame[layer] = part
    if delta.events:
        frame["events"] = delta.events
    if delta.events_dropped:
        frame["events_dropped"] = delta.events_dropped
    return frame

