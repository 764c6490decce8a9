"""The tick loop on a fake clock: pacing, overruns, controls and statistics. Never sleeps."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from agent_world.config import Config
from agent_world.core.loop import HISTORY, MIN_TICK_RATE, LoopError, TickLoop
from agent_world.core.world import World
from agent_world.types import FakeClock, TickReport

RATE = 8.0
PERIOD = 1 / RATE  # 0.125 s: with binary-fraction costs the fake clock's sums are exact


class Recorder:
    """An observer that keeps every report it is given."""

    def __init__(self, action: Callable[[TickReport], None] | None = None) -> None:
        self.reports: list[TickReport] = []
        self.action = action

    def on_tick(self, report: TickReport) -> None:
        self.reports.append(report)
        if self.action is not None:
            self.action(report)

    @property
    def ticks(self) -> list[int]:
        return [r.tick for r in self.reports]


class Costly:
    """Wraps ``world.step`` so each tick takes ``cost(i)`` seconds of fake time; records when
    each tick started and the report the world itself returned."""

    def __init__(self, world: World, clock: FakeClock,
                 costs: Sequence[float] | Callable[[int], float] = ()) -> None:
        self.clock = clock
        self.costs = costs
        self.starts: list[float] = []
        self.world_reports: list[TickReport] = []
        self._step = world.step
        world.step = self  # type: ignore[method-assign]

    def cost(self, i: int) -> float:
        if callable(self.costs):
            return self.costs(i)
        return self.costs[i] if i < len(self.costs) else 0.0

    def __call__(self) -> TickReport:
        i = len(self.starts)
        self.starts.append(self.clock.now())
        report = self._step()
        self.world_reports.append(report)
        self.clock.advance(self.cost(i))
        return report


@pytest.fixture
def world() -> Iterator[World]:
    cfg = Config().replace(world={"size": [16, 16], "starting_agents": 3})
    w = World.create(cfg, seed=1)
    yield w
    w.close()


def make_loop(world: World, *, rate: float = RATE, start: float = 0.0,
              costs: Sequence[float] | Callable[[int], float] = (),
              observers: Sequence[Any] = ()) -> tuple[TickLoop, FakeClock, Costly]:
    clock = FakeClock(start)
    costly = Costly(world, clock, costs)
    loop = TickLoop(world, clock, rate, observers=observers)
    return loop, clock, costly


async def spin(n: int = 100) -> None:
    """Let other tasks run (an event-loop yield, not a sleep)."""
    for _ in range(n):
        await asyncio.sleep(0)


# -- pacing -----------------------------------------------------------------------------------


def test_paced_run_sleeps_to_absolute_deadlines(world: World) -> None:
    costs = [1 / 64, 1 / 16, 3 / 32, 0.0, 1 / 32, 7 / 64, 1 / 128, 0.0]
    loop, clock, costly = make_loop(world, start=100.0, costs=costs)
    asyncio.run(loop.run(max_ticks=len(costs)))
    assert loop.ticks_run == len(costs)
    assert world.tick == len(costs)
    assert costly.starts == [100.0 + k * PERIOD for k in range(len(costs))]
    assert clock.sleeps == [PERIOD - c for c in costs]
    assert clock.now() == 100.0 + len(costs) * PERIOD
    assert loop.overruns == 0


def test_paced_run_does_not_drift_over_many_ticks(world: World) -> None:
    # 10 Hz: the period is not a binary fraction, and every tick costs a little. Sleeping a
    # fixed period after each tick (or measuring relative to the last wake) would drift.
    n = 300
    loop, clock, costly = make_loop(world, rate=10.0, start=5.0,
                                    costs=lambda i: 0.001 * (i % 7))
    asyncio.run(loop.run(max_ticks=n))
    assert len(costly.starts) == n
    for k, started in enumerate(costly.starts):
        assert started == pytest.approx(5.0 + k * 0.1, abs=1e-9), f"tick {k + 1}"
    assert len(clock.sleeps) == n
    for i, slept in enumerate(clock.sleeps):
        assert slept == pytest.approx(0.1 - 0.001 * (i % 7), abs=1e-9)


def test_a_tick_longer_than_its_period_is_an_overrun(world: World) -> None:
    probe = Recorder()
    costs = [0.0, 0.25, 0.125, 0.0, 0.0, 0.0]
    loop, clock, costly = make_loop(world, costs=costs, observers=[probe])
    asyncio.run(loop.run(max_ticks=len(costs)))
    assert loop.overruns == 1
    assert loop.stats().overruns == 1
    overruns = [[e for e in r.events if e["type"] == "overrun"] for r in probe.reports]
    # Tick 2 overran; its whole cost is known only after its observers ran, so the next
    # report (tick 3) carries it.
    assert overruns == [[], [], [{"type": "overrun", "late_tick": 2, "ms": 250.0,
                                  "budget_ms": 125.0}], [], [], []]
    # the report keeps the world's own events, in front of the overrun
    assert list(probe.reports[2].events[:-1]) == list(costly.world_reports[2].events)
    assert probe.reports[2].tick == costly.world_reports[2].tick == 3
    # A tick exactly one period long (tick 3) is on time. Being less than a period behind,
    # the loop makes up the lag and returns to its original schedule (tick 6 at 5 periods).
    assert costly.starts == [0.0, 0.125, 0.375, 0.5, 0.5, 0.625]
    assert clock.sleeps == [0.125, 0.0, 0.0, 0.0, 0.125, 0.125]


def test_falling_far_behind_reanchors_instead_of_bursting(world: World) -> None:
    # The second tick takes 8 periods; a loop that kept the old deadlines would run ~7 ticks
    # back to back with zero-length sleeps to "catch up".
    loop, clock, costly = make_loop(world, costs=[0.0, 1.0])
    asyncio.run(loop.run(max_ticks=8))
    assert costly.starts == [0.0, 0.125, 1.125, 1.25, 1.375, 1.5, 1.625, 1.75]
    assert clock.sleeps == [0.125, 0.0, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125]
    assert clock.sleeps.count(0.0) == 1
    assert loop.overruns == 1
    # The ticks it let go of are counted, with the time they stood for: 7 whole periods of
    # the 875 ms it was behind after tick 2.
    assert loop.skipped == 7 and loop.stats().skipped == 7
    assert loop.stats().lost_ms == pytest.approx(875.0)


def test_ticks_lost_to_work_between_ticks_are_counted_and_reported(world: World) -> None:
    # Issue 30: a web client whose messages cost the loop a second between two ticks (a
    # keyframe per subscribe) took a world from 10 ticks a second to 0.2, and neither the
    # overruns nor the tick times showed it: the work was not in a tick.
    probe = Recorder()
    loop, clock, _costly = make_loop(world, costs=[0.0] * 6, observers=[probe])
    stalls = iter([0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    loop.between_ticks = lambda: clock.advance(next(stalls))
    asyncio.run(loop.run(max_ticks=6))
    stats = loop.stats()
    assert stats.overruns == 0 and stats.p99_ms == 0.0  # no tick was slow
    assert stats.skipped == 7 and stats.lost_ms == pytest.approx(875.0)
    late = [[e for e in r.events if e["type"] in ("skipped", "overrun")]
            for r in probe.reports]
    assert late == [[], [], [{"type": "skipped", "ticks": 7, "ms": 875.0,
                              "budget_ms": 125.0}], [], [], []]


def test_unpaced_run_runs_exactly_n_ticks_without_sleeping(world: World) -> None:
    loop, clock, _ = make_loop(world, costs=lambda i: 0.01)
    asyncio.run(loop.run(max_ticks=37, paced=False))
    assert loop.ticks_run == 37
    assert world.tick == 37
    assert clock.sleeps == []
    asyncio.run(loop.run(max_ticks=5, paced=False))  # max_ticks counts from where it is
    assert loop.ticks_run == 42
    assert world.tick == 42
    assert clock.sleeps == []


def test_paced_run_with_max_ticks_runs_exactly_n(world: World) -> None:
    loop, clock, _ = make_loop(world)
    asyncio.run(loop.run(max_ticks=13))
    assert loop.ticks_run == 13
    assert world.tick == 13
    assert len(clock.sleeps) == 13


# -- pause, step, resume ----------------------------------------------------------------------


def test_pause_step_and_resume(world: World) -> None:
    probe = Recorder()

    def pause_at_three(report: TickReport) -> None:
        if report.tick == 3:
            loop.pause()

    loop, clock, costly = make_loop(world, observers=[probe, Recorder(pause_at_three)])

    async def main() -> None:
        task = asyncio.create_task(loop.run(max_ticks=10))
        await spin()
        # paused: no ticks, no sleeps, however long the event loop runs
        assert loop.paused
        assert loop.ticks_run == 3
        assert not task.done()
        sleeps_before = len(clock.sleeps)
        await spin()
        assert loop.ticks_run == 3
        assert len(clock.sleeps) == sleeps_before

        stepped = await loop.step(2)
        assert [r.tick for r in stepped] == [4, 5]
        assert loop.ticks_run == 5
        assert world.tick == 5
        assert len(clock.sleeps) == sleeps_before  # stepping never waits
        await spin()
        assert loop.ticks_run == 5  # still paused after stepping

        clock.advance(10.0)  # wall time passes while paused
        resumed_at = clock.now()
        loop.resume()
        await asyncio.wait_for(task, timeout=10)
        assert loop.ticks_run == 10
        # resuming starts afresh from now: no burst to make up for the pause
        assert costly.starts[5:] == [resumed_at + k * PERIOD for k in range(5)]
        assert 0.0 not in clock.sleeps[sleeps_before:]

    asyncio.run(main())
    assert probe.ticks == list(range(1, 11))
    assert world.tick == 10


def test_step_advances_exactly_n_ticks(world: World) -> None:
    probe = Recorder()
    loop, clock, _ = make_loop(world, observers=[probe])
    loop.pause()
    reports = asyncio.run(loop.step(25))
    assert [r.tick for r in reports] == list(range(1, 26))
    assert loop.ticks_run == 25
    assert world.tick == 25
    assert probe.reports == reports
    assert asyncio.run(loop.step())[0].tick == 26
    assert clock.sleeps == []


def test_step_requires_pause(world: World) -> None:
    loop, _, _ = make_loop(world)
    with pytest.raises(LoopError, match="pause"):
        asyncio.run(loop.step(1))
    assert world.tick == 0


@pytest.mark.parametrize("n", [0, -1, 1.5, True, "2", None])
def test_step_rejects_bad_counts(world: World, n: Any) -> None:
    loop, _, _ = make_loop(world)
    loop.pause()
    with pytest.raises(LoopError, match="step count") as info:
        asyncio.run(loop.step(n))
    assert repr(n) in str(info.value)
    assert world.tick == 0


def test_step_is_refused_while_running(world: World) -> None:
    errors: list[Exception] = []
    loop, _, _ = make_loop(world)

    async def main() -> None:
        task = asyncio.create_task(loop.run())
        await spin(5)
        try:
            await loop.step(1)
        except LoopError as exc:
            errors.append(exc)
        loop.stop()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(main())
    assert len(errors) == 1


def test_stop_while_paused_ends_run(world: World) -> None:
    loop, _, _ = make_loop(world)
    loop.pause()

    async def main() -> None:
        task = asyncio.create_task(loop.run())
        await spin()
        assert not task.done()
        loop.stop()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(main())
    assert loop.ticks_run == 0
    assert loop.stopped


# -- speed ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 0.0, -1, -0.5, math.nan, math.inf, -math.inf, 1000.001,
                                 1001, "10", None])
def test_set_speed_rejects_bad_rates(world: World, bad: Any) -> None:
    loop, _, _ = make_loop(world)
    with pytest.raises(LoopError, match="speed") as info:
        loop.set_speed(bad)
    assert repr(bad) in str(info.value)
    assert loop.tick_rate == RATE  # unchanged
    assert loop.period == PERIOD


def test_set_speed_rejects_bools(world: World) -> None:
    # True is an int to Python, but never a meant tick rate (config and step() refuse bools).
    loop, _, _ = make_loop(world)
    with pytest.raises(LoopError, match="speed"):
        loop.set_speed(True)
    assert loop.tick_rate == RATE


def test_bad_rate_at_construction(world: World) -> None:
    with pytest.raises(LoopError):
        TickLoop(world, FakeClock(), 0)


def test_set_speed_accepts_the_range(world: World) -> None:
    loop, _, _ = make_loop(world)
    loop.set_speed(4)
    assert (loop.tick_rate, loop.period) == (4.0, 0.25)
    loop.set_speed(1000)
    assert loop.tick_rate == 1000.0
    loop.set_speed(0.5)
    assert loop.period == 2.0
    assert loop.stats().tick_rate == 0.5


def test_set_speed_changes_the_period_while_running(world: World) -> None:
    def slow_down(report: TickReport) -> None:
        if report.tick == 2:
            loop.set_speed(4)

    loop, clock, costly = make_loop(world, observers=[Recorder(slow_down)])
    asyncio.run(loop.run(max_ticks=5))
    assert costly.starts == [0.0, 0.125, 0.375, 0.625, 0.875]
    assert clock.sleeps == [0.125, 0.25, 0.25, 0.25, 0.25]


# -- stop -------------------------------------------------------------------------------------


def test_stop_from_an_observer_ends_run(world: World) -> None:
    def stop_at_five(report: TickReport) -> None:
        if report.tick == 5:
            loop.stop()

    loop, _, _ = make_loop(world, observers=[Recorder(stop_at_five)])
    asyncio.run(asyncio.wait_for(loop.run(), timeout=10))
    assert loop.ticks_run == 5
    assert loop.stopped


def test_stop_from_another_task_ends_run(world: World) -> None:
    loop, _, _ = make_loop(world)

    async def main() -> int:
        task = asyncio.create_task(loop.run())
        await spin(20)
        assert not task.done()
        loop.stop()
        at_stop = loop.ticks_run
        await asyncio.wait_for(task, timeout=10)
        return at_stop

    at_stop = asyncio.run(main())
    assert at_stop > 0
    assert loop.ticks_run == at_stop  # no tick after stop()


def test_unpaced_unbounded_run_can_be_stopped(world: World) -> None:
    def stop_at(report: TickReport) -> None:
        if report.tick == 123:
            loop.stop()

    loop, clock, _ = make_loop(world, observers=[Recorder(stop_at)])
    asyncio.run(asyncio.wait_for(loop.run(paced=False), timeout=30))
    assert loop.ticks_run == 123
    assert clock.sleeps == []


# -- statistics -------------------------------------------------------------------------------


def _run_with_durations(world: World, durations_ms: list[float]) -> TickLoop:
    loop, _, _ = make_loop(world, costs=[d / 1000 for d in durations_ms])
    asyncio.run(loop.run(max_ticks=len(durations_ms), paced=False))
    return loop


def test_stats_percentiles_from_known_durations(world: World) -> None:
    durations = [float(k) for k in range(1, 101)]
    random.Random(7).shuffle(durations)
    stats = _run_with_durations(world, durations).stats()
    assert stats.ticks == 100
    assert stats.p50_ms == pytest.approx(50.0)
    assert stats.p99_ms == pytest.approx(99.0)
    assert stats.max_ms == pytest.approx(100.0)
    assert stats.mean_ms == pytest.approx(50.5)
    assert stats.overruns == 0  # all under 125 ms
    assert stats.tick_rate == RATE
    assert stats.paused is False


def test_stats_percentiles_nearest_rank(world: World) -> None:
    durations = [float(k) for k in range(200, 0, -1)]  # 200 .. 1 ms
    stats = _run_with_durations(world, durations).stats()
    assert stats.p50_ms == pytest.approx(100.0)
    assert stats.p99_ms == pytest.approx(198.0)
    assert stats.max_ms == pytest.approx(200.0)
    assert stats.overruns == 75  # 126 .. 200 ms are over the 125 ms budget


def test_stats_of_one_tick_and_of_none(world: World) -> None:
    loop, _, _ = make_loop(world)
    empty = loop.stats()
    assert (empty.ticks, empty.p50_ms, empty.p99_ms, empty.max_ms, empty.mean_ms) == (
        0, 0.0, 0.0, 0.0, 0.0)
    one = _run_with_durations(world, [40.0]).stats()
    assert one.p50_ms == one.p99_ms == one.max_ms == one.mean_ms == pytest.approx(40.0)


def test_stats_cover_the_recent_history_only(world: World) -> None:
    durations = [1000.0] * 5 + [2.0] * HISTORY
    stats = _run_with_durations(world, durations).stats()
    assert stats.ticks == HISTORY + 5
    assert stats.overruns == 5  # counted over the whole run
    assert stats.max_ms == pytest.approx(2.0)  # but timings are the last HISTORY ticks


def test_stats_report_pause(world: World) -> None:
    loop, _, _ = make_loop(world)
    loop.pause()
    assert loop.stats().paused is True
    loop.resume()
    assert loop.stats().paused is False


# -- observers --------------------------------------------------------------------------------


def test_observers_receive_every_report_in_order(world: World) -> None:
    first, second = Recorder(), Recorder()
    order: list[str] = []
    first.action = lambda r: order.append(f"a{r.tick}")
    second.action = lambda r: order.append(f"b{r.tick}")
    loop, _, _ = make_loop(world, observers=[first, second])

    async def main() -> list[TickReport]:
        await loop.run(max_ticks=12)
        await loop.run(max_ticks=8, paced=False)
        loop.pause()
        return await loop.step(5)

    stepped = asyncio.run(main())
    assert first.ticks == list(range(1, 26))
    assert second.reports == first.reports  # the very same report objects, same order
    assert first.reports[-5:] == stepped
    assert order == [f"{who}{t}" for t in range(1, 26) for who in "ab"]
    assert all(isinstance(r, TickReport) for r in first.reports)


def test_stopping_applies_inputs_already_accepted() -> None:
    """An operator's last command before /quit takes effect (and so is logged)."""
    world = World.create(Config().replace(world={"size": [16, 16], "starting_agents": 3}),
                         seed=1)
    loop = TickLoop(world, FakeClock(), 10)

    async def scenario() -> None:
        task = asyncio.create_task(loop.run())
        await asyncio.sleep(0)
        world.inbox.submit("spawn", {"kind": "agent", "name": "Last"})
        loop.stop()
        await task

    asyncio.run(scenario())
    assert world.population.find("Last") is not None
    assert world.inbox.pending() == 0


