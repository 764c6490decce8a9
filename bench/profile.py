"""``python -m bench profile N``: where an N-agent world's tick time goes, by system.

Builds the scaled world, warms it up, times K ticks without a profiler, then profiles K more
with pyinstrument (a sampling profiler: little overhead) or, when it is not installed,
cProfile (deterministic, but it inflates Python-heavy code). Prints each system's share of
the profiled time and the functions that spend the most time themselves.
"""

from __future__ import annotations

import cProfile
import gc
import importlib.util
import pstats
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.core.systems import SYSTEMS
from agent_world.core.world import World
from bench.engine import build_world

__all__ = ["profile_world"]

SYSTEM_NAMES = tuple(system.__name__ for system in SYSTEMS)


def _with_pyinstrument(world: World, ticks: int) -> tuple[dict[str, float],
                                                            list[tuple[str, float]], float,
                                                            str]:
    from pyinstrument import Profiler  # noqa: PLC0415 - optional (the bench extra)

    profiler = Profiler(interval=0.001)
    profiler.start()
    for _ in range(ticks):
        world.step()
    profiler.stop()
    session = profiler.last_session
    assert session is not None
    root = session.root_frame()
    assert root is not None
    by_system: dict[str, float] = dict.fromkeys(SYSTEM_NAMES, 0.0)
    own: dict[str, float] = {}
    stack: list[tuple[Any, str | None]] = [(root, None)]
    while stack:
        frame, system = stack.pop()
        if system is None and frame.function in by_system:
            system = frame.function
            by_system[system] += frame.time
        if not frame.is_synthetic:  # "[self]" frames are counted in their parent's
            where = f"{frame.function} ({frame.file_path_short}:{frame.line_no})"
            own[where] = own.get(where, 0.0) + frame.total_self_time
        stack.extend((child, system) for child in frame.children)
    total = session.duration
    tree = profiler.output_text(unicode=False, color=False, show_all=False)
    return by_system, sorted(own.items(), key=lambda kv: -kv[1]), total, tree


def _with_cprofile(world: World, ticks: int) -> tuple[dict[str, float],
                                                       list[tuple[str, float]], float, str]:
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(ticks):
        world.step()
    profiler.disable()
    total = time.perf_counter() - started
    stats = pstats.Stats(profiler)
    by_system: dict[str, float] = dict.fromkeys(SYSTEM_NAMES, 0.0)
    own: list[tuple[str, float]] = []
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    for (path, line, func), (_cc, _nc, tottime, cumtime, _callers) in raw.items():
        if func in by_system and path.endswith(".py"):
            by_system[func] += cumtime
        short = "/".join(Path(path).parts[-3:])
        own.append((f"{func} ({short}:{line})", tottime))
    return by_system, sorted(own, key=lambda kv: -kv[1]), total, ""


class GcPauses:
    """Collector pauses, by generation, while in use (the profilers do not show them)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            generation = info["generation"]
            self.seconds[generation] += time.perf_counter() - self._started
            self.count[generation] += 1

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        gc.callbacks.remove(self)


def profile_world(agents: int, ticks: int, *, warmup_ticks: int = 20, top: int = 15,
                  tree: bool = False, log: Callable[[str], None] = print) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-prof-") as tmp:
        world, _config, info = build_world(agents, Path(tmp), warmup_ticks)
        with GcPauses() as pauses:
            started = time.perf_counter()
            for _ in range(ticks):
                world.step()
            plain_ms = (time.perf_counter() - started) / ticks * 1000
        use_pyinstrument = importlib.util.find_spec("pyinstrument") is not None
        run = _with_pyinstrument if use_pyinstrument else _with_cprofile
        by_system, own, total, text = run(world, ticks)
        world.close()
    profiler = "pyinstrument (sampling)" if use_pyinstrument else (
        "cProfile (pyinstrument not installed; deterministic, overhead inflates Python code)")
    log(f"{agents} agents on a {info['map']} map, {info['entities']} entities; "
        f"{ticks} ticks after {warmup_ticks} warm-up ticks")
    log(f"unprofiled: {plain_ms:.1f} ms/tick; profiled with {profiler}: "
        f"{total / ticks * 1000:.1f} ms/tick")
    gc_ms = sum(pauses.seconds) * 1000
    log(f"automatic garbage collection in the unprofiled run (a session moves it between "
        f"ticks, see agent_world/gcpolicy.py): {gc_ms / ticks:.2f} ms/tick "
        f"({gc_ms / (plain_ms * ticks):.1%}); collections by generation "
        f"{pauses.count}, time per generation "
        f"{[round(s * 1000, 1) for s in pauses.seconds]} ms")
    log("")
    log(f"{'system':<22}{'ms/tick':>10}{'share':>8}")
    accounted = 0.0
    for name in SYSTEM_NAMES:
        seconds = by_system[name]
        accounted += seconds
        log(f"{name:<22}{seconds / ticks * 1000:>10.2f}{seconds / total:>8.1%}")
    rest = max(0.0, total - accounted)
    log(f"{'(outside systems)':<22}{rest / ticks * 1000:>10.2f}{rest / total:>8.1%}")
    log("")
    log(f"top {top} functions by own time:")
    for where, seconds in own[:top]:
        log(f"  {seconds / ticks * 1000:8.2f} ms/tick {seconds / total:6.1%}  {where}")
    if tree and text:
        log("")
        log(text)
    return {"agents": agents, "ticks": ticks, "plain_ms_per_tick": round(plain_ms, 2),
            "gc_ms_per_tick": round(gc_ms / ticks, 2),
            "profiler": profiler,
            "systems_ms_per_tick": {k: round(v / ticks * 1000, 2) for k, v in by_system.items()},
            "top": [(w, round(s / ticks * 1000, 3)) for w, s in own[:top]]}
