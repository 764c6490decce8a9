"""LLM benchmark: tick time with and without LLM agents, decisions per second and prompt
tokens per decision, against the local fake server (tests/llm_server.py).

    .venv/bin/python bench/llm_bench.py [--agents 200] [--llm-agents 50] [--ticks 2000]
    .venv/bin/python bench/llm_bench.py --inflight 1000 [--delay-s 5] [--ticks 600]

The second form (issue 32): ``llm.max_concurrent`` of that many, and a fifth more LLM agents
than that, all asking, against a server that answers each request after ``--delay-s``:
how many requests the transport and the server held in flight at once, the threads the
process ran, and the LLM pipeline's main-thread time per request.

Each scenario runs the same world; a tick here is world.step() plus every observer (the LLM
manager's main-thread share included), with a 1 ms pause between ticks so the worker
threads can run, as they do between 10 Hz ticks. The fake server runs in a process of its
own, as a real endpoint would, so that it does not compete for this process's GIL.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.decisions.metrics import percentile
from tests.llm_server import FakeLLMServer


def serve(mode: str) -> None:
    """Run the fake server until stdin closes (the benchmark's child process); then print
    the most requests it answered at once. ``slow:SECONDS`` sets the slow mode's delay."""
    server = FakeLLMServer().start()
    mode, _, delay = mode.partition(":")
    server.mode = mode
    if delay:
        server.delay_s = float(delay)
    print(server.base_url, flush=True)
    sys.stdin.read()
    print(server.peak, flush=True)
    server.stop()


def start_server(mode: str) -> tuple[subprocess.Popen[str], str]:
    child = subprocess.Popen([sys.executable, __file__, "--serve", mode],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    return child, child.stdout.readline().strip()


def scenario(name: str, *, agents: int, llm_agents: int, ticks: int, logs: Path,
             mode: str | None = None, **llm: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"provider": "none"}
    child = None
    if mode is not None:
        child, url = start_server(mode)
        settings = {"provider": "openai", "base_url": url, "model": "bench",
                    "api_key_env": "", "agents": llm_agents, "workers": 4,
                    "max_concurrent": 4, "request_timeout_s": 2.0, "min_gap_ticks": 5,
                    "think_interval_ticks": 50, "breaker_failures": 1000,
                    "tokens_per_hour": 0, **llm}
    config = Config().replace(world={"size": [64, 64], "starting_agents": agents, "seed": 7},
                              llm=settings, persistence={"enabled": False},
                              paths={"logs": str(logs / name)}, log={"echo": False})
    session = Session(config, World.create(config))
    durations = []
    began = time.perf_counter()
    try:
        for _ in range(ticks):
            t0 = time.perf_counter()
            session.loop.tick_once()
            durations.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.001)
        wall = time.perf_counter() - began
        out: dict[str, Any] = {
            "scenario": name,
            "tick p50 ms": round(percentile(durations, 0.5), 2),
            "tick p99 ms": round(percentile(durations, 0.99), 2),
            "tick max ms": round(max(durations), 2),
        }
        if session.llm is not None:
            stats = session.llm.stats()
            out.update({
                "decisions applied": stats["applied"],
                "decisions/s": round(stats["applied"] / wall, 1),
                "requests": stats["requests"],
                "errors": stats["errors"],
                "prompt tokens/decision (estimate)": round(sum(
                    m.last_prompt_tokens for m in session.llm.minds.values())
                    / max(1, len(session.llm.minds))),
                "LLM main-thread p99": stats["main thread p99"],
            })
        return out
    finally:
        session.close()
        if child is not None:
            child.communicate("", timeout=30)


def inflight(*, concurrent: int, delay_s: float, ticks: int, logs: Path) -> dict[str, Any]:
    """A fifth more LLM agents than ``concurrent`` asking against a server slow by
    ``delay_s``, with ``concurrent`` requests allowed in flight: what is held at once, and
    at what main-thread cost."""
    agents = concurrent + concurrent // 5
    child, url = start_server(f"slow:{delay_s}")
    settings = {"provider": "openai", "base_url": url, "model": "bench", "api_key_env": "",
                "agents": agents, "max_concurrent": concurrent,
                "request_timeout_s": delay_s * 4 + 10, "breaker_failures": 1000,
                "tokens_per_hour": 0, "cache_size": 0}
    config = Config().replace(world={"size": [128, 128], "starting_agents": agents, "seed": 7},
                              llm=settings, persistence={"enabled": False},
                              decisions={"llm": {"min_gap_ticks": 1, "think_interval_ticks": 10,
                                                 "decisions_per_agent_hour": 0}},
                              paths={"logs": str(logs / "inflight")}, log={"echo": False})
    session = Session(config, World.create(config))
    llm, transport = session.llm, session.llm_transport
    assert llm is not None and transport is not None
    durations: list[float] = []
    held = threads = 0
    main_ms = 0.0
    handed: list[float] = []  # the hand-over alone: answer() on the main thread
    answer = llm.answer

    def timed(job: Any, reply: Any) -> None:
        t0 = time.perf_counter()
        answer(job, reply)
        handed.append((time.perf_counter() - t0) * 1000)

    llm.answer = timed  # type: ignore[method-assign]
    began = time.perf_counter()
    try:
        for _ in range(ticks):
            t0 = time.perf_counter()
            session.loop.tick_once()
            durations.append((time.perf_counter() - t0) * 1000)
            main_ms += llm.pipeline.main_ms[-1]
            held = max(held, transport.in_flight)
            threads = max(threads, threading.active_count())
            time.sleep(0.001)
        wall = time.perf_counter() - began
        stats = llm.stats()
        sent = stats["requests"]
        return {"scenario": f"{agents} LLM agents, server answering in {delay_s:g} s, "
                            f"max_concurrent {concurrent}",
                "ticks": ticks, "wall s": round(wall, 1),
                "requests": sent, "decisions applied": stats["applied"],
                "errors": stats["errors"],
                "in flight at once (transport)": held,
                "threads in the process (most)": threads,
                "tick p50 ms": round(percentile(durations, 0.5), 2),
                "tick p99 ms": round(percentile(durations, 0.99), 2),
                "LLM main-thread ms per request": round(main_ms / max(1, sent), 3),
                "LLM main-thread ms per decision applied": round(
                    main_ms / max(1, stats["applied"]), 3),
                "hand-over (answer) ms per request, p50/p99": (
                    f"{percentile(handed, 0.5):.3f}/{percentile(handed, 0.99):.3f}"),
                "LLM main-thread ms per tick (mean)": round(main_ms / ticks, 2),
                "LLM main-thread p99 ms (last 1,000 ticks)": stats["main thread p99"]}
    finally:
        session.close()
        out, _ = child.communicate("", timeout=60)
        peak = out.strip().splitlines()
        if peak:
            print(f"the server answered at most {peak[-1]} requests at once", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--llm-agents", type=int, default=50)
    parser.add_argument("--ticks", type=int, default=2000)
    parser.add_argument("--inflight", type=int, default=0, metavar="AGENTS",
                        help="measure requests held in flight at once by AGENTS LLM agents")
    parser.add_argument("--delay-s", type=float, default=5.0,
                        help="the slow server's answer time for --inflight")
    parser.add_argument("--serve", metavar="MODE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    os.environ.pop("OPENROUTER_API_KEY", None)
    if args.inflight:
        with tempfile.TemporaryDirectory() as tmp:
            row = inflight(concurrent=args.inflight, delay_s=args.delay_s, ticks=args.ticks,
                           logs=Path(tmp))
        print(" | ".join(f"{k}: {v}" for k, v in row.items()))
        return
    common = {"agents": args.agents, "llm_agents": args.llm_agents, "ticks": args.ticks}
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        rows = [
            scenario("built-in brains only", logs=logs, **common),
            scenario("LLM agents, fast server", logs=logs, mode="ok", **common),
            scenario("LLM agents, 50 ms server", logs=logs, mode="slow", **common),
            scenario("LLM agents, hanging server", logs=logs, mode="hang",
                     request_timeout_s=0.5, **common),
            scenario("LLM agents, failing server (500)", logs=logs, mode="500", **common),
        ]
    for row in rows:
        print(" | ".join(f"{k}: {v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
