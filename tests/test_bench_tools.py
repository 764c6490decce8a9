"""The benchmark's helpers: scaled worlds keep the default density, percentiles, and the
capacity search's bisection (with a fake probe), the soak's slopes. No timings are
asserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.capacity import find_capacity
from bench.cli import build_parser
from bench.scenario import DENSITY, percentile, scaled_config
from bench.soak import folder_bytes, slope_per_hour


@pytest.mark.parametrize("agents", [100, 1000, 10000])
def test_scaled_worlds_keep_the_default_density(agents: int) -> None:
    config = scaled_config(agents)
    w, h = config.world.size
    assert w == h
    assert agents / (w * h) == pytest.approx(DENSITY, rel=0.01)
    assert config.world.starting_agents == agents


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 0.5) == 50.0
    assert percentile([], 0.5) == 0.0


def test_capacity_search_bisects_between_measured_sizes() -> None:
    limit = 2345
    probed: list[int] = []

    def probe(agents: int, **_kw: Any) -> dict[str, Any]:
        probed.append(agents)
        return {"agents": agents, "ticks": 100, "p99_ms": agents / limit * 100,
                "passes": agents <= limit}

    result = find_capacity([(100, 1.0, True), (1000, 40.0, True), (5000, 210.0, False)],
                           seconds=1.0, warmup_ticks=0, max_steps=10, probe=probe,
                           log=lambda _m: None)
    lo, hi = result["bracket"]
    assert lo <= limit < hi
    assert result["largest_agents"] == lo
    assert hi - lo <= max(25, 0.05 * lo)
    assert all(1000 < n < 5000 for n in probed)


def test_capacity_search_reports_when_every_size_passes() -> None:
    result = find_capacity([(100, 1.0, True), (1000, 40.0, True)], seconds=1.0,
                           warmup_ticks=0, probe=lambda *a, **k: pytest.fail("no probe"),
                           log=lambda _m: None)
    assert result["largest_agents"] == 1000
    assert result["bracket"] == [1000, None]


def test_the_soak_slope_is_per_hour_by_least_squares() -> None:
    assert slope_per_hour([(0.0, 10.0), (1800.0, 15.0), (3600.0, 20.0)]) == pytest.approx(10.0)
    assert slope_per_hour([(0.0, 3.0), (60.0, 5.0), (120.0, 3.0)]) == pytest.approx(0.0)
    assert slope_per_hour([(5.0, 1.0)]) == 0.0  # one sample has no slope


def test_the_soak_measures_a_folder_by_its_files(tmp_path: Path) -> None:
    assert folder_bytes(tmp_path / "missing") == 0
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_bytes(b"12345")
    (tmp_path / "y").write_bytes(b"123")
    assert folder_bytes(tmp_path) == 8


def test_soak_minutes_are_checked_on_the_command_line(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert build_parser().parse_args(["--only", "soak", "--soak-minutes", "2.5"]
                                     ).soak_minutes == 2.5
    for bad in ("0.5", "ten"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["--soak-minutes", bad])
        assert "argument --soak-minutes" in capsys.readouterr().err
