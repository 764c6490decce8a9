"""Keep Python's cyclic garbage collector out of ticks, and memory flat while a world runs.

A world is hundreds of thousands of long-lived objects. Left alone, the collector runs in
the middle of ticks and its full passes walk all of them (measured at 5,000 agents: ~20 ms per
tick on average, single pauses over 300 ms). Almost nothing in a world forms reference cycles
(refcounting frees it), so automatic collection is switched off and a collection runs between
ticks instead, in the loop's idle time: each one collects what was allocated since the last
and then freezes the survivors, so no pass ever walks the whole world again. The work is the
same however often it runs, so it runs after every tick, where each pause is shortest
(measured at 5,000 agents: 1.5 ms mean and 2-4 ms max after every tick, against pauses of
18-22 ms every 10th tick).

Freezing has one cost: whatever is alive at a freeze is never examined again, so a reference
cycle that becomes garbage *after* it was frozen is never freed. The world's own objects do
not do that, and neither do web connections any more: aiohttp's handler and asyncio's
transport kept cycles that outlived every closed WebSocket (41 objects, ~220 bytes a
connection on average, +11 MB per 52,000 short connections for as long as the world ran),
and the web server now breaks them as a connection is lost (``web/guard.py``, ``unlink``), so
reference counting frees a closed connection at once (measured: no object left for the
collector after 60 connections; no sweep in 28,000). What remains here is the backstop, for
a cycle ``unlink`` does not know (another library version, another origin): the policy also
*sweeps*: it unfreezes everything, collects it all once and freezes again. A sweep walks the
whole heap (measured on a busy 2-core machine: ~50 ms at 10 agents, 65-100 ms at 1,000,
0.5 s at 10,000), so it runs only when there is garbage of that kind to free, or rarely:

- when ``sweep_after`` watched objects (the web server's open connections, given by
  ``watch``) were frozen while open and are still alive after they closed: nothing but a
  frozen cycle keeps a closed connection alive, so that count is the garbage waiting;
- periodically, for cycles of other origins: first after ``sweep_every_s``, then at the
  pace the garbage comes. Other threads make short-lived cycles while the world runs (the
  standard library's ``ast.literal_eval`` and ``ast.fix_missing_locations`` make one a call,
  as when a training run checks a policy; ``email``'s header parsing makes classes), and a
  freeze catches whichever are alive at that moment. Each sweep measures what it freed per
  second since the last, and the next comes when about ``GARBAGE_BOUND`` objects should be
  waiting again, at most twice as late as the last wait and at most a day later (a world
  that makes no such garbage pauses for a sweep about once a day); and
- never in a gap that holds other work (``busy``) and never sooner than ``MIN_SWEEP_GAP_S``
  after the last one; a sweep longer than ``SHORT_SWEEP_S`` (a tick period at 10 Hz) is a
  long pause, so the next waits at least P / ``MAX_SWEEP_SHARE`` after one of P seconds:
  at 10,000 agents sweeps take at most 1% of the time. A short sweep (a small world) waits
  the gap only, so the closed connections held between two sweeps stay few, whatever the
  machine's load made the last one take (``sweep_wait``).
"""

from __future__ import annotations

import gc
import os
import time
import weakref
from collections.abc import Callable, Iterable

__all__ = ["GARBAGE_BOUND", "LONGEST_SWEEP_EVERY_S", "MAX_SWEEP_SHARE", "MIN_SWEEP_GAP_S",
           "SHORT_SWEEP_S", "GcPolicy", "resident_bytes", "sweep_wait"]

GARBAGE_BOUND = 50_000  # frozen garbage objects (a few MB) a periodic sweep lets gather
LONGEST_SWEEP_EVERY_S = 24 * 3600.0
MIN_SWEEP_GAP_S = 2.0
SHORT_SWEEP_S = 0.1
MAX_SWEEP_SHARE = 0.01


def sweep_wait(last_sweep_s: float) -> float:
    """Seconds the next sweep waits after one that took ``last_sweep_s``."""
    if last_sweep_s <= SHORT_SWEEP_S:
        return MIN_SWEEP_GAP_S
    return max(MIN_SWEEP_GAP_S, last_sweep_s / MAX_SWEEP_SHARE)

Source = Callable[[], Iterable[object]]
"""What is open now that may sit in reference cycles (weak-referenceable objects)."""


