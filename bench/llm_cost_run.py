"""One run of the ``llm_cost`` section, in a process of its own, against whichever
``agent_world`` is first on the import path (this tree, or an older commit's checked out
beside it), so both are measured by the same code:

    python bench/llm_cost_run.py URL OUT.json [--agents 20] [--ticks 6000]

A new default world with AGENTS LLM agents runs TICKS ticks unpaced against the fake
endpoint at URL; after each tick it waits for the answers asked for, so an answer lands in
the tick it was asked in (no world time passes while the model thinks: the figures measure
prompts and triggers, not the endpoint). The budget is off, so what the thinking policy
asks for is what is measured. The event log is then read: every LLM decision with its
usage, and every attack, word and offer aimed at an LLM agent with how long the agent took
to decide after it (a word it did not hear counts too, so the slowest of these are
overstated).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import agent_world
from agent_world.app import Session
from agent_world.config import Config
from agent_world.persistence import SaveFolder, open_world
from agent_world.persistence.eventlog import LogReader

REACTIVE = {"attack": "target", "say": "to", "trade_offer": "target"}
WAIT_S = 5.0


def run(url: str, agents: int, ticks: int, root: Path) -> dict[str, Any]:
    config = Config().replace(
        world={"name": "cost", "seed": 11},
        llm={"provider": "openai", "base_url": url, "model": "gpt-4o-mini",
             "api_key_env": "", "agents": agents, "tokens_per_hour": 0,
             "request_timeout_s": 10.0, "breaker_failures": 1000},
        paths={"saves": str(root / "saves"), "logs": str(root / "logs")},
        log={"echo": False})
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder)
    llm = session.llm
    assert llm is not None
    began = time.perf_counter()

    async def drive() -> None:
        for _ in range(ticks):
            await session.loop.run(max_ticks=1, paced=False)
            waited = time.perf_counter()
            # The workers are threads: poll until they have answered what was asked.
            while llm.thinking() and time.perf_counter() - waited < WAIT_S:  # noqa: ASYNC110
                await asyncio.sleep(0.0005)

    try:
        asyncio.run(drive())
        stats = llm.stats()
        llm_ids = {eid for eid, row in session.world.agents() if row[0].brain == "llm"}
        llm_ids |= set(llm.minds)
    finally:
        session.close()
    wall = time.perf_counter() - began
    decisions: list[dict[str, Any]] = []
    aimed: list[tuple[int, int]] = []  # (tick, agent) of an attack, word or offer at it
    plan_ticks: dict[int, list[int]] = {}
    for record in LogReader(SaveFolder(root / "saves" / "cost")):
        if record.get("kind") == "input" and record.get("type") == "plan" \
                and record.get("source") == "llm":
            data = record["data"]
            decisions.append(data.get("usage") or {})
            plan_ticks.setdefault(int(data["agent"]), []).append(int(record["tick"]))
        elif record.get("kind") == "event" and record.get("type") in REACTIVE:
            target = record.get(REACTIVE[str(record["type"])])
            if isinstance(target, int):
                aimed.append((int(record["tick"]), target))
    # Ticks from an attack, a word or an offer aimed at an LLM agent to its next decision;
    # an agent that never decided again (it died, or the run ended) is left out.
    reactions = []
    for tick, agent in aimed:
        later = [t for t in plan_ticks.get(agent, []) if t > tick]
        if later:
            reactions.append(min(later) - tick)
    reactions.sort()
    return {
        "version": getattr(agent_world, "__version__", "?"),
        "agents": agents, "ticks": ticks, "tick_rate": config.world.tick_rate,
        "wall_s": round(wall, 1), "decisions": len(decisions),
        "prompt_tokens": sum(int(u.get("prompt_tokens", 0)) for u in decisions),
        "cached_tokens": sum(int(u.get("cached_tokens", 0)) for u in decisions),
        "completion_tokens": sum(int(u.get("completion_tokens", 0)) for u in decisions),
        "invalid": int(stats.get("invalid", 0)), "fallbacks": int(stats.get("fallbacks", 0)),
        "reactions": len(reactions),
        "reaction_p50_ticks": reactions[len(reactions) // 2] if reactions else None,
        "reaction_p95_ticks": reactions[int(len(reactions) * 0.95)] if reactions else None,
        "llm_agents_seen": len(llm_ids),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--ticks", type=int, default=6000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-llm-cost-") as tmp:
        figures = run(args.url, args.agents, args.ticks, Path(tmp))
    args.out.write_text(json.dumps(figures), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
