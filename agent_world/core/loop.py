"""The tick loop: paces a world at its tick rate on an injected clock.

Deadlines are absolute (start + k * period), so small delays never accumulate into drift. A
tick that takes longer than its period is counted as an overrun; when the loop falls more
than a period behind it re-anchors instead of bursting to catch up, and the ticks it lets go
of are counted as skipped, with the time they stood for: whatever held the loop up (a long
tick, or work between ticks such as a web client's), the world's figures show the time lost,
and a ``skipped`` event says it with the next tick, as an overrun is.

Controls (stop, pause, resume, a new speed) wake the loop from its sleep at once: at 0.01 Hz a
period lasts 100 s, and /quit, SIGTERM or /speed 10 must not wait for it to end.

A part of the session may *hold* the loop (``hold``/``release``): while anything holds it,
no tick starts, neither running nor stepping, and the operator's pause is left alone. The
angel holds the world at the tick its answer is due until the answer is in, so that a world
without an LLM is the same however fast the machine.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent_world.core import events as ev
from agent_world.core.world import World
from agent_world.types import Clock, TickObserver, TickReport

__all__ = ["MAX_TICK_RATE", "MIN_TICK_RATE", "LoopError", "TickLoop", "TickStats"]

MAX_TICK_RATE = 1000.0
MIN_TICK_RATE = 0.001  # one tick in a thousand seconds
HISTORY = 1000
YIELD_EVERY = 10  # flat-out runs let the event loop breathe this often


class LoopError(RuntimeError):
    """A loop control used in the wrong state (step while running, bad speed ...)."""


@dataclass(frozen=True, slots=True)
class TickStats:
    """Tick timing over the last ``HISTORY`` ticks, in milliseconds."""

    ticks: int
    overruns: int
    skipped: int  # ticks a paced run let go of after falling more than a period behind
    lost_ms: float  # the time they stood for
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    tick_rate: float
    paused: bool


def _percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


class TickLoop:
    def __init__(self, world: World, clock: Clock, tick_rate: float,
                 observers: Iterable[TickObserver] = ()) -> None:
        self.world = world
        self.clock = clock
        self.period = 0.0
        self.tick_rate = 0.0
        self._wake: asyncio.Event | None = None  # made by run(), on the loop it runs in
        self.set_speed(tick_rate)
        self.observers: list[TickObserver] = list(observers)
        self.paused = False
        self._holds: set[str] = set()  # who holds the loop (no tick starts meanwhile)
        self.ticks_run = 0
        self.overruns = 0
        self.skipped = 0
        self.lost_s = 0.0
        self._durations: deque[float] = deque(maxlen=HISTORY)
        self.last_tick_seconds = 0.0  # what the last tick cost the main thread (the clock's)
        self._stopped = False
        self._reanchor = True
        # Work that must stay out of ticks (garbage collection): runs after each tick,
        # before the loop sleeps, and is not counted in the tick's duration.
        self.between_ticks: Callable[[], None] | None = None
        # Machine-made events for the next tick's report: overruns, skipped ticks.
        self._late: list[dict[str, float | int | str]] = []

    # -- controls ----------------------------------------------------------------------------

    def set_speed(self, tick_rate: float) -> None:
        if not (isinstance(tick_rate, (int, float)) and not isinstance(tick_rate, bool)
                and math.isfinite(tick_rate)
                and MIN_TICK_RATE <= tick_rate <= MAX_TICK_RATE):
            raise LoopError(f"speed must be a number of ticks per second in "
                            f"[{MIN_TICK_RATE:g}, {MAX_TICK_RATE:g}], got {tick_rate!r}")
        self.tick_rate = float(tick_rate)
        self.period = 1.0 / self.tick_rate
        self._reanchor = True
        self._wake_up()

    def pause(self) -> None:
        self.paused = True
        self._wake_up()

    def resume(self) -> None:
        self.paused = False
        self._reanchor = True
        self._wake_up()

    def stop(self) -> None:
        self._stopped = True
        self._wake_up()

    def hold(self, holder: str) -> None:
        """Start no tick until ``holder`` releases the loop (other holders may remain)."""
        self._holds.add(holder)

    def release(self, holder: str) -> None:
        if holder in self._holds:
            self._holds.discard(holder)
            self._reanchor = True
            self._wake_up()

    @property
    def holders(self) -> tuple[str, ...]:
        """Who holds the loop now (empty: nobody)."""
        return tuple(sorted(self._holds))

    def _wake_up(self) -> None:
        if self._wake is not None:
            self._wake.set()

    @property
    def stopped(self) -> bool:
        return self._stopped

    async def step(self, n: int = 1) -> list[TickReport]:
        """Advance exactly ``n`` ticks while paused, as fast as possible (fewer if the loop
        is stopped meanwhile)."""
        if not self.paused:
            raise LoopError("step works while paused; pause first")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise LoopError(f"step count must be a whole number >= 1, got {n!r}")
        reports = []
        if self._wake is None:
            self._wake = asyncio.Event()
        for i in range(n):
            while self._holds and not self._stopped:  # a hold outlasts a step, too
                self._wake.clear()
                await self._wake.wait()
            if self._stopped:
                break
            reports.append(self.tick_once())
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                await asyncio.sleep(0)
        return reports

    # -- running -----------------------------------------------------------------------------

    def tick_once(self) -> TickReport:
        """One tick: the world's step plus its observers (log, persistence), timed together
        as the main thread's cost of the tick. An overrun is reported with the next tick,
        once the whole cost is known."""
        start = self.clock.now()
        report = self.advance()
        if self._late:
            report = TickReport(tick=report.tick, inputs=report.inputs,
                                events=[*report.events, *self._late])
            self._late = []
        for observer in self.observers:
            observer.on_tick(report)
        elapsed = self.clock.now() - start
        self._durations.append(elapsed)
        self.last_tick_seconds = elapsed
        self.ticks_run += 1
        if elapsed > self.period:
            self.overruns += 1
            self._late.append({"type": ev.OVERRUN, "late_tick": report.tick,
                               "ms": round(elapsed * 1000, 1),
                               "budget_ms": round(self.period * 1000, 1)})
        if self.between_ticks is not None:
            self.between_ticks()
        return report

    def advance(self) -> TickReport:
        """The world's step (a served replay steps with logged inputs instead)."""
        return self.world.step()

    async def run(self, *, max_ticks: int | None = None, paced: bool = True) -> None:
        """Tick until stopped (or ``max_ticks`` more ticks). Unpaced runs go flat out."""
        self._wake = asyncio.Event()
        target = None if max_ticks is None else self.ticks_run + max_ticks
        deadline = self.clock.now()
        while not self._stopped and (target is None or self.ticks_run < target):
            if self.paused or self._holds:
                self._wake.clear()
                await self._wake.wait()
                continue
            if self._reanchor:
                deadline = self.clock.now()
                self._reanchor = False
            self.tick_once()
            if not paced:
                if self.ticks_run % YIELD_EVERY == 0:
                    await asyncio.sleep(0)
                continue
            deadline += self.period
            now = self.clock.now()
            if deadline < now - self.period:
                self._skip(now - deadline)
                deadline = now  # far behind: start afresh rather than burst
            await self._sleep_until(deadline)
        if self._stopped and self.world.inbox.pending():
            # Inputs already accepted (an operator's last commands before /quit) are applied,
            # and so logged, in one last tick rather than silently dropped.
            self.tick_once()

    def _skip(self, behind: float) -> None:
        """The loop is ``behind`` seconds late (more than a period) and starts afresh: the
        whole periods in it are ticks that will never run."""
        ticks = int(behind / self.period)
        self.skipped += ticks
        self.lost_s += behind
        self._late.append({"type": ev.SKIPPED, "ticks": ticks, "ms": round(behind * 1000, 1),
                           "budget_ms": round(self.period * 1000, 1)})

    async def _sleep_until(self, deadline: float) -> None:
        """Sleep on the clock until ``deadline``, unless a control wakes the loop first."""
        wake = self._wake
        assert wake is not None
        wake.clear()
        if self._stopped or self.paused or self._holds:
            return  # came during the tick (a new speed did too: the deadline has its period)
        sleeper = asyncio.ensure_future(self.clock.sleep_until(deadline))
        waker = asyncio.ensure_future(wake.wait())
        try:
            await asyncio.wait((sleeper, waker), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()

    # -- figures -----------------------------------------------------------------------------

    def stats(self) -> TickStats:
        ordered = sorted(self._durations)
        mean = sum(ordered) / len(ordered) if ordered else 0.0
        return TickStats(
            ticks=self.ticks_run,
            overruns=self.overruns,
            skipped=self.skipped,
            lost_ms=self.lost_s * 1000,
            p50_ms=_percentile(ordered, 0.50) * 1000,
            p99_ms=_percentile(ordered, 0.99) * 1000,
            max_ms=(ordered[-1] if ordered else 0.0) * 1000,
            mean_ms=mean * 1000,
            tick_rate=self.tick_rate,
            paused=self.paused,
        )
