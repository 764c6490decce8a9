"""Agent World's engine beside Mesa on the shared workload (``bench.workload``).

For each size, every implementation runs the same number of steps from the same seed, several
times, interleaved (ECS, Mesa, Mesa, ECS, ...) so a busy machine slows all of them alike.
Building the model is not timed. Reports the median step time and the best; the ratio is
Mesa's median over ours, for each Mesa version, and headline against the faster one.
"""

from __future__ import annotations

import gc
import importlib.util
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.workload import Workload, WorkloadModel

__all__ = ["compare", "mesa_available", "mesa_version"]


def mesa_available() -> bool:
    return importlib.util.find_spec("mesa") is not None


def mesa_version() -> str | None:
    if not mesa_available():
        return None
    import mesa  # noqa: PLC0415 - optional (the bench extra)

    return str(mesa.__version__)


def _implementations() -> dict[str, Callable[[Workload], WorkloadModel]]:
    # The Mesa versions import mesa, an optional dependency: only when the comparison runs.
    from bench.workload.ecs import EcsModel  # noqa: PLC0415
    from bench.workload.mesa_cells import MesaCellsModel  # noqa: PLC0415
    from bench.workload.mesa_space import MesaSpaceModel  # noqa: PLC0415

    return {"agent_world": EcsModel, "mesa_space": MesaSpaceModel,
            "mesa_cells": MesaCellsModel}


def _time_run(factory: Callable[[Workload], WorkloadModel], workload: Workload,
              steps: int) -> tuple[float, WorkloadModel]:
    model = factory(workload)
    gc.collect()
    started = time.perf_counter()
    for _ in range(steps):
        model.step()
    return time.perf_counter() - started, model


def compare(sizes: list[int], *, steps: int, repeats: int, density: float = 0.1,
            log: Callable[[str], None] = print) -> dict[str, Any]:
    impls = _implementations()
    out: dict[str, Any] = {"steps": steps, "repeats": repeats, "density": density,
                           "statistic": "median of the repeats (best also shown)",
                           "mesa_version": mesa_version(), "sizes": {}}
    for n in sizes:
        workload = Workload(agents=n, density=density)
        times: dict[str, list[float]] = {name: [] for name in impls}
        dynamics: dict[str, dict[str, float]] = {}
        for rep in range(repeats):
            order = list(impls) if rep % 2 == 0 else list(reversed(impls))
            for name in order:
                elapsed, model = _time_run(impls[name], workload, steps)
                times[name].append(elapsed)
                c = model.counters
                dynamics[name] = {
                    "attacks_per_step": round(c.attacks / steps, 1),
                    "deaths_per_step": round(c.deaths / steps, 2),
                    "transfers_per_step": round(c.transfers / steps, 1),
                    "seen_per_agent": round(c.seen_total / steps / n, 3),
                }
                close = getattr(model, "close", None)
                if close is not None:
                    close()
                del model
            log(f"  mesa comparison, {n} agents, run {rep + 1}/{repeats}: "
                + ", ".join(f"{k} {v[-1] / steps * 1000:.1f} ms/step"
                            for k, v in times.items()))
        result: dict[str, Any] = {"side": workload.side, "implementations": {}}
        for name, seconds in times.items():
            result["implementations"][name] = {
                "median_ms_per_step": round(statistics.median(seconds) / steps * 1000, 2),
                "best_ms_per_step": round(min(seconds) / steps * 1000, 2),
                "steps_per_s": round(steps / statistics.median(seconds), 1),
                **dynamics[name],
            }
        ours = statistics.median(times["agent_world"])
        ratios = {name: round(statistics.median(times[name]) / ours, 2)
                  for name in impls if name != "agent_world"}
        result["ratio_vs"] = ratios
        result["ratio"] = min(ratios.values())
        out["sizes"][str(n)] = result
    return out
