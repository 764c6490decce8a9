"""Measurements that need a process of their own: ``python -m bench.isolated KIND N`` prints
one JSON line. A fresh interpreter per measurement keeps worlds built earlier from
polluting the figure.

- ``memory N``: resident memory growth from just before ``World.create`` to after a few
  ticks, divided by N. It includes each agent's share of the map (tiles, objects and items
  scale with it).
- ``snapshot N``: a warmed-up N-agent world snapshotted as in a run (persistence on), in a
  process holding only that world: forking (the main thread's share) costs more the more
  memory the process has, so a benchmark process that built other worlds first would
  overstate it.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent_world.core.world import World
from bench.engine import build_world, measure_snapshots
from bench.scenario import saved_session, scaled_config

__all__ = ["in_fresh_process", "rss_bytes"]

TICKS = 20


def rss_bytes() -> int:
    """Current resident set size (Linux /proc; elsewhere the peak from getrusage)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource  # noqa: PLC0415 - only where /proc is missing

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _memory(agents: int, snapshots: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-mem-") as tmp:
        config = scaled_config(agents, Path(tmp))
        gc.collect()
        before = rss_bytes()
        world = World.create(config)
        for _ in range(TICKS):
            world.step()
        gc.collect()
        after = rss_bytes()
        entities = len(world.store)
        world.close()
    grown = after - before
    return {"agents": agents, "entities": entities, "rss_before_mb": round(before / 2**20, 1),
            "rss_after_mb": round(after / 2**20, 1), "grown_mb": round(grown / 2**20, 1),
            "kb_per_agent": round(grown / agents / 1024, 1),
            "bytes_per_entity": round(grown / entities) if entities else None}


def _snapshot(agents: int, snapshots: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-snap-") as tmp:
        world, config, _info = build_world(agents, Path(tmp), TICKS)
        session = saved_session(world, config, "snapshot")
        try:
            result = measure_snapshots(session, world, snapshots)
        finally:
            session.close()
            world.close()
    result["agents"] = agents
    result["process_rss_mb"] = round(rss_bytes() / 2**20, 1)
    return result


_KINDS = {"memory": _memory, "snapshot": _snapshot}


def in_fresh_process(kind: str, agents: int, snapshots: int = 5) -> dict[str, Any]:
    """Run one measurement in a new interpreter and return its figures."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-m", "bench.isolated", kind, str(agents),
                           str(snapshots)], env=env, capture_output=True, text=True,
                          check=False, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"'{kind}' measurement for {agents} agents failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


if __name__ == "__main__":
    print(json.dumps(_KINDS[sys.argv[1]](int(sys.argv[2]), int(sys.argv[3]))))
