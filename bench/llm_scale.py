"""Thousands of LLM agents against a batched model server (issue 32 item 7).

    python -m bench --only llm_scale [--quick] [--sizes 500,2000,5000]

For each size, a world of N agents (the default map scaled to keep its density) runs paced at
10 Hz twice, each in a fresh process: once on built-in brains, once with every agent an LLM
agent talking to the fake batched model server of the test helpers
(``tests/batched_server.py``: a fixed number of slots, latency growing with prompt and
answer tokens, 429 past its queue), which runs in a process of its own as a real endpoint
would. Then one world with two model profiles on two such servers, one faster than the
other, each profile's agents on their own server.

What it reports, against issue 32's targets:

- tick p99 (``World.step`` and the tick's observers) and busy p99 (that plus the work done
  before the next tick, where the decision pipeline's main-thread share runs), LLM world
  over built-in world (target at 2,000: 10 Hz held, tick p99 within 1.10x); and the main
  thread's CPU time for the same (tick and work before the next), which other processes'
  load on the machine disturbs less than wall time;
- decisions applied a second, over the run after its first ``SETTLE_S`` seconds (a third
  of a shorter run), against
  what the server can serve (its ``capacity_per_s`` at the mean request size it served;
  target: at least 90% when the agents ask for more than that);
- urgent requests' time from entering the urgent line to their answer, p95, against the
  server's own latency (arrival to answer, as it measured it, p50 and p95; target: within
  3x while routine work is queued), and the share of urgent requests that went stale
  (more urgent news than the server answers: those wait their routine turn);
- resident memory after the run, (LLM world - built-in world) / N (target: at most 50 KB
  per agent);
- the main thread's time per request sent (observation, prompt, hand-over), and the
  pipeline's time per tick, in wall time and in the main thread's CPU time (the wall time
  also holds the waits for the interpreter lock that the transport's thread holds).

``llm.max_concurrent`` is the server's slots plus an eighth (at least 2): the pipeline hands
requests out after each tick, so a few wait at the server to take a slot that frees in
between, while the rest wait in the world's queue where urgency orders them.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.decisions.metrics import percentile
from agent_world.llm.answerer import LLMAgents
from agent_world.types import TickReport
from bench.isolated import rss_bytes
from bench.scenario import scaled_config

__all__ = ["measure_llm_scale"]

SIZES = (500, 2000, 5000)
QUICK_SIZES = (200,)
SECONDS = 30.0  # paced run of each world
QUICK_SECONDS = 10.0
SETTLE_S = 10.0  # decisions a second are counted after this much of the run
TWO_MODELS_AGENTS = 1000
SLOTS = 32  # the server's (tests/batched_server.py's default: a small local vLLM)
QUEUE = 64
FAST = {"per_output_token_s": 0.01}  # the two-model run's servers
SLOW = {"per_output_token_s": 0.04}
TWO_MODEL_SLOTS = 16
TIMEOUT_S = 60.0  # a child process's own deadline beyond its run


def max_concurrent(slots: int) -> int:
    """Requests in flight at once for a server of ``slots`` slots (see the module doc)."""
    return slots + max(2, slots // 8)


# -- the child: one world, one run -----------------------------------------------------------


def _config(agents: int, root: Path, llm: dict[str, Any] | None) -> Config:
    config = scaled_config(agents, root).replace(persistence={"enabled": False})
    if llm is not None:
        config = config.replace(llm=llm)
    return config


def _llm_section(agents: int, urls: Sequence[str]) -> dict[str, Any]:
    section: dict[str, Any] = {
        "provider": "openai", "base_url": urls[0], "model": "fake-batched", "api_key_env": "",
        "agents": agents, "max_concurrent": max_concurrent(SLOTS if len(urls) == 1
                                                           else TWO_MODEL_SLOTS),
        "request_timeout_s": 30.0, "tokens_per_hour": 0, "breaker_failures": 1000}
    if len(urls) == 2:
        section["models"] = {"slow": {"base_url": urls[1]}}
        # Half the personalities think with the slow model.
        section["model_for"] = {"personality": {"trader": "slow", "cautious": "slow"}}
    return section


def _model_figures(llm: LLMAgents, settled: tuple[float, int], ended: tuple[float, int]
                   ) -> dict[str, Any]:
    m = llm.metrics
    attention = m.attention()
    urgent, routine = llm.queue.depths()
    span = ended[0] - settled[0]
    return {
        "agents": len(llm.minds),
        "requests": m.requests, "applied": m.applied, "merged": m.coalesced,
        "urgent_gone_stale": llm.queue.stale,
        "urgent_asks_by_reason": dict(m.urgent_reasons),
        "dropped": m.dropped, "errors": dict(m.errors), "fallbacks": m.fallbacks,
        "decisions_per_s": round((ended[1] - settled[1]) / span, 2) if span > 0 else 0.0,
        "capacity_estimate_per_s": round(llm.capacity_per_s(), 2),
        "latency_p50_ms": m.figures()["p50_ms"], "latency_p95_ms": m.figures()["p95_ms"],
        "queued_at_end": {"urgent": urgent, "routine": routine},
        **attention,
    }


def run_child(kind: str, agents: int, seconds: float, urls: Sequence[str]) -> dict[str, Any]:
    """One world paced at 10 Hz for ``seconds`` (``kind``: builtin, or llm against ``urls``:
    one server, or two for two model profiles); its figures as plain data."""
    os.environ.pop("OPENROUTER_API_KEY", None)
    with tempfile.TemporaryDirectory(prefix="bench-llm-scale-") as tmp:
        config = _config(agents, Path(tmp), None if kind == "builtin"
                         else _llm_section(agents, urls))
        gc.collect()
        before = rss_bytes()
        started = time.perf_counter()
        world = World.create(config)
        created = time.perf_counter() - started
        session = Session(config, world)
        loop = session.loop
        ticks = round(seconds * config.world.tick_rate)
        total_s: list[float] = []
        between_s: list[float] = []
        cpu_s: list[float] = []  # the main thread's CPU time per tick (waits excluded)
        pipeline_s: list[float] = []
        pipeline_cpu_s: list[float] = []  # the pipelines' own CPU time after each tick
        between_cpu_s: list[float] = []  # all the work before the next tick, CPU time
        tick_once, between = loop.tick_once, loop.between_ticks
        models: list[tuple[str, LLMAgents]] = (
            ([("default", session.llm)] if session.llm is not None else [])
            + list(session.llm_models.items()))
        cpu_now = [0.0]

        def cpu_timed(on_tick: Callable[[TickReport], None]) -> Callable[[TickReport], None]:
            def timed(report: TickReport) -> None:
                c0 = time.thread_time()
                try:
                    on_tick(report)
                finally:
                    cpu_now[0] += time.thread_time() - c0
            return timed

        for _name, model in models:  # the session calls each one's on_tick after a tick
            setattr(model.pipeline, "on_tick", cpu_timed(model.pipeline.on_tick))  # noqa: B010

        def timed_between() -> None:
            t0, c0 = time.perf_counter(), time.thread_time()
            if between is not None:
                between()
            between_s.append(time.perf_counter() - t0)
            between_cpu_s.append(time.thread_time() - c0)
            pipeline_s.append(sum(m.pipeline.main_ms[-1] for _n, m in models
                                  if m.pipeline.main_ms) / 1000)
            pipeline_cpu_s.append(cpu_now[0])
            cpu_now[0] = 0.0

        def timed_tick() -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            report = tick_once()
            total_s.append(time.perf_counter() - t0)
            cpu_s.append(time.thread_time() - c0)
            return report

        loop.between_ticks = timed_between
        loop.tick_once = timed_tick  # type: ignore[method-assign]
        settled: dict[str, tuple[float, int]] = {}

        async def run() -> None:
            settle_ticks = round(min(SETTLE_S, seconds / 3) * config.world.tick_rate)
            await loop.run(max_ticks=min(settle_ticks, ticks), paced=True)
            now = time.perf_counter()
            settled.update({name: (now, m.metrics.applied) for name, m in models})
            await loop.run(max_ticks=max(0, ticks - settle_ticks), paced=True)

        began = time.perf_counter()
        try:
            asyncio.run(run())
            wall = time.perf_counter() - began
            ended = time.perf_counter()
            gc.collect()
            resident = rss_bytes()
            stats = loop.stats()
            ticks_only = [t - b for t, b in zip(total_s, between_s, strict=True)]
            ticks_cpu = [t - b for t, b in zip(cpu_s, between_cpu_s, strict=True)]
            out: dict[str, Any] = {
                "kind": kind, "agents": agents, "map": "x".join(map(str, config.world.size)),
                "create_s": round(created, 1), "ticks": stats.ticks,
                "rate_hz": round(stats.ticks / wall, 2), "overruns": stats.overruns,
                "skipped": stats.skipped,
                "tick_p50_ms": round(percentile(ticks_only, 0.5) * 1000, 2),
                "tick_p99_ms": round(percentile(ticks_only, 0.99) * 1000, 2),
                "busy_p50_ms": round(percentile(total_s, 0.5) * 1000, 2),
                "busy_p99_ms": round(percentile(total_s, 0.99) * 1000, 2),
                "busy_cpu_p50_ms": round(percentile(cpu_s, 0.5) * 1000, 2),
                "busy_cpu_p99_ms": round(percentile(cpu_s, 0.99) * 1000, 2),
                "tick_cpu_p50_ms": round(percentile(ticks_cpu, 0.5) * 1000, 2),
                "tick_cpu_p99_ms": round(percentile(ticks_cpu, 0.99) * 1000, 2),
                "between_cpu_ms_mean": round(sum(between_cpu_s)
                                             / max(1, len(between_cpu_s)) * 1000, 2),
                "pipeline_ms_mean": round(sum(pipeline_s) / max(1, len(pipeline_s)) * 1000, 2),
                "pipeline_p99_ms": round(percentile(pipeline_s, 0.99) * 1000, 2),
                "pipeline_cpu_ms_mean": round(sum(pipeline_cpu_s)
                                              / max(1, len(pipeline_cpu_s)) * 1000, 2),
                "pipeline_cpu_p99_ms": round(percentile(pipeline_cpu_s, 0.99) * 1000, 2),
                "rss_mb": round(resident / 2**20, 1),
                "rss_grown_mb": round((resident - before) / 2**20, 1),
                "models": {name: _model_figures(m, settled.get(name, (began, 0)),
                                                (ended, m.metrics.applied))
                           for name, m in models},
            }
        finally:
            session.close()
            world.close()
    return out


# -- the driver ------------------------------------------------------------------------------


class _Server:
    """``python -m tests.batched_server`` in a process of its own."""

    def __init__(self, model: str, slots: int, **profile: float) -> None:
        args = [sys.executable, "-m", "tests.batched_server", "--model", model,
                "--slots", str(slots), "--queue", str(QUEUE)]
        for key, value in profile.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        root = Path(__file__).resolve().parent.parent
        self.process = subprocess.Popen(args, cwd=root, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http"):
            self.process.kill()
            raise RuntimeError(f"the fake model server did not start (it said {self.url!r})")

    def close(self) -> dict[str, Any]:
        """Stop it; its figures (``BatchedStatistics``)."""
        out, _ = self.process.communicate("", timeout=60)
        lines = out.strip().splitlines()
        return json.loads(lines[-1]) if lines else {}


def _child(kind: str, agents: int, seconds: float, urls: Sequence[str]) -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "bench.llm_scale", "--child", kind, str(agents),
         str(seconds), *urls], cwd=root, capture_output=True, text=True, check=False,
        timeout=seconds * 3 + TIMEOUT_S + agents / 50)
    if done.returncode != 0:
        raise RuntimeError(f"the {kind} world of {agents} agents failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _server_figures(stats: dict[str, Any]) -> dict[str, Any]:
    return {key: (round(stats[key], 3) if isinstance(stats.get(key), float) else stats.get(key))
            for key in ("served", "rejected", "peak_decoding", "peak_queued",
                        "latency_p50_s", "latency_p95_s", "service_p50_s", "queued_p95_s",
                        "capacity_per_s")}


def _one_size(agents: int, seconds: float, log: Callable[[str], None]) -> dict[str, Any]:
    log(f"llm_scale: {agents} agents on built-in brains, {seconds:g} s at 10 Hz")
    builtin = _child("builtin", agents, seconds, [])
    server = _Server("fake-batched", SLOTS)
    try:
        log(f"llm_scale: {agents} LLM agents, a {SLOTS}-slot server, max_concurrent "
            f"{max_concurrent(SLOTS)}")
        llm = _child("llm", agents, seconds, [server.url])
    finally:
        served = _server_figures(server.close())
    model = llm["models"]["default"]
    capacity = served["capacity_per_s"] or 0.0
    latency_ms = (served["latency_p50_s"] or 0.0) * 1000
    out = {
        "agents": agents, "builtin": builtin, "llm": llm, "server": served,
        "tick_p99_ratio": _ratio(llm["tick_p99_ms"], builtin["tick_p99_ms"]),
        "busy_p99_ratio": _ratio(llm["busy_p99_ms"], builtin["busy_p99_ms"]),
        "busy_cpu_p99_ratio": _ratio(llm["busy_cpu_p99_ms"], builtin["busy_cpu_p99_ms"]),
        "decisions_share_of_capacity": _ratio(model["decisions_per_s"], capacity),
        "urgent_p95_over_server_latency": _ratio(model["urgent_answered_p95_ms"], latency_ms),
        "urgent_p95_over_server_p95": _ratio(model["urgent_answered_p95_ms"],
                                             (served["latency_p95_s"] or 0.0) * 1000),
        "urgent_stale_share": _ratio(model["urgent_gone_stale"],
                                     model["urgent_gone_stale"] + model["urgent_requests"]),
        "kb_per_llm_agent_over_builtin": round(
            (llm["rss_mb"] - builtin["rss_mb"]) * 1024 / agents, 1),
    }
    log(f"  tick p99 {builtin['tick_p99_ms']} -> {llm['tick_p99_ms']} ms "
        f"(x{out['tick_p99_ratio']}), busy p99 {builtin['busy_p99_ms']} -> "
        f"{llm['busy_p99_ms']} ms, {llm['rate_hz']} Hz; decisions {model['decisions_per_s']}/s "
        f"of {capacity:.1f}/s ({out['decisions_share_of_capacity']}); urgent p95 "
        f"{model['urgent_answered_p95_ms']} ms vs server {latency_ms:.0f} ms "
        f"({model['urgent_gone_stale']} went stale); "
        f"{out['kb_per_llm_agent_over_builtin']} KB/agent; main-thread CPU p99 "
        f"{builtin['busy_cpu_p99_ms']} -> {llm['busy_cpu_p99_ms']} ms "
        f"(x{out['busy_cpu_p99_ratio']}); pipeline {llm['pipeline_ms_mean']} ms/tick "
        f"({llm['pipeline_cpu_ms_mean']} ms CPU)")
    return out


def _two_models(agents: int, seconds: float, log: Callable[[str], None]) -> dict[str, Any]:
    fast = _Server("fake-fast", TWO_MODEL_SLOTS, **FAST)
    slow = _Server("fake-slow", TWO_MODEL_SLOTS, **SLOW)
    try:
        log(f"llm_scale: {agents} LLM agents on two models, two {TWO_MODEL_SLOTS}-slot "
            "servers (one four times slower to decode)")
        world = _child("llm", agents, seconds, [fast.url, slow.url])
    finally:
        servers = {"default": _server_figures(fast.close()),
                   "slow": _server_figures(slow.close())}
    shares = {name: _ratio(world["models"][name]["decisions_per_s"],
                           servers[name]["capacity_per_s"] or 0.0) for name in servers}
    log("  " + "; ".join(f"{name}: {world['models'][name]['decisions_per_s']}/s of "
                         f"{servers[name]['capacity_per_s']:.1f}/s ({shares[name]})"
                         for name in servers))
    return {"agents": agents, "world": world, "servers": servers, "shares": shares}


def _rounds(agents: int, seconds: float, rounds: int,
            log: Callable[[str], None]) -> dict[str, Any]:
    """The main thread's CPU time of a built-in and an LLM world of ``agents``, ``rounds``
    pairs interleaved (the order reversed every round) against one server, so that the load
    other processes put on the machine, which drifts over minutes, weighs on both alike;
    the medians of the per-round ratios."""
    server = _Server("fake-batched", SLOTS)
    pairs: list[dict[str, Any]] = []
    try:
        for n in range(rounds):
            order = ("builtin", "llm") if n % 2 == 0 else ("llm", "builtin")
            run = {kind: _child(kind, agents, seconds, [server.url] if kind == "llm" else [])
                   for kind in order}
            b, m = run["builtin"], run["llm"]
            pair = {"order": list(order), "load": os.getloadavg()[0],
                    **{f"{key}_ratio": _ratio(m[key], b[key])
                       for key in ("tick_cpu_p50_ms", "tick_cpu_p99_ms", "busy_cpu_p50_ms",
                                   "busy_cpu_p99_ms")},
                    "builtin": {k: b[k] for k in ROUND_FIGURES},
                    "llm": {k: m[k] for k in ROUND_FIGURES}}
            pairs.append(pair)
            log(f"  round {n + 1}/{rounds} ({' then '.join(order)}, load {pair['load']:.2f}):"
                f" tick CPU p99 {b['tick_cpu_p99_ms']} -> {m['tick_cpu_p99_ms']} ms "
                f"(x{pair['tick_cpu_p99_ms_ratio']}), busy CPU p99 {b['busy_cpu_p99_ms']} -> "
                f"{m['busy_cpu_p99_ms']} ms (x{pair['busy_cpu_p99_ms_ratio']}), "
                f"{b['rate_hz']} / {m['rate_hz']} Hz")
    finally:
        server.close()
    medians = {key: statistics.median(p[key] for p in pairs if p[key] is not None)
               for key in pairs[0] if key.endswith("_ratio")}
    log(f"  medians of {rounds} rounds: " + ", ".join(f"{k} x{v:.3f}"
                                                      for k, v in medians.items()))
    return {"agents": agents, "rounds": pairs, "median_ratios": medians}


ROUND_FIGURES = ("rate_hz", "tick_cpu_p50_ms", "tick_cpu_p99_ms", "busy_cpu_p50_ms",
                 "busy_cpu_p99_ms", "between_cpu_ms_mean", "pipeline_cpu_ms_mean",
                 "pipeline_cpu_p99_ms",
                 "tick_p99_ms", "busy_p99_ms")


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def measure_llm_scale(*, sizes: Sequence[int] | None = None, quick: bool = False,
                      log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every size (built-in world, then LLM world), then the two-model world."""
    seconds = QUICK_SECONDS if quick else SECONDS
    chosen = list(sizes or (QUICK_SIZES if quick else SIZES))
    return {"seconds_per_world": seconds, "slots": SLOTS, "queue": QUEUE,
            "max_concurrent": max_concurrent(SLOTS),
            "sizes": {str(n): _one_size(n, seconds, log) for n in chosen},
            "two_models": _two_models(min(chosen) if quick else TWO_MODELS_AGENTS, seconds,
                                      log)}


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llm_scale", description=__doc__)
    parser.add_argument("--child", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", help="agent counts, e.g. 500,2000")
    parser.add_argument("--rounds", type=int, default=0, metavar="K",
                        help="instead: K interleaved pairs of a built-in and an LLM world at "
                             "each size, the main thread's CPU time only (medians of ratios)")
    args = parser.parse_args(argv)
    if args.child:
        kind, agents, seconds, *urls = args.child
        print(json.dumps(run_child(kind, int(agents), float(seconds), urls)), flush=True)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    if args.rounds > 0:
        seconds = QUICK_SECONDS if args.quick else SECONDS
        print(json.dumps({str(n): _rounds(n, seconds, args.rounds, _progress)
                          for n in sizes or [2000]}, indent=2))
        return 0
    result = measure_llm_scale(sizes=sizes, quick=args.quick, log=_progress)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
