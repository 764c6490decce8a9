"""A bounded memory of recent events, for /debug, fed as a TickObserver."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from agent_world.core import events as ev
from agent_world.types import ENTITY_KEYS, Event, TickReport

__all__ = ["RecentEvents", "involves"]

RECENT_EVENTS = 2000


def involves(event: Event, eid: int) -> bool:
    return any(event.get(key) == eid for key in ENTITY_KEYS)


class RecentEvents:
    """Keeps the last ``size`` events as ``(tick, event)`` and tells ``on_rejected`` about
    inputs from ``source`` that the world turned down when it applied them."""

    def __init__(self, size: int = RECENT_EVENTS, *, source: str = "console",
                 on_rejected: Callable[[int, Event], None] | None = None,
                 on_tick: Callable[[], None] | None = None) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.events: deque[tuple[int, Event]] = deque(maxlen=size)
        self.source = source
        self.on_rejected = on_rejected
        self.after_tick = on_tick

    def on_tick(self, report: TickReport) -> None:
        tick = report.tick
        self.events.extend((tick, event) for event in report.events)
        if self.on_rejected is not None:
            for event in report.events:
                if event["type"] == ev.INPUT_REJECTED and event.get("source") == self.source:
                    self.on_rejected(tick, event)
        if self.after_tick is not None:
            self.after_tick()

    def involving(self, eid: int, limit: int) -> list[tuple[int, Event]]:
        """The last ``limit`` events that name entity ``eid``, oldest first."""
        found: list[tuple[int, Event]] = []
        for tick, event in reversed(self.events):
            if involves(event, eid):
                found.append((tick, event))
                if len(found) == limit:
                    break
        found.reverse()
        return found
