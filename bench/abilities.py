"""Sandbox cost per tick: agents cast abilities every tick in a running world.

    .venv/bin/python bench/abilities.py [--agents 200] [--casts 20] [--ticks 600]

Every tick, ``--casts`` agents (in turn) cast: half of them a generated ability with no cost
or cooldown that loops over what it sees (a realistic small ability: ~100-300 steps), the
others built-ins (heal, forage, shield, haste, proclaim, fire_bolt at the nearest agent).
Prints tick time p50/p99 with and without abilities, and the sandbox's own figures: time
per tick (p50/p99), time per call, worker round trips per tick.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.abilities import source_digest
from agent_world.core.world import World
from agent_world.sandbox import Sandbox
from agent_world.sandbox.compiler import compile_ability

SURVEY = '''"""A small, realistic ability: look around, pick the weakest neighbour, say so."""
NAME = "survey"
DESCRIPTION = "Size up everyone nearby and name the weakest."
ENERGY_COST = 0
COOLDOWN = 0
RANGE = 0
ARGS = {}


def execute(ctx):
    agents = ctx["nearby"]["agents"]
    if not agents:
        return [{"type": "message", "text": "Nobody around."}]
    weakest = min(agents, key=lambda a: (a["health"], a["id"]))
    total = sum(a["health"] for a in agents)
    names = ", ".join(a["name"] for a in sorted(agents, key=lambda a: a["distance"])[:5])
    return [{"type": "message",
             "text": f"{len(agents)} near ({names}); weakest {weakest['name']}, "
                     f"mean health {total / len(agents):.0f}"[:160]}]
'''
BUILTINS = ("heal", "forage", "shield", "haste", "proclaim", "fire_bolt")


def _accept(text: str) -> dict[str, object]:
    meta, _code = compile_ability(text)
    return {"name": meta.name, "source": text, "sha256": source_digest(text),
            "meta": meta.to_dict(), "request": 0, "origin": "operator"}


def _nearest(world: World, eid: int) -> int | None:
    pos = world.store.get(eid, c.Position)
    for _d2, other in world.agents_grid.near(pos.x, pos.y, 6):
        if other != eid:
            return other
    return None


def _plans(world: World, casts: int, turn: int) -> None:
    agents = [eid for eid, _row in world.agents()]
    for i in range(casts):
        eid = agents[(turn * casts + i) % len(agents)]
        name = "survey" if i % 2 == 0 else BUILTINS[(turn + i) % len(BUILTINS)]
        args: dict[str, object] = {"ability": name}
        if name == "fire_bolt":
            target = _nearest(world, eid)
            if target is None:
                continue
            args["target"] = target
        elif name == "proclaim":
            args["text"] = "Hear me!"
        world.inbox.submit("plan", {"agent": eid, "source": "bench",
                                    "actions": [{"name": "use_ability", "args": args}]})


async def _drive(session: Session, world: World, casts: int, ticks: int,
                 with_abilities: bool) -> None:
    for turn in range(ticks):
        if with_abilities and turn > 0:
            _plans(world, casts, turn)
        session.loop.tick_once()
        if turn % 10 == 0:
            await asyncio.sleep(0)


def run(agents: int, casts: int, ticks: int) -> dict[str, object]:
    config = Config().replace(world={"starting_agents": agents, "size": [96, 96]},
                              persistence={"enabled": False}, log={"echo": False},
                              paths={"logs": "/tmp/agent-world-bench-logs"})
    figures: dict[str, object] = {"agents": agents, "casts_per_tick": casts, "ticks": ticks}
    for label, with_abilities in (("without", False), ("with", True)):
        world = World.create(config)
        session = Session(config, world, sandbox=Sandbox(config))
        world.inbox.submit("ability", _accept(SURVEY))
        started = time.perf_counter()
        asyncio.run(_drive(session, world, casts, ticks, with_abilities))
        elapsed = time.perf_counter() - started
        loop = session.loop.stats()
        figures[f"tick_ms_{label}_abilities"] = {"p50": round(loop.p50_ms, 2),
                                                 "p99": round(loop.p99_ms, 2),
                                                 "max": round(loop.max_ms, 2)}
        figures[f"ticks_per_s_{label}"] = round(ticks / elapsed)
        if with_abilities:
            figures["casts"] = world.counters.get("ability_casts", 0)
            figures["sandbox"] = session.ability_stats()["sandbox"]
        session.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--casts", type=int, default=20, help="casts submitted per tick")
    parser.add_argument("--ticks", type=int, default=600)
    args = parser.parse_args()
    print(json.dumps(run(args.agents, args.casts, args.ticks), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
