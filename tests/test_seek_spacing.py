"""Where seek points fall: spaced by what replaying to them costs (``SeekSpacing``), told
each tick's cost by the session's tick loop. Costs here are made up (a fake clock moved on
inside each tick), never measured, so every placement is exact."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_world.app import Session
from agent_world.config import Config, ConfigError, load_config
from agent_world.persistence import SaveFolder, open_world
from agent_world.persistence.seekpoints import SeekSpacing
from agent_world.types import FakeClock, TickReport
from tests.persistence_helpers import records, reference_hash, saving_config


def placed(spacing: SeekSpacing, cost: Callable[[int], float], ticks: range) -> list[int]:
    """The ticks ``spacing`` makes seek points of, each tick costing ``cost(tick)``."""
    return [tick for tick in ticks if spacing.after_tick(tick, cost(tick))]


def longest_replay(points: list[int], cost: Callable[[int], float], first: int,
                   last: int) -> float:
    """The most a seek into ``first``..``last`` replays, starting from the latest point (or
    ``first``, the world's first snapshot) before its target."""
    worst = 0.0
    starts = [first, *points, last]
    for start, end in itertools.pairwise(starts):
        worst = max(worst, sum(cost(t) for t in range(start + 1, end)))
    return worst


def test_ticks_of_even_cost_get_a_point_as_late_as_the_target_allows() -> None:
    def cost(tick: int) -> float:
        return 0.003

    points = placed(SeekSpacing(100, 1.0, 0), cost, range(1, 1001))
    assert points == [300, 600, 900]  # 400 ticks would replay 1.2 s
    assert longest_replay(points, cost, 0, 1000) <= 1.0


def test_a_world_that_grows_costlier_gets_points_closer_together_at_once() -> None:
    def cost(tick: int) -> float:
        return 0.0002 if tick <= 1000 else 0.006  # 20 agents, then a thousand more

    points = placed(SeekSpacing(100, 1.0, 0), cost, range(1, 1501))
    # The interval 1001..1100 already costs 0.6 s: by the next one a seek would replay
    # more than the target, so 1100 gets a point; from there one every interval.
    assert points == [1100, 1200, 1300, 1400, 1500]
    assert longest_replay(points, cost, 0, 1500) <= 1.0


def test_the_ticks_before_a_resume_count_at_the_cost_of_this_run() -> None:
    # The newest point is at 1,000; this run starts at 1,500 and its ticks cost 3 ms: a
    # seek to 1,650 would replay 650 ticks from 1,000, so 1,600 gets a point at once.
    assert placed(SeekSpacing(100, 1.0, 1000), lambda t: 0.003, range(1501, 1701)) == [1600]
    # Counted from where the run started instead, the first point would come 200 later.
    assert placed(SeekSpacing(100, 1.0, 1500), lambda t: 0.003, range(1501, 2001)) == [1800]


def test_target_zero_puts_a_point_on_every_multiple_and_interval_zero_none() -> None:
    assert placed(SeekSpacing(100, 0.0, 0), lambda t: 0.0, range(1, 501)) == [
        100, 200, 300, 400, 500]
    assert placed(SeekSpacing(0, 1.0, 0), lambda t: 10.0, range(1, 501)) == []
    with pytest.raises(ValueError, match="must be >= 0"):
        SeekSpacing(-1, 1.0, 0)


class CostlyTicks:
    """A tick observer that makes each tick cost ``seconds(tick)`` on a fake clock: the tick
    loop measures that as the tick's duration."""

    def __init__(self, clock: FakeClock, seconds: Callable[[int], float]) -> None:
        self.clock = clock
        self.seconds = seconds

    def on_tick(self, report: TickReport) -> None:
        self.clock.advance(self.seconds(report.tick))


def run_costly(config: Config, ticks: int, seconds: Callable[[int], float]) -> Session:
    opened = open_world(config)
    clock = FakeClock()
    session = Session(config, opened.world, clock=clock, folder=opened.folder,
                      resumed=opened.resumed)
    session.loop.observers.append(CostlyTicks(clock, seconds))
    try:
        asyncio.run(session.loop.run(max_ticks=ticks, paced=False))
    finally:
        session.close()
    return session


def test_a_running_world_spaces_its_seek_points_by_the_cost_of_its_ticks(
        tmp_path: Path) -> None:
    cheap = saving_config(tmp_path / "cheap", snapshot_interval_ticks=1000,
                          seek_interval_ticks=50, seek_target_ms=1000)
    dear = saving_config(tmp_path / "dear", snapshot_interval_ticks=1000,
                         seek_interval_ticks=50, seek_target_ms=1000)
    run_costly(cheap, 700, lambda tick: 0.001)  # a seek point every 950 ticks
    run_costly(dear, 700, lambda tick: 0.003)  # one every 300
    cheap_folder = SaveFolder(tmp_path / "cheap" / "saves" / "w")
    dear_folder = SaveFolder(tmp_path / "dear" / "saves" / "w")
    assert [t for t, _ in cheap_folder.seek_points()] == []
    assert [t for t, _ in dear_folder.seek_points()] == [300, 600]

    # Where they fall changes no state and no line of the log.
    def logged(folder: SaveFolder) -> list[dict[str, object]]:
        return [r for r in records(folder.root) if r["kind"] != "marker"]

    assert logged(cheap_folder) == logged(dear_folder)
    resumed = open_world(dear)
    try:
        assert resumed.world.state_hash() == reference_hash(dear, 700)
    finally:
        resumed.close()


def test_a_resumed_world_counts_from_its_newest_seek_point(tmp_path: Path) -> None:
    config = saving_config(tmp_path, snapshot_interval_ticks=1000, seek_interval_ticks=50,
                           seek_target_ms=1000)
    run_costly(config, 450, lambda tick: 0.003)  # a point at 300
    # Ticks 451..650: by 600 a seek would replay 300 ticks from 300 (counted from 450, the
    # next point would come at 750).
    run_costly(config, 200, lambda tick: 0.003)
    folder = SaveFolder(tmp_path / "saves" / "w")
    assert [t for t, _ in folder.seek_points()] == [300, 600]


def test_a_config_file_of_an_earlier_version_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("persistence:\n  seek_interval_ticks: 100\n  seek_budget_mb: 512\n",
                    encoding="utf-8")
    persistence = load_config(path).persistence
    assert persistence.seek_interval_ticks == 100 and persistence.seek_budget_mb == 512
    assert persistence.seek_target_ms == Config().persistence.seek_target_ms > 0
    path.write_text("persistence:\n  seek_target_ms: -5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"persistence\.seek_target_ms = -5 .* expected "
                       r"a whole number >= 0"):
        load_config(path)
