"""The inbox: the one door through which anything from outside enters a world."""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any

import orjson

from agent_world.types import Input

__all__ = ["LATE_INPUTS", "Inbox"]

LATE_INPUTS = frozenset({"ability_outcome"})
"""Input types the world writes itself, during a tick (``World.report_input``): outcomes that
depended on wall-clock time. They reach the world only from a log, never through the inbox,
so no outside thread can forge one."""


class Inbox:
    """Thread-safe queue of pending inputs.

    Any thread may ``submit``; only the main thread ``drain``s, at the start of a tick, and
    stamps each input with that tick and the next sequence number. The data is copied
    through JSON on submission, so what is applied is exactly what gets logged.

    ``redact`` (set by whoever knows the secrets in use, before any thread submits) takes
    secrets out of every input's data on submission: whatever a model, a console or a
    remote client sends, no key can enter the world's state or its log."""

    def __init__(self, next_seq: int = 1) -> None:
        self._pending: queue.SimpleQueue[tuple[str, dict[str, Any], str]] = queue.SimpleQueue()
        self.next_seq = next_seq
        self.redact: Callable[[Any], Any] | None = None

    def submit(self, type: str, data: dict[str, Any] | None = None,
               source: str = "console") -> None:
        if not type:
            raise ValueError("input type must be a non-empty string")
        if type in LATE_INPUTS:
            raise ValueError(f"{type!r} inputs are written by the world itself during a "
                             "tick; they cannot be submitted")
        try:
            frozen = orjson.loads(orjson.dumps(data or {}))
        except TypeError as exc:
            raise ValueError(f"input {type!r} data must be JSON-ready: {exc}") from None
        if self.redact is not None:
            frozen = self.redact(frozen)
        self._pending.put((type, frozen, source))

    def pending(self) -> int:
        return self._pending.qsize()

    def drain(self, tick: int) -> list[Input]:
        out: list[Input] = []
        while True:
            try:
                type_, data, source = self._pending.get_nowait()
            except queue.Empty:
                return out
            out.append(Input(tick=tick, seq=self.next_seq, type=type_, data=data,
                             source=source))
            self.next_seq += 1
