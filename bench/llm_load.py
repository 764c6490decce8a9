"""The LLM path under load: a world whose agents all think with an LLM behind the local
fake endpoint answering in 1 to 3 s, paced at 10 Hz beside the same world on built-in
brains. The world must not notice the model: tick p99 within 10% of the world without it.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.world import World
from bench.llm_bench import start_server
from bench.scenario import side_for

__all__ = ["measure_llm_load", "paced_figures"]


def paced_figures(session: Session, ticks: int,
                  extra: Callable[[float], dict[str, Any]]) -> dict[str, Any]:
    """Run ``session`` paced at its rate for ``ticks`` ticks, then close it: the tick
    figures, and what ``extra(wall seconds)`` adds before the session closes."""
    began = time.perf_counter()
    try:
        asyncio.run(session.loop.run(max_ticks=ticks, paced=True))
        wall = time.perf_counter() - began
        stats = session.loop.stats()
        return {"ticks": session.loop.ticks_run,
                "rate_hz": round(session.loop.ticks_run / wall, 2),
                "p50_ms": round(stats.p50_ms, 2), "p99_ms": round(stats.p99_ms, 2),
                "max_ms": round(stats.max_ms, 2), "overruns": stats.overruns, **extra(wall)}
    finally:
        session.close()


def _run(config: Config, ticks: int) -> dict[str, Any]:
    session = Session(config, World.create(config))

    def llm_figures(wall: float) -> dict[str, Any]:
        if session.llm is None:
            return {}
        llm = session.llm.stats()
        return {"decisions": llm["applied"], "decisions_per_s": round(llm["applied"] / wall, 2),
                "requests": llm["requests"], "cache_hit_rate": llm["cache hit rate"],
                "latency_p50": llm["p50"], "latency_p95": llm["p95"],
                "errors": llm["errors"], "llm_main_thread_p99": llm["main thread p99"],
                "prompt_tokens_per_decision": llm["prompt tokens/decision"]}

    return paced_figures(session, ticks, llm_figures)


def measure_llm_load(*, agents: int = 200, seconds: float = 60.0,
                     log: Callable[[str], None] = print) -> dict[str, Any]:
    """Both worlds paced for ``seconds``; the LLM one with every agent on the model."""
    ticks = max(20, int(seconds * 10))
    side = side_for(agents)
    os.environ.pop("OPENROUTER_API_KEY", None)
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp:
        base = Config().replace(
            world={"size": [side, side], "starting_agents": agents, "seed": 7},
            persistence={"enabled": False}, paths={"logs": str(Path(tmp) / "logs")},
            log={"echo": False})
        log(f"LLM load: {agents} agents, built-in brains, {ticks} ticks at 10 Hz")
        builtin = _run(base, ticks)
        child, url = start_server("latency")
        try:
            config = base.replace(llm={
                "provider": "openai", "base_url": url, "model": "bench", "api_key_env": "",
                "agents": agents, "workers": 32, "max_concurrent": 32,
                "request_timeout_s": 10.0, "tokens_per_hour": 0})
            log(f"LLM load: {agents} LLM agents, endpoint answering in 1-3 s")
            with_llm = _run(config, ticks)
        finally:
            child.communicate("", timeout=30)
    ratio = with_llm["p99_ms"] / builtin["p99_ms"] if builtin["p99_ms"] else None
    return {"agents": agents, "builtin": builtin, "llm": with_llm,
            "p99_ratio": round(ratio, 3) if ratio is not None else None}
