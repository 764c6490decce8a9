"""Liveliness over a long run: does the default world stay varied for a day of world time?

Each seed runs the default configuration as ``python main.py --headless`` does (a save
folder, the sandbox and the angel, no LLM), flat out, timed window by window; then the
liveliness report is read from its save folder, and its checks give the verdict. The figures
per window come from the report; ticks per second from the clock around each window, so
that a world whose cost per tick grows with its age shows it.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_world.app import Session
from agent_world.config import Config
from agent_world.persistence import open_world
from agent_world.report import Window, build_report
from agent_world.report.checks import evaluate, violations
from agent_world.sandbox import Sandbox

__all__ = ["GROWTH_MAX", "measure_liveliness", "run_seed"]

GROWTH_MAX = 2.0  # flat-out ticks/s of the first window over the last, at most


def _config(root: Path, seed: int) -> Config:
    return Config().replace(world={"seed": seed, "name": f"live-{seed}"},
                            paths={"saves": str(root / "saves"), "logs": str(root / "logs")},
                            log={"echo": False})


def run_seed(seed: int, ticks: int, window: int, root: Path,
             log: Callable[[str], None]) -> dict[str, Any]:
    """Run one seed for ``ticks`` ticks; its report's figures per window and the rates."""
    config = _config(root, seed)
    rates: list[float] = []
    with Sandbox(config) as sandbox:
        opened = open_world(config, setup=sandbox.install)
        session = Session(config, opened.world, folder=opened.folder, sandbox=sandbox)
        try:
            done = 0
            while done < ticks:
                n = min(window, ticks - done)
                began = time.perf_counter()
                asyncio.run(session.run(max_ticks=n, paced=False))
                rates.append(n / (time.perf_counter() - began))
                done += n
                log(f"  seed {seed}: tick {session.world.tick:,} ({rates[-1]:,.0f} ticks/s)")
        finally:
            session.close()
    report = build_report(root / "saves" / f"live-{seed}", window=window)
    findings = evaluate(report)
    broken = violations(findings)
    return {
        "seed": seed,
        "ticks": ticks,
        "windows": [_window(w, rate) for w, rate in zip(report.windows, rates, strict=False)],
        "ticks_per_s_first": round(rates[0], 1),
        "ticks_per_s_last": round(rates[-1], 1),
        "slowdown": round(rates[0] / rates[-1], 2) if rates[-1] else None,
        "checks": len(findings),
        "violations": [f.line() for f in broken],
    }


def _window(w: Window, rate: float) -> dict[str, Any]:
    p, wealth, t, s, a = w.population, w.wealth, w.trade, w.speech, w.abilities
    return {
        "ticks": w.span,
        "agents_min": p.agents_min,
        "agents_max": p.agents_max,
        "by_personality": dict(p.by_personality),
        "richest_share_max": wealth.richest_gold_share_max,
        "items_max": wealth.items_max,
        "over_capacity_max": wealth.over_capacity_max,
        "offers": t.offers,
        "acceptance": t.acceptance,
        "undone_share": t.undone_share,
        "speech_lines": s.lines,
        "distinct_share": s.distinct_share,
        "casts": a.casts,
        "casts_by_personality": dict(a.by_personality),
        "angel_requests": w.angel.requests,
        "failed_share": w.failures.share,
        "ticks_per_s": round(rate, 1),
    }


def measure_liveliness(seeds: Sequence[int], ticks: int, window: int, *,
                       log: Callable[[str], None]) -> dict[str, Any]:
    """Every seed in turn (one at a time: ticks per second must not share the cores)."""
    out: dict[str, Any] = {"seeds": [], "ticks": ticks, "window": window}
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        for seed in seeds:
            log(f"liveliness: seed {seed}, {ticks:,} ticks")
            out["seeds"].append(run_seed(seed, ticks, window, Path(tmp) / str(seed), log))
    return out
