"""Users' brains under load (``python -m bench --only brains``): 100 agents thinking with a
user's Python brain, paced at 10 Hz, beside the same world on built-in brains. Brains run
off the tick on worker threads, so the world must not notice them: tick p99 within 10% of
the built-in world's (issue 14).

The brain is ``BenchForager`` below: a tier-2 brain that reads its observation and answers
a short plan, as a user's would; the two worlds differ only in each agent's brain.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_world.agents import Brain, Decision, Observation
from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.userbrains.registry import load_brains
from bench.llm_load import paced_figures
from bench.scenario import side_for

__all__ = ["BenchForager", "measure_brains"]

FOOD = ("berries", "apple", "bread", "meat")


class BenchForager(Brain):
    """Eat when hungry, fetch the nearest food, flee what attacks it, else wander."""

    def decide(self, obs: Observation, actions: Mapping[str, Any]
               ) -> Decision | Sequence[Decision]:
        me = obs.me
        if me.attacked_by is not None:
            return Decision("flee", {"target": me.attacked_by.id}, reasoning="attacked")
        carried = [k for k in FOOD if me.items.get(k)]
        if me.hunger > 50 and carried:
            return Decision("eat", {"item": carried[0]}, reasoning="hungry")
        food = [i for i in obs.items if i.kind in FOOD]
        if food:
            return [Decision("move_to", {"target": food[0].id}),
                    Decision("pickup", {"target": food[0].id}, reasoning="food nearby")]
        return Decision("wander", {"ticks": 30}, reasoning="looking for food")


def _run(config: Config, ticks: int, *, brain: str) -> dict[str, Any]:
    world = World.create(config)
    if brain != "builtin":
        for _eid, row in world.agents():
            row[0].brain = brain  # the same world, each agent given to the user's brain
    session = Session(config, world,
                      brains=load_brains(config.brains) if brain != "builtin" else None)

    def brain_figures(wall: float) -> dict[str, Any]:
        out: dict[str, Any] = {"alive": len(session.world.agents())}
        if session.brains is not None:
            figures = session.brains.stats()
            out |= {"decisions": figures["decisions applied"],
                    "decisions_per_s": round(figures["decisions applied"] / wall, 2),
                    "fallbacks": figures["fallbacks"], "faults": figures["faults"],
                    "latency_p50": figures["p50"], "latency_p95": figures["p95"],
                    "main_thread_p99": figures["main thread p99"]}
        return out

    return paced_figures(session, ticks, brain_figures)


def measure_brains(*, agents: int = 100, seconds: float = 60.0,
                   log: Callable[[str], None] = print) -> dict[str, Any]:
    ticks = max(20, int(seconds * 10))
    side = side_for(agents)
    with tempfile.TemporaryDirectory(prefix="bench-brains-") as tmp:
        config = Config().replace(
            world={"size": [side, side], "starting_agents": agents, "seed": 7},
            persistence={"enabled": False}, paths={"logs": str(Path(tmp) / "logs")},
            log={"echo": False},
            brains={"registered": {"forager": "bench.brains_bench:BenchForager"}})
        log(f"brains: {agents} agents, built-in brains, {ticks} ticks at 10 Hz")
        builtin = _run(config, ticks, brain="builtin")
        log(f"brains: {agents} agents on a user's Python brain, {ticks} ticks at 10 Hz")
        users = _run(config, ticks, brain="forager")
    ratio = users["p99_ms"] / builtin["p99_ms"] if builtin["p99_ms"] else None
    return {"agents": agents, "builtin": builtin, "brains": users,
            "p99_ratio": round(ratio, 3) if ratio is not None else None}