class GcPolicy:
    """Collect every ``every_ticks`` ticks, between ticks, and sweep when frozen garbage has
    gathered (see the module's doc); undo everything on close."""

    def __init__(self, every_ticks: int = 1, *, sweep_after: int = 32,
                 sweep_every_s: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if every_ticks < 1:
            raise ValueError(f"every_ticks must be >= 1, got {every_ticks}")
        if sweep_after < 0:
            raise ValueError(f"sweep_after must be >= 0 (0: no sweep for stranded "
                             f"objects), got {sweep_after}")
        if sweep_every_s < 0:
            raise ValueError(f"sweep_every_s must be >= 0 (0: no periodic sweep), got "
                             f"{sweep_every_s}")
        self.every_ticks = every_ticks
        self.sweep_after = sweep_after
        self.sweep_every_s = sweep_every_s
        self.clock = clock
        self.collections = 0
        self.last_ms = 0.0
        self.max_ms = 0.0
        self.sweeps = 0
        self.sweep_last_ms = 0.0
        self.sweep_max_ms = 0.0
        self.swept_objects = 0  # what sweeps freed, in all
        self.sweep_every_now_s = sweep_every_s  # the periodic wait, paced by the garbage
        self._sources: list[Source] = []
        # Objects of the sources that were open at a freeze (so frozen), by id; and those
        # of them that closed while something still holds them.
        self._watched: dict[int, weakref.ref[object]] = {}
        self._stranded: dict[int, weakref.ref[object]] = {}
        self._was_enabled = gc.isenabled()
        self._since = 0
        self._last_sweep = clock()
        self._last_sweep_s = 0.0
        gc.collect()
        gc.freeze()
        gc.disable()

    def watch(self, source: Source) -> Callable[[], None]:
        """Count what ``source`` reports open (connections) that stays alive once closed;
        returns what stops watching it."""
        self._sources.append(source)

        def unwatch() -> None:
            if source in self._sources:
                self._sources.remove(source)
        return unwatch

    @property
    def stranded(self) -> int:
        """Watched objects frozen while open and still alive after they closed."""
        for key in [k for k, ref in self._stranded.items() if ref() is None]:
            del self._stranded[key]
        return len(self._stranded)

    def between_ticks(self, *, busy: bool = False) -> None:
        """``busy``: this gap already holds other work (the fork of a state hash), so a
        collection due now moves half an interval on, and stays off that tick after."""
        self._since += 1
        if self._since < self.every_ticks:
            return
        if busy:
            self._since = self.every_ticks // 2
            return
        self._since = 0
        self.collect()

    def collect(self) -> None:
        """One collection now (a sweep instead when one is due)."""
        open_now = self._look()
        if self._sweep_due():
            self.sweep()
            return
        started = time.perf_counter()
        gc.collect()
        self._remember(open_now)
        gc.freeze()
        self.last_ms = (time.perf_counter() - started) * 1000
        self.max_ms = max(self.max_ms, self.last_ms)
        self.collections += 1

    def sweep(self) -> int:
        """Unfreeze, collect everything, freeze again: frees the cycles that became garbage
        after they were frozen. Returns how many objects it freed."""
        open_now = self._look()
        started = time.perf_counter()
        gc.unfreeze()
        freed = gc.collect()
        self._remember(open_now)
        gc.freeze()
        seconds = time.perf_counter() - started
        now = self.clock()
        if self.sweep_every_s:
            self.sweep_every_now_s = self._pace(freed, now - self._last_sweep)
        self._last_sweep, self._last_sweep_s = now, seconds
        self.sweep_last_ms = seconds * 1000
        self.sweep_max_ms = max(self.sweep_max_ms, self.sweep_last_ms)
        self.sweeps += 1
        self.swept_objects += freed
        # What a sweep left alive is held by something real, not by a frozen cycle.
        self._stranded.clear()
        return freed

    def _look(self) -> list[object]:
        """What the sources have open now; watched objects that closed and are still alive
        become stranded."""
        open_now = [obj for source in self._sources for obj in source()]
        if not self._watched:
            return open_now
        open_ids = {id(obj) for obj in open_now}
        for key, ref in list(self._watched.items()):
            if ref() is None:
                del self._watched[key]
            elif key not in open_ids:
                del self._watched[key]
                self._stranded[key] = ref
        return open_now

    def _remember(self, open_now: list[object]) -> None:
        """``open_now`` is about to be frozen: watch it."""
        for obj in open_now:
            key = id(obj)
            ref = self._watched.get(key)
            if ref is None or ref() is not obj:  # an id is reused once its object is gone
                self._watched[key] = weakref.ref(obj)

    def _pace(self, freed: int, over_s: float) -> float:
        """The wait before the next periodic sweep, after one that freed ``freed`` objects
        gathered over ``over_s`` seconds: until ``GARBAGE_BOUND`` should be waiting again,
        no more than twice the last wait, no more than a day (nor less than the gap)."""
        longest = max(self.sweep_every_s, LONGEST_SWEEP_EVERY_S)
        rate = freed / over_s if over_s > 0 else 0.0
        wanted = GARBAGE_BOUND / rate if rate > 0 else longest
        return max(MIN_SWEEP_GAP_S, min(wanted, self.sweep_every_now_s * 2, longest))

    def _sweep_due(self) -> bool:
        since = self.clock() - self._last_sweep
        if since < sweep_wait(self._last_sweep_s):
            return False
        if self.sweep_every_now_s and since >= self.sweep_every_now_s:
            return True
        return bool(self.sweep_after) and self.stranded >= self.sweep_after

    def close(self) -> None:
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()

    def stats(self) -> dict[str, float | int]:
        return {"collections": self.collections, "last_ms": round(self.last_ms, 2),
                "max_ms": round(self.max_ms, 2), "every_ticks": self.every_ticks,
                "sweeps": self.sweeps, "sweep_last_ms": round(self.sweep_last_ms, 2),
                "sweep_max_ms": round(self.sweep_max_ms, 2),
                "swept_objects": self.swept_objects, "stranded": self.stranded,
                "sweep_every_s": self.sweep_every_now_s}


def resident_bytes() -> int | None:
    """This process's resident memory now (Linux; None elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")