# -- controls never wait for the clock -------------------------------------------------------


class StuckClock(FakeClock):
    """A clock whose sleeps never end by themselves: a period of 1e300 s, or of 100 s at
    /speed 0.01. Only the loop's own wake-up can end them."""

    async def sleep_until(self, deadline: float) -> None:
        self.sleeps.append(deadline - self.now())
        await asyncio.Event().wait()  # never set


def _stuck_loop(world: World, rate: float = 0.01) -> TickLoop:
    return TickLoop(world, StuckClock(), rate)


async def _until(condition: Callable[[], bool]) -> None:
    # The loop under test offers no event for "ticked"; yielding until it has is exact.
    while not condition():  # noqa: ASYNC110
        await asyncio.sleep(0)


def test_stop_ends_a_run_sleeping_through_a_long_period(world: World) -> None:
    loop = _stuck_loop(world)

    async def main() -> None:
        task = asyncio.create_task(loop.run())
        await _until(lambda: loop.ticks_run == 1)
        await spin()
        loop.stop()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(main())
    assert loop.ticks_run == 1


def test_a_new_speed_takes_effect_during_a_long_period(world: World) -> None:
    loop = _stuck_loop(world, rate=MIN_TICK_RATE)

    async def main() -> None:
        task = asyncio.create_task(loop.run())
        await _until(lambda: loop.ticks_run == 1)
        await spin()
        loop.set_speed(10)  # the next tick comes now, not a thousand seconds later
        await asyncio.wait_for(_until(lambda: loop.ticks_run == 2), timeout=10)
        loop.stop()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(main())
    assert loop.ticks_run == 2


def test_pause_and_resume_take_effect_during_a_long_period(world: World) -> None:
    loop = _stuck_loop(world)

    async def main() -> None:
        task = asyncio.create_task(loop.run())
        await _until(lambda: loop.ticks_run == 1)
        loop.pause()
        await spin()
        loop.set_speed(10)
        await spin()
        assert loop.ticks_run == 1  # paused: a speed change does not tick
        loop.resume()
        await asyncio.wait_for(_until(lambda: loop.ticks_run == 2), timeout=10)
        loop.stop()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(main())


@pytest.mark.parametrize("bad", [1e-300, 5e-324, MIN_TICK_RATE / 2])
def test_rates_below_the_minimum_are_refused_with_the_bounds(world: World, bad: float) -> None:
    loop, _, _ = make_loop(world)
    with pytest.raises(LoopError, match=r"\[0\.001, 1000\]"):
        loop.set_speed(bad)
    assert loop.tick_rate == RATE
