"""The largest population that holds the tick rate: p99 of the main thread's share of a
period (the tick's systems and observers, persistence on, plus the work before the next
tick: garbage collection, the fork of a state hash) under one tick period (100 ms at 10 Hz).

Starts from the sizes the paced section measured, takes the largest that passed and the
smallest larger one that failed, and bisects between them with short paced runs until the
bracket is narrower than ``resolution`` of the lower bound (or the step limit is reached).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.engine import build_world, measure_flat, measure_paced

__all__ = ["find_capacity", "short_paced_p99"]


def short_paced_p99(agents: int, *, seconds: float, warmup_ticks: int) -> dict[str, Any]:
    """One short paced run (persistence on) of a fresh scaled world."""
    with tempfile.TemporaryDirectory(prefix="bench-cap-") as tmp:
        world, config, info = build_world(agents, Path(tmp), warmup_ticks)
        estimate = measure_flat(world, 1.0, min_ticks=3, max_ticks=50)["mean_ms"] / 1000
        paced = measure_paced(world, config, "capacity", seconds=seconds, min_ticks=30,
                              max_ticks=round(seconds * config.world.tick_rate),
                              tick_estimate_s=estimate)
        world.close()
    return {"agents": agents, "ticks": paced["ticks"],
            "p99_ms": paced["busy"]["p99_ms"], "passes": paced["holds_10hz"],
            "entities": info["entities"]}


def find_capacity(measured: list[tuple[int, float, bool]], *, seconds: float,
                  warmup_ticks: int, max_steps: int = 6, resolution: float = 0.05,
                  probe: Callable[..., dict[str, Any]] = short_paced_p99,
                  log: Callable[[str], None] = print) -> dict[str, Any]:
    """``measured``: (agents, p99 ms, passes) from the full paced runs."""
    passing = [n for n, _p, ok in measured if ok]
    lo = max(passing) if passing else 0
    failing = [n for n, _p, ok in measured if not ok and n > lo]
    hi = min(failing) if failing else None
    steps: list[dict[str, Any]] = []
    if hi is None:
        return {"largest_agents": lo, "bracket": [lo, None], "steps": steps,
                "method": f"every measured size passed; {lo} is the largest measured, the "
                          "true limit is higher"}
    if lo == 0:
        lo = 10
    while len(steps) < max_steps and hi - lo > max(25, resolution * lo):
        mid = (lo + hi) // 2
        mid = max(lo + 1, round(mid, -1) if hi - lo > 40 else mid)
        result = probe(mid, seconds=seconds, warmup_ticks=warmup_ticks)
        steps.append(result)
        log(f"  capacity: {mid} agents -> p99 {result['p99_ms']:.1f} ms over "
            f"{result['ticks']} ticks: {'holds' if result['passes'] else 'misses'} 10 Hz")
        if result["passes"]:
            lo = mid
        else:
            hi = mid
    return {"largest_agents": lo, "bracket": [lo, hi], "steps": steps,
            "method": f"bisection between the paced sizes with {seconds:g} s paced runs "
                      f"(persistence on); passes when the busy p99 (tick + work before "
                      f"the next) < 100 ms; stopped with the limit in [{lo}, {hi})"}
