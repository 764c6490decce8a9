"""Minds kept with the world: taking every kind's minds at a snapshot, and giving them back
when a world is resumed or forked.

A kind of brain that keeps minds (the LLM's agents, users' brains and policies) answers two
calls, both on the main thread:

- ``capture_minds(tick) -> MindCapture``: the minds of its agents as of the snapshot of
  ``tick``. A kind whose minds live on the main thread (LLM agents' memories) fills it at
  once; one whose brains live on worker threads or in processes fills it from there, each
  brain between two of its calls, and before any call on an observation later than
  ``tick`` (so a minds file never holds what came after its snapshot).
- ``restore_minds(records, warn)``: the records read back for its agents (by agent id);
  ``warn`` takes one line per agent whose mind cannot be restored.

A record is plain JSON data: ``{"agent", "name", "brain", "kind", "state"}``. The session
collects the captures into ``PendingMinds`` for the persistence writer, which writes them
beside the snapshot of the same tick (``persistence.minds``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["KeepsMinds", "MindCapture", "PendingMinds", "Record"]

Record = dict[str, Any]


class MindCapture:
    """One kind's minds at one tick, being taken: the agents still to take, the records
    taken, and what each agent had at the previous snapshot (for one still busy when the
    snapshot can wait no longer). Thread-safe: filled from worker threads."""

    def __init__(self, tick: int, agents: Iterable[int],
                 previous: Mapping[int, Record] | None = None) -> None:
        self.tick = tick
        self._lock = threading.Lock()
        self._waiting = set(agents)
        self._records: dict[int, Record] = {}
        self._previous = dict(previous or {})
        self._done = threading.Event()
        if not self._waiting:
            self._done.set()

    def wants(self, agent: int) -> bool:
        """Whether ``agent``'s mind is still to be taken."""
        with self._lock:
            return agent in self._waiting

    def waiting(self) -> list[int]:
        with self._lock:
            return sorted(self._waiting)

    def put(self, agent: int, record: Record | None) -> bool:
        """The mind of ``agent`` (None: it has nothing to keep); False if it was taken
        already (the first one counts)."""
        with self._lock:
            if agent not in self._waiting:
                return False
            self._waiting.discard(agent)
            if record is not None:
                self._records[agent] = record
            if not self._waiting:
                self._done.set()
            return True

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    def finish(self) -> tuple[list[Record], list[int]]:
        """The records taken, with the previous snapshot's for agents still busy; and those
        agents. Nothing more is taken after it."""
        with self._lock:
            late = sorted(self._waiting)
            self._waiting.clear()
            self._done.set()
            records = dict(self._records)
        for agent in late:
            if agent in self._previous:
                records[agent] = self._previous[agent]
        return [records[a] for a in sorted(records)], late


@runtime_checkable
class KeepsMinds(Protocol):
    """A kind of brain whose agents' minds are saved with the world (main thread)."""

    def capture_minds(self, tick: int) -> MindCapture: ...

    def restore_minds(self, records: Mapping[int, Record],
                      warn: Callable[[str], None]) -> None: ...


class PendingMinds:
    """Every kind's minds for the snapshot of one tick, as the persistence writer waits for
    them: ready once every capture is done or ``wait_s`` has passed since they began."""

    def __init__(self, tick: int, captures: Sequence[MindCapture], wait_s: float,
                 names: Mapping[int, str]) -> None:
        self.tick = tick
        self.captures = list(captures)
        self.deadline = time.monotonic() + wait_s
        self.names = dict(names)

    def ready(self) -> bool:
        return time.monotonic() >= self.deadline or all(c.done() for c in self.captures)

    def take(self) -> tuple[list[Record], list[str]]:
        """The records, and a line for each agent still busy, whose mind is saved as it was
        at the previous snapshot (or not at all, when it had none)."""
        records: list[Record] = []
        notes: list[str] = []
        for capture in self.captures:
            taken, late = capture.finish()
            records.extend(taken)
            for agent in late:
                name = self.names.get(agent, "")
                notes.append(f"the mind of agent {agent}{f' ({name})' if name else ''} was "
                             f"busy in a call for longer than minds.capture_wait_s; the "
                             f"minds of tick {self.tick} keep its previous state")
        return records, notes
