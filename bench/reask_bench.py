"""Re-asking recorded decisions (``python -m bench --only reask``): 1,000 decisions of a
1,000-agent world put to the built-in brain, on one worker and on every core.

The world is recorded as an eval episode records one (``run_episode``: persistence on,
default seek points, each decision a logged ``plan`` input): the map and rates of the
engine's 1,000-agent world (``scaled_config``), ``SUBJECTS`` of its agents on ``Steady``, a
deterministic user's brain (a world of built-in agents only logs no decisions, and has
nothing to re-ask). Then ``python main.py reask`` as the command runs it (``prepare_reask``
and ``run_reask``, with the sandbox factory), with a seeded sample of ``DECISIONS``: decisions
per second and wall time, with one worker and with all cores. Both runs must write the same
records.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.agents import Brain, Decision
from agent_world.cli.replay import available_cpus, sandboxed
from agent_world.config import Config
from agent_world.contract.observation import Observation
from agent_world.eval import load_scenario, run_episode
from agent_world.recorded.reask import ReaskOptions, prepare_reask, run_reask
from bench.scenario import scaled_config

__all__ = ["Steady", "measure_reask"]

AGENTS = 1000
SUBJECTS = 200  # of the 1,000, on Steady; the rest on the built-in brain
DECISIONS = 1000
TICKS = 800  # long enough for the log to split into spans at its seek points


class Steady(Brain):
    """A deterministic brain: eat when hungry, pick up what lies near, else walk to the
    nearest agent or wander (the same observation gives the same decision)."""

    def decide(self, obs: Observation, actions: Any) -> Decision:
        if obs.me.hunger > 60 and obs.me.items:
            return Decision("eat", {"item": sorted(obs.me.items)[0]})
        if obs.items and obs.items[0].distance <= 3:
            return Decision("pickup", {"target": obs.items[0].id})
        if obs.agents and obs.tick % 2:
            return Decision("move_to", {"target": obs.agents[0].id})
        return Decision("wander", {"ticks": 20 + obs.tick % 11})


def _record(root: Path) -> tuple[Path, Config, float]:
    scaled = scaled_config(AGENTS).world
    world = {"size": list(scaled.size), "starting_agents": AGENTS - SUBJECTS,
             "max_agents": scaled.max_agents, "item_spawn_rate": scaled.item_spawn_rate,
             "immigration_interval_ticks": scaled.immigration_interval_ticks}
    scenario = dataclasses.replace(load_scenario("survival"), name="reask", world=world,
                                   subjects=dataclasses.replace(
                                       load_scenario("survival").subjects, count=SUBJECTS),
                                   ticks=TICKS, subjects_dead=False)
    base = Config().replace(brains={"registered": {"steady": "bench.reask_bench:Steady"}},
                            paths={"runs": str(root / "runs")})
    began = time.perf_counter()
    episode = run_episode(scenario, "steady", 1, root / "episode", base=base)
    return Path(episode.folder), base, time.perf_counter() - began


def _reask(folder: Path, config: Config, out: Path, workers: int) -> dict[str, Any]:
    options = ReaskOptions(brains=("builtin",), sample=DECISIONS, seed=1)
    plan = prepare_reask(folder, config, options, out, workers=workers)
    result = run_reask(plan, setup_factory=sandboxed)
    return {"workers": workers, "spans": result.spans,
            "decisions": len(result.selection.keys), "seconds": round(result.seconds, 2),
            "decisions_per_s": round(len(result.selection.keys) / result.seconds, 1),
            "logged_in_world": result.selection.found,
            "exact": result.report["results"]["builtin"]["rates"]["exact"]}


def measure_reask(*, log: Callable[[str], None], root: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-reask-") as temp:
        base = root or Path(temp)
        log(f"reask: recording a {AGENTS}-agent world ({SUBJECTS} on a user's brain, "
            f"{TICKS} ticks)")
        folder, config, record_s = _record(base)
        runs = []
        cores = available_cpus()
        for workers in dict.fromkeys((1, cores)):
            log(f"reask: re-asking {DECISIONS} decisions with builtin, {workers} worker(s)")
            runs.append(_reask(folder, config, base / f"out-{workers}", workers))
        same = len({(base / f"out-{r['workers']}" / "builtin.jsonl").read_bytes()
                    for r in runs}) == 1
        seek = len(list((folder / "seek").glob("*.json.gz")))
        return {"agents": AGENTS, "subjects": SUBJECTS, "ticks": TICKS,
                "record_s": round(record_s, 1), "seek_points": seek, "runs": runs,
                "same_records": same, "cores": cores}
