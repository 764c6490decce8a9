"""The benchmark's helpers: scaled worlds keep the default density, percentiles, and the
capacity search's bisection (with a fake probe). No timings are asserted."""

from __future__ import annotations

from typing import Any

import pytest

from bench.capacity import find_capacity
from bench.scenario import DENSITY, percentile, scaled_config


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
