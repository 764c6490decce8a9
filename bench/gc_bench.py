"""The garbage-collection policy before and after issue 36 (``python -m bench --only gc``).

For each size, one warmed-up world runs two paced sessions (10 Hz, persistence on, as
``python main.py`` runs one; bench/engine.py's ``measure_paced``), one per policy:

- *old*: ``agent_world/gcpolicy.py`` as of ``OLD_COMMIT`` (collect and freeze after every
  tick, never unfreeze), read from git;
- *new*: this tree's, which also sweeps (unfreeze, collect everything, freeze again) when
  closed connections are held by frozen cycles, or hourly.

Each reports the tick p99, the main thread's busy p99 (tick plus the work before the next),
and the longest collection after a tick. A paced minute with no web client has no sweep in
it, so the new policy's sweeps are then timed on the same world, ``SWEEPS`` of them: the
longest collector pause it can make.
"""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.gcpolicy import GcPolicy
from bench.engine import Budget, build_world
from bench.scenario import saved_session, summarise

__all__ = ["OLD_COMMIT", "measure_gc", "old_policy"]

ROOT = Path(__file__).resolve().parent.parent
OLD_COMMIT = "81e471e"  # gcpolicy.py as it was before issue 36 (unchanged until then)
SWEEPS = 3


def old_policy(folder: Path) -> Callable[[], Any]:
    """The old ``GcPolicy`` class, loaded from git into ``folder``; made with no arguments."""
    source = subprocess.run(["git", "-C", str(ROOT), "show",
                             f"{OLD_COMMIT}:agent_world/gcpolicy.py"],
                            capture_output=True, text=True, check=True).stdout
    path = folder / "old_gcpolicy.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_gcpolicy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_gcpolicy"] = module
    spec.loader.exec_module(module)
    base: Any = module.GcPolicy

    class Old(base):  # type: ignore[misc]
        def collect(self) -> None:
            """A session collects while the world is paused: the old policy's one way."""
            self.between_ticks()

    return Old


def _paced(world: Any, config: Any, name: str, make: Callable[[], Any],
           ticks: int) -> dict[str, Any]:
    session = saved_session(world, config, name)
    session.gc.close()
    session.gc = make()
    try:
        asyncio.run(session.run(max_ticks=ticks, paced=True))
        loop = session.loop
        total = getattr(loop, "total_s", [])
        between = getattr(loop, "between_s", [])
        busy = [t + b for t, b in zip(total, between, strict=True)]
        stats = session.gc.stats()
        result: dict[str, Any] = {
            "ticks": ticks, "tick": summarise(total), "between": summarise(between),
            "busy": summarise(busy), "collections": stats["collections"],
            "collection_max_ms": stats["max_ms"]}
        if isinstance(session.gc, GcPolicy):
            times = []
            for _ in range(SWEEPS):
                session.gc.sweep()
                times.append(session.gc.sweep_last_ms)
            result["sweep_ms"] = [round(t, 1) for t in times]
    finally:
        session.close()
    return result


def measure_gc(sizes: list[int], *, ticks: int = 600, warmup_ticks: int = 20,
               log: Callable[[str], None] = print) -> dict[str, Any]:
    """Both policies at each size (module doc)."""
    out: dict[str, Any] = {"old_commit": OLD_COMMIT, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="bench-gc-") as tmp:
        root = Path(tmp)
        old = old_policy(root)
        for n in sizes:
            world, config, info = build_world(n, root / str(n), warmup_ticks)
            try:
                figures: dict[str, Any] = {"world": info}
                for label, make in (("old", old), ("new", GcPolicy)):
                    r = figures[label] = _paced(world, config, f"gc-{label}", make, ticks)
                    sweep = f", sweeps {r['sweep_ms']} ms" if "sweep_ms" in r else ""
                    log(f"  gc {n} agents, {label} policy: tick p99 {r['tick']['p99_ms']} ms, "
                        f"busy p99 {r['busy']['p99_ms']} ms, longest collection "
                        f"{r['collection_max_ms']} ms{sweep}")
                out["sizes"][str(n)] = figures
            finally:
                world.close()
    return out


if __name__ == "__main__":  # pragma: no cover - python -m bench --only gc is the way in
    print(measure_gc([int(a) for a in sys.argv[1:]] or [1000], ticks=Budget().paced_max_ticks))
