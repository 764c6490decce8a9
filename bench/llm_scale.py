"""Thousands of LLM agents against a batched model server (issue 32 item 7).

    python -m bench --only llm_scale [--quick] [--sizes 500,2000,5000]

    python -m bench.llm_scale --urgent-probe [--sizes 2000] [--replicas K]

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

``--urgent-probe`` asks whether the queue meets that target when urgent news is within what
the server answers (``_urgent_probe``): a world of N LLM agents (2,000 by default) against
the same server, whose model answers long plans (three wanders with an eat between them,
90 s) asking to be asked again after 30 s, so agents stay on their plans while their next
routine ask waits (routine work still far beyond what the server answers), and the built-in
brains, whose talk floods the urgent line in the run above, rarely act. Once most agents
are on their plans, a person speaks to a random living LLM agent (``speak``, addressed to
it: "spoken to" news) at a quarter of the server's capacity for ``PROBE_S`` seconds; each
probe's time from the speech to the applied plan that answers it, against the server's own
latency. ``--replicas K`` puts K such servers behind the agents (``llm.base_urls``): at
2,000 agents one server answers each agent about every 130 s, longer than its plan lasts,
so the agents fall back to their built-in brains, whose talk floods the urgent line again.

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
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.decisions.metrics import percentile
from agent_world.decisions.requests import URGENT, Job
from agent_world.llm.answerer import LLMAgents
from agent_world.types import TickReport
from bench.isolated import rss_bytes
from bench.scenario import scaled_config
from tests.batched_server import ServingProfile, estimate_tokens, long_plan

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


# The urgent probe (``--urgent-probe``).
PROBE_AGENTS = 2000
PROBE_PLAN_TICKS = 900  # the fake model's plan: three wanders of 300 ticks (90 s) ...
PROBE_PLAN_EAT = True  # ... with an eat between them, or the agents starve on their walk
PROBE_ASK_AGAIN_S = 30  # ... asking again well before it ends (routine work that queues)
PROBE_SHARE = 0.25  # probes a second, of the server's capacity for that answer
PROBE_S = 60.0  # seconds of probes
PROBE_DRAIN_S = 20.0  # then this long without, for the last probes' answers
PROBE_SETTLE_SHARE = 0.9  # probes start once this share of the agents is on its LLM plan
PROBE_SETTLE_MIN_S = 20.0
PROBE_SETTLE_MAX_S = 240.0  # ... or after this long, whatever the share
PROBE_SEED = 32
PROBE_TEXT = "Psst!"  # names no agent: only the one addressed hears it as spoken to


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
        "danger_gone_stale": llm.queue.stale_danger,
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
        "danger_p95_over_server_latency": _ratio(model["danger_answered_p95_ms"],
                                                 latency_ms),
        "danger_stale_share": _ratio(model["danger_gone_stale"],
                                     model["danger_gone_stale"] + model["danger_answered"]),
        "kb_per_llm_agent_over_builtin": round(
            (llm["rss_mb"] - builtin["rss_mb"]) * 1024 / agents, 1),
    }
    log(f"  tick p99 {builtin['tick_p99_ms']} -> {llm['tick_p99_ms']} ms "
        f"(x{out['tick_p99_ratio']}), busy p99 {builtin['busy_p99_ms']} -> "
        f"{llm['busy_p99_ms']} ms, {llm['rate_hz']} Hz; decisions {model['decisions_per_s']}/s "
        f"of {capacity:.1f}/s ({out['decisions_share_of_capacity']}); urgent p95 "
        f"{model['urgent_answered_p95_ms']} ms vs server {latency_ms:.0f} ms "
        f"({model['urgent_gone_stale']} went stale), of which danger (attacked, starving) "
        f"p95 {model['danger_answered_p95_ms']} ms ({model['danger_gone_stale']} went "
        "stale); "
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


# -- the urgent probe: a controlled stream of urgent news ------------------------------------


def run_probe_child(agents: int, seconds: float, urls: Sequence[str],
                    rate_per_s: float) -> dict[str, Any]:
    """One LLM world of ``agents`` paced at 10 Hz against ``urls[0]``: once
    ``PROBE_SETTLE_SHARE`` of its agents are on their LLM plans (or ``PROBE_SETTLE_MAX_S``
    passed), a person speaks to a random living LLM agent ``rate_per_s`` times a second for
    ``seconds``, then the world runs ``PROBE_DRAIN_S`` more. Each probe is answered by the
    first plan applied to its agent that was asked for at or after the speech with "spoken
    to" among its reasons (the ``plan`` input, as the world applies it: its ``reasons``,
    ``asked_tick`` and ``request``); the queue line that request was taken from (wrapping
    the queue's ``get``) says whether it was answered as urgent or went stale."""
    os.environ.pop("OPENROUTER_API_KEY", None)
    with tempfile.TemporaryDirectory(prefix="bench-llm-probe-") as tmp:
        section = {**_llm_section(agents, urls[:1]), "base_url": "", "base_urls": list(urls),
                   "max_concurrent": max_concurrent(SLOTS) * len(urls)}  # replicas
        config = _config(agents, Path(tmp), section)
        world = World.create(config)
        session = Session(config, world)
        llm = session.llm
        assert llm is not None
        pipeline, queue, metrics = llm.pipeline, llm.queue, llm.metrics
        loop = session.loop
        rate = config.world.tick_rate
        source = pipeline.source
        rng = random.Random(PROBE_SEED)
        line_of: dict[int, int] = {}  # request id -> the line it was taken from
        get = queue.get

        def taken(timeout: float | None = None) -> Job | None:
            job = get(timeout)
            if job is not None:
                line_of[job.rid] = queue.entered(job.agent)[0]
            return job

        setattr(queue, "get", taken)  # noqa: B010
        probes: list[dict[str, Any]] = []
        open_probes: dict[int, dict[str, Any]] = {}  # agent -> its probe not yet answered
        other_plans = [0]  # plans applied to a probed agent, asked after, not "spoken to"
        on_tick = pipeline.on_tick

        def watched(report: TickReport) -> None:
            on_tick(report)
            now = time.perf_counter()
            for inp in report.inputs:
                if inp.type != "plan" or inp.source != source:
                    continue
                probe = open_probes.get(int(inp.data.get("agent", -1)))
                if probe is None or int(inp.data.get("asked_tick", -1)) < probe["tick"]:
                    continue
                if "spoken to" not in inp.data.get("reasons", ()):
                    other_plans[0] += 1
                    continue
                del open_probes[probe["agent"]]
                rid = int(inp.data.get("request", 0))
                probe.update(applied_tick=report.tick, reaction_s=now - probe["at"],
                             asked_tick=int(inp.data["asked_tick"]),
                             line="urgent" if line_of.get(rid) == URGENT else "routine")

        setattr(pipeline, "on_tick", watched)  # noqa: B010  (the session calls it)
        phase = ["settle"]
        due = [0.0]
        depths: list[tuple[int, int]] = []
        on_plans: list[float] = []
        served = sorted(pipeline.minds)
        between = loop.between_ticks

        def on_plan_share() -> float:
            store = world.store
            mine = [e for e in pipeline.minds if world.alive(e)]
            return sum(1 for e in mine if store.get(e, c.Intent).plan_source == source) / max(
                1, len(mine))

        def probing() -> None:
            if between is not None:
                between()
            if phase[0] != "probe":
                return
            depths.append(queue.depths())
            if world.tick % round(rate) == 0:
                on_plans.append(on_plan_share())
            due[0] += rate_per_s / rate
            while due[0] >= 1:
                due[0] -= 1
                for _try in range(20):
                    eid = rng.choice(served)
                    if world.alive(eid) and eid in pipeline.minds and eid not in open_probes:
                        break
                else:
                    continue
                pos = world.store.get(eid, c.Position)
                world.inbox.submit("speak", {"name": "Prober", "text": PROBE_TEXT,
                                             "x": pos.x, "y": pos.y, "to": eid})
                mind = pipeline.minds[eid]
                probe = {"agent": eid, "tick": world.tick + 1, "at": time.perf_counter(),
                         "state": queue.state_of(eid) or mind.status}
                probes.append(probe)
                open_probes[eid] = probe

        loop.between_ticks = probing
        marks: dict[str, Any] = {}

        def mark(name: str) -> None:
            marks[name] = {"t": time.perf_counter(), "tick": world.tick,
                           "applied": metrics.applied, "stale": queue.stale,
                           "reasons": Counter(metrics.urgent_reasons),
                           "urgent_taken": metrics.attention()["urgent_requests"],
                           "routine_taken": metrics.attention()["routine_requests"]}

        async def run() -> None:
            began = time.perf_counter()
            while True:
                await loop.run(max_ticks=round(rate), paced=True)
                waited = time.perf_counter() - began
                if waited >= PROBE_SETTLE_MAX_S or (
                        waited >= PROBE_SETTLE_MIN_S
                        and on_plan_share() >= PROBE_SETTLE_SHARE):
                    break
            marks["settle_s"] = round(time.perf_counter() - began, 1)
            marks["settle_share"] = round(on_plan_share(), 3)
            mark("start")
            phase[0] = "probe"
            await loop.run(max_ticks=round(seconds * rate), paced=True)
            phase[0] = "drain"
            mark("end")
            await loop.run(max_ticks=round(PROBE_DRAIN_S * rate), paced=True)

        try:
            asyncio.run(run())
            stats = loop.stats()
            start, end = marks["start"], marks["end"]
            span = end["t"] - start["t"]
            reasons = end["reasons"] - start["reasons"]
            answered = [p for p in probes if "reaction_s" in p]
            urgent = [p for p in answered if p["line"] == "urgent"]
            reactions = [p["reaction_s"] for p in answered]
            by_state: dict[str, list[float]] = {}
            for p in answered:
                by_state.setdefault(p["state"], []).append(p["reaction_s"])
            out: dict[str, Any] = {
                "agents": agents, "ticks": stats.ticks, "overruns": stats.overruns,
                "settle_s": marks["settle_s"], "settle_on_plan_share": marks["settle_share"],
                "probe_s": round(span, 1), "probe_rate_per_s": round(len(probes) / span, 2),
                "probes": len(probes), "answered": len(answered),
                "answered_urgent": len(urgent), "answered_stale": len(answered) - len(urgent),
                "unanswered": len(probes) - len(answered),
                "other_plans_after_a_probe": other_plans[0],
                "reaction_p50_s": round(percentile(reactions, 0.5), 3),
                "reaction_p95_s": round(percentile(reactions, 0.95), 3),
                "reaction_max_s": round(max(reactions, default=0.0), 3),
                "urgent_reaction_p95_s": round(percentile(
                    [p["reaction_s"] for p in urgent], 0.95), 3),
                "speech_to_ask_p50_ticks": percentile(
                    [p["asked_tick"] - p["tick"] for p in answered], 0.5),
                "speech_to_ask_p95_ticks": percentile(
                    [p["asked_tick"] - p["tick"] for p in answered], 0.95),
                "reaction_by_state_at_speech": {
                    state: {"n": len(v), "p50_s": round(percentile(v, 0.5), 3),
                            "p95_s": round(percentile(v, 0.95), 3)}
                    for state, v in sorted(by_state.items())},
                "routine_queued": {"min": min((r for _u, r in depths), default=0),
                                   "p50": percentile([float(r) for _u, r in depths], 0.5),
                                   "max": max((r for _u, r in depths), default=0)},
                "urgent_queued": {"p50": percentile([float(u) for u, _r in depths], 0.5),
                                  "p95": percentile([float(u) for u, _r in depths], 0.95),
                                  "max": max((u for u, _r in depths), default=0)},
                "on_plan_share": {"min": round(min(on_plans, default=0.0), 3),
                                  "mean": round(sum(on_plans) / max(1, len(on_plans)), 3)},
                "decisions_per_s": round((end["applied"] - start["applied"]) / span, 2),
                "urgent_taken_per_s": round(
                    (end["urgent_taken"] - start["urgent_taken"]) / span, 2),
                "routine_taken_per_s": round(
                    (end["routine_taken"] - start["routine_taken"]) / span, 2),
                "urgent_asks_by_reason": dict(reasons),
                "urgent_asks_per_s": round(sum(reasons.values()) / span, 2),
                "urgent_gone_stale": end["stale"] - start["stale"],
                "model": _model_figures(llm, (start["t"], start["applied"]),
                                        (end["t"], end["applied"])),
            }
        finally:
            session.close()
            world.close()
    return out


def _urgent_probe(agents: int, replicas: int, log: Callable[[str], None]) -> dict[str, Any]:
    answer = long_plan(PROBE_PLAN_TICKS, PROBE_ASK_AGAIN_S, eat=PROBE_PLAN_EAT)
    profile = ServingProfile(slots=SLOTS, queue=QUEUE)
    capacity = replicas * profile.capacity_per_s(completion_tokens=estimate_tokens(
        json.dumps(answer, separators=(",", ":"))))
    rate = round(capacity * PROBE_SHARE, 2)
    servers = [_Server("fake-batched", SLOTS, plan_ticks=PROBE_PLAN_TICKS,
                       ask_again_s=PROBE_ASK_AGAIN_S, plan_eat=int(PROBE_PLAN_EAT))
               for _ in range(replicas)]
    try:
        log(f"llm_scale --urgent-probe: {agents} LLM agents, {replicas} {SLOTS}-slot "
            f"server{'s' if replicas > 1 else ''} answering "
            f"{PROBE_PLAN_TICKS}-tick plans (ask again in {PROBE_ASK_AGAIN_S} s); "
            f"{rate}/s probes for {PROBE_S:g} s once {PROBE_SETTLE_SHARE:.0%} of the agents "
            "are on their plans")
        root = Path(__file__).resolve().parent.parent
        done = subprocess.run(
            [sys.executable, "-m", "bench.llm_scale", "--child", "probe", str(agents),
             str(PROBE_S), str(rate), *(server.url for server in servers)], cwd=root,
            capture_output=True, text=True, check=False,
            timeout=PROBE_SETTLE_MAX_S + PROBE_S * 2 + PROBE_DRAIN_S * 2 + TIMEOUT_S
            + agents / 20)
        if done.returncode != 0:
            raise RuntimeError(f"the probe world of {agents} agents failed:\n"
                               f"{done.stderr[-3000:]}")
        world = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        each = [_server_figures(server.close()) for server in servers]
    # The replicas are alike and share the work: their latencies' mean, their capacity's sum.
    served = {**each[0],
              **{key: sum(e[key] or 0.0 for e in each) / len(each)
                 for key in ("latency_p50_s", "latency_p95_s")},
              "capacity_per_s": sum(e["capacity_per_s"] or 0.0 for e in each),
              "served": sum(e["served"] or 0 for e in each)}
    latency_p50 = served["latency_p50_s"] or 0.0
    out = {"agents": agents, "replicas": replicas, "each_server": each,
           "plan_ticks": PROBE_PLAN_TICKS,
           "ask_again_s": PROBE_ASK_AGAIN_S, "probes_per_s_asked": rate,
           "world": world, "server": served,
           "reaction_p95_over_server_p50": _ratio(world["reaction_p95_s"], latency_p50),
           "reaction_p95_over_server_p95": _ratio(world["reaction_p95_s"],
                                                  served["latency_p95_s"] or 0.0),
           "decisions_share_of_capacity": _ratio(world["decisions_per_s"],
                                                 served["capacity_per_s"] or 0.0)}
    log(f"  settled after {world['settle_s']} s ({world['settle_on_plan_share']:.0%} on "
        f"plans); {world['probes']} probes in {world['probe_s']} s: {world['answered']} "
        f"answered ({world['answered_urgent']} as urgent, {world['answered_stale']} gone "
        f"stale), {world['unanswered']} not; reaction p50 {world['reaction_p50_s']} s, p95 "
        f"{world['reaction_p95_s']} s vs server latency p50 {latency_p50:.3f} s, p95 "
        f"{served['latency_p95_s']:.3f} s: p95 x{out['reaction_p95_over_server_p50']} of "
        f"the server's p50 (target <= 3); routine queued p50 "
        f"{world['routine_queued']['p50']:g} (min {world['routine_queued']['min']}), urgent "
        f"asks {world['urgent_asks_per_s']}/s by reason {world['urgent_asks_by_reason']}; "
        f"decisions {world['decisions_per_s']}/s of {served['capacity_per_s']:.1f}/s "
        f"({out['decisions_share_of_capacity']})")
    return out


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
    parser.add_argument("--urgent-probe", action="store_true",
                        help="instead: the urgent probe, a controlled stream of urgent news "
                             "at a quarter of the server's capacity while routine work "
                             f"queues ({PROBE_AGENTS} agents unless --sizes)")
    parser.add_argument("--replicas", type=int, default=1, metavar="K",
                        help="with --urgent-probe: K replicas of the server (llm.base_urls)")
    args = parser.parse_args(argv)
    if args.child and args.child[0] == "probe":
        _kind, agents, seconds, rate, *urls = args.child
        print(json.dumps(run_probe_child(int(agents), float(seconds), urls, float(rate))),
              flush=True)
        return 0
    if args.child:
        kind, agents, seconds, *urls = args.child
        print(json.dumps(run_child(kind, int(agents), float(seconds), urls)), flush=True)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    if args.urgent_probe:
        if args.replicas < 1:
            parser.error(f"--replicas must be >= 1, got {args.replicas}")
        print(json.dumps({str(n): _urgent_probe(n, args.replicas, _progress)
                          for n in sizes or [PROBE_AGENTS]}, indent=2))
        return 0
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
