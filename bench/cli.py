"""The command line of the benchmark suite.

    python -m bench [--quick] [--only SECTIONS] [--sizes N,N] [--json PATH] [--markdown [PATH]]
    python -m bench mesa [--quick] [--sizes N,N] [--steps S] [--repeats R]
    python -m bench profile N [--ticks K] [--warmup W] [--top T] [--tree]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.brains_bench import measure_brains
from bench.capacity import find_capacity, short_paced_p99
from bench.churn import measure_churn
from bench.compare import compare, mesa_available
from bench.engine import (
    Budget,
    build_world,
    measure_flat,
    measure_paced,
    measure_recorded,
    measure_snapshots,
)
from bench.gc_bench import measure_gc
from bench.isolated import in_fresh_process
from bench.liveliness import measure_liveliness
from bench.llm_cost import measure_llm_cost
from bench.llm_load import measure_llm_load
from bench.llm_scale import measure_llm_scale
from bench.machine import describe_machine, load_average
from bench.profile import profile_world
from bench.reask_bench import measure_reask
from bench.report import build_tables, render_markdown, render_text
from bench.rl_bench import measure_rl
from bench.scenario import saved_session
from bench.seek_bench import measure_seek
from bench.soak import measure_soak
from bench.survey_bench import measure_survey
from bench.web_bench import measure_web

__all__ = ["main"]

SECTIONS = ("flat", "paced", "snapshot", "eventlog", "replay", "memory", "capacity",
            "snapshot10k", "llm", "llm_cost", "brains", "mesa", "web", "seek", "rl",
            "liveliness", "gc", "churn", "soak", "reask", "llm_scale", "survey")
LIVELINESS_SEEDS = (913, 4271, 2026)  # 913 and 4271: the seeds issue 12 measured
LIVELINESS_TICKS, LIVELINESS_WINDOW = 1_000_000, 50_000
QUICK_LIVELINESS = (913,), 20_000, 10_000
QUICK_LLM_COST_TICKS = 1200  # two minutes of world time; the full run takes ten
GC_SIZES = (1000, 10000)
CHURN_CONNECTIONS = 50_000
SOAK_MINUTES = 10.0
NOT_QUICK = {"skipped": "not run in --quick (run it with --only)"}
FULL_SIZES = (100, 1000, 5000, 10000)
QUICK_SIZES = (100, 1000)
FULL = Budget()
QUICK = Budget(warmup_ticks=10, flat_s=1.0, paced_s=4.0, paced_min_ticks=20,
               paced_max_ticks=40, eventlog_s=1.5, snapshots=3)
TARGET_ENTITIES = 10_000


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 100,1000, got {text!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be whole numbers >= 1, got {text!r}")
    return sizes


def _minutes(text: str) -> float:
    try:
        minutes = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected minutes like 10 or 2.5, got {text!r}"
                                         ) from None
    if not minutes >= 1:  # the slopes need samples after the settling share
        raise argparse.ArgumentTypeError(f"--soak-minutes must be >= 1, got {text!r}")
    return minutes


def _sections(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown section {unknown[0] if unknown else text!r}; expected some of "
            f"{', '.join(SECTIONS)} (comma-separated)")
    return chosen


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Measure Agent World: ticks/s, paced tick times, the largest population "
                    "at 10 Hz, snapshots, event log, replay, memory, 100 agents on a user's "
                    "Python brain, the shared workload "
                    "beside Mesa, the web viewer under load (20 WebSocket clients), seeking "
                    "a served replay at 1,000 agents, the RL env's steps per second, and "
                    "liveliness over 1,000,000 ticks on three seeds "
                    "(--only liveliness). 'python -m bench mesa' runs only the Mesa "
                    "comparison; 'python -m bench profile N' profiles an N-agent world.")
    parser.add_argument("--quick", action="store_true",
                        help="every section small and short (100 and 1,000 agents, short "
                             "runs; no capacity search): the CI smoke (bench/RESULTS.md says "
                             "how long it takes)")
    parser.add_argument("--only", type=_sections, metavar="SECTIONS",
                        help=f"comma-separated sections to run: {', '.join(SECTIONS)}")
    parser.add_argument("--sizes", type=_sizes, metavar="N,N",
                        help="agent counts (default 100,1000,5000,10000; quick: 100,1000)")
    parser.add_argument("--mesa-sizes", type=_sizes, metavar="N,N",
                        help="agent counts of the Mesa comparison (default 1000,10000; "
                             "quick: 1000)")
    parser.add_argument("--steps", type=int, help="steps per Mesa-comparison run "
                                                   "(default 50; quick: 10)")
    parser.add_argument("--repeats", type=int, help="runs per implementation and size in the "
                                                     "Mesa comparison (default 3; quick: 1)")
    parser.add_argument("--seek-ticks", type=int, metavar="TICKS",
                        help="ticks the seek section records before seeking (default 3,000; "
                             "quick: 400; 36000 is an hour of world time)")
    parser.add_argument("--soak-minutes", type=_minutes, metavar="MIN",
                        help=f"wall minutes of the soak section (default {SOAK_MINUTES:g})")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures here")
    parser.add_argument("--markdown", nargs="?", const="-", metavar="PATH",
                        help="also print a section ready to paste into bench/RESULTS.md (or "
                             "write it to PATH)")
    return parser


def build_profile_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench profile",
        description="Profile an N-agent world (pyinstrument, or cProfile without it) and "
                    "print where the tick time goes, by system.")
    parser.add_argument("agents", type=int, help="number of agents (the map scales with it)")
    parser.add_argument("--ticks", type=int, default=50, help="ticks profiled (default 50)")
    parser.add_argument("--warmup", type=int, default=20, help="ticks run first (default 20)")
    parser.add_argument("--top", type=int, default=15, help="functions listed (default 15)")
    parser.add_argument("--tree", action="store_true", help="also print pyinstrument's tree")
    return parser


# -- the engine sections -----------------------------------------------------------------------


def _run_size(agents: int, sections: set[str], budget: Budget, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    world, config, info = build_world(agents, root, budget.warmup_ticks)
    out["world"] = info
    _log(f"{agents} agents: {info['map']} map, {info['entities']} entities, created in "
         f"{info['create_s']} s")
    try:
        if "flat" in sections:
            out["flat"] = flat = measure_flat(world, budget.flat_s)
            _log(f"  flat out: {flat['ticks_per_s']} ticks/s ({flat['p50_ms']} ms p50)")
            estimate = flat["mean_ms"] / 1000
        else:
            estimate = measure_flat(world, 0.5, min_ticks=3, max_ticks=100)["mean_ms"] / 1000
        if "paced" in sections:
            paced = measure_paced(world, config, "paced", seconds=budget.paced_s,
                                  min_ticks=budget.paced_min_ticks,
                                  max_ticks=budget.paced_max_ticks, tick_estimate_s=estimate,
                                  snapshots=budget.snapshots if "snapshot" in sections else 0)
            if "snapshot" in paced:
                out["snapshot"] = paced.pop("snapshot")
            out["paced"] = paced
            _log(f"  paced: {paced['ticks']} ticks at {paced['rate_hz']} Hz, tick p99 "
                 f"{paced['main_thread']['p99_ms']} ms, busy p99 {paced['busy']['p99_ms']} ms, "
                 f"persistence p99 "
                 f"{paced['persistence']['p99_ms']} ms")
        elif "snapshot" in sections:
            session = saved_session(world, config, "snapshot")
            out["snapshot"] = measure_snapshots(session, world, budget.snapshots)
            session.close()
        if "snapshot" in out:
            s = out["snapshot"]
            _log(f"  snapshot: main thread {s['main_ms']['p50']} ms, on disk after "
                 f"{s['total']['p50_ms']} ms, {s['bytes'] / 1e6:.2f} MB")
        if sections & {"eventlog", "replay"}:
            recorded = measure_recorded(world, config, "recorded", seconds=budget.eventlog_s,
                                        tick_estimate_s=estimate,
                                        replays="replay" in sections)
            if "eventlog" in sections:
                out["eventlog"] = recorded["eventlog"]
                ev = recorded["eventlog"]
                _log(f"  event log: {ev['events_per_s']:.0f} events/s, {ev['mb_per_s']} MB/s")
            if "replay" in recorded:
                out["replay"] = recorded["replay"]
                rv = recorded["replay"]["verified"]
                _log(f"  replay: {rv['ticks_per_s']} ticks/s = {rv['x_real_time']}x real time")
                spans = recorded["replay"]["verified_in_spans"]
                if "processes" in spans:
                    _log(f"  replay in spans: {spans['x_real_time']}x real time "
                         f"({spans['processes']} processes)")
    finally:
        world.close()
        del world
        gc.collect()
    if "memory" in sections:
        out["memory"] = mem = in_fresh_process("memory", agents)
        _log(f"  memory: {mem['kb_per_agent']} KB per agent")
    return out


def _snapshot_10k(results: dict[str, Any], budget: Budget) -> dict[str, Any]:
    """A world sized to hold about 10,000 entities (all kinds), snapshotted as in a run, in
    a process of its own."""
    per_agent = None
    for n, r in results.get("sizes", {}).items():
        if "world" in r and int(n) >= 1000:
            per_agent = r["world"]["entities"] / int(n)
            break
    agents = round(TARGET_ENTITIES / per_agent) if per_agent else 1200
    snap = in_fresh_process("snapshot", agents, budget.snapshots)
    _log(f"snapshot of {snap['entities']} entities ({agents} agents): main thread "
         f"{snap['main_ms']['p50']} ms p50, {snap['main_ms']['max']} ms max")
    return snap


def run(args: argparse.Namespace) -> dict[str, Any]:
    sections = set(args.only or SECTIONS)
    quick = args.quick
    budget = QUICK if quick else FULL
    sizes = args.sizes or list(QUICK_SIZES if quick else FULL_SIZES)
    results: dict[str, Any] = {"machine": describe_machine(), "quick": quick,
                               "sections": sorted(sections), "budget": asdict(budget),
                               "sizes": {}}
    # Each section's wall-clock time, so a stated run time (README: --quick) can be traced
    # to what takes it.
    timed: dict[str, float] = {}
    results["section_seconds"] = timed

    @contextmanager
    def section(name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            timed[name] = round(time.perf_counter() - began, 1)
            _log(f"({name}: {timed[name]:g} s)")

    started = time.perf_counter()
    engine_sections = sections & {"flat", "paced", "snapshot", "eventlog", "replay", "memory"}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        root = Path(tmp)
        if engine_sections:
            with section("engine"):
                for i, n in enumerate(sizes):
                    results["sizes"][str(n)] = _run_size(n, engine_sections, budget,
                                                         root / str(i))
        if "capacity" in sections:
            with section("capacity"):
                results["capacity"] = _capacity(results, sizes, quick)
        if "snapshot10k" in sections:
            with section("snapshot10k"):
                results["snapshot_10k_entities"] = _snapshot_10k(results, budget)
        if "seek" in sections:
            with section("seek"):
                results["seek"] = measure_seek(quick=quick, log=_log, root=root / "seek",
                                               ticks=args.seek_ticks)
    if "llm" in sections:
        with section("llm"):
            results["llm_load"] = ({"skipped": "not run in --quick (run without it)"} if quick
                                   else measure_llm_load(log=_log))
    if "llm_scale" in sections:
        with section("llm_scale"):
            # Worlds of their own, in processes of their own (--sizes: the agent counts);
            # in the smoke only when asked for by name (--only llm_scale --quick: 200 agents).
            results["llm_scale"] = (
                NOT_QUICK if quick and args.only is None
                else measure_llm_scale(sizes=args.sizes, quick=quick, log=_log))
    if "llm_cost" in sections:
        with section("llm_cost"):
            # The smoke needs this tree's run, not the baseline commit's beside it (a
            # second run and a git worktree): that doubled the section's time for nothing.
            results["llm_cost"] = (measure_llm_cost(ticks=QUICK_LLM_COST_TICKS, baseline=None,
                                                    log=_log)
                                   if quick else measure_llm_cost(log=_log))
    if "brains" in sections:
        with section("brains"):
            results["brains_load"] = measure_brains(seconds=5.0 if quick else 60.0, log=_log)
    if "mesa" in sections:
        with section("mesa"):
            results["mesa"] = _mesa(args, quick)
    if "reask" in sections:
        with section("reask"):
            results["reask"] = measure_reask(log=_log)
    if "rl" in sections:
        with section("rl"):
            results["rl"] = measure_rl(quick=quick, log=_log)
    if "web" in sections:
        with section("web"):
            results["web"] = measure_web(quick=quick, log=_log)
    # Minutes each, and measured in worlds of their own: not part of the smoke.
    if "gc" in sections:
        with section("gc"):
            results["gc"] = (NOT_QUICK if quick else
                             measure_gc(args.sizes or list(GC_SIZES),
                                        ticks=budget.paced_max_ticks, log=_log))
    if "churn" in sections:
        with section("churn"):
            results["churn"] = (NOT_QUICK if quick else
                                measure_churn(connections=CHURN_CONNECTIONS, log=_log))
    if "soak" in sections:
        with section("soak"):
            results["soak"] = (NOT_QUICK if quick else
                               measure_soak(minutes=args.soak_minutes or SOAK_MINUTES,
                                            log=_log))
    if "survey" in sections:
        with section("survey"):
            results["survey"] = NOT_QUICK if quick else measure_survey(log=_log)
    if "liveliness" in sections:
        seeds, ticks, window = (QUICK_LIVELINESS if quick else
                                (LIVELINESS_SEEDS, LIVELINESS_TICKS, LIVELINESS_WINDOW))
        with section("liveliness"):
            results["liveliness"] = measure_liveliness(seeds, ticks, window, log=_log)
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["machine"]["load_average_end"] = load_average()
    return results


def _capacity(results: dict[str, Any], sizes: list[int], quick: bool) -> dict[str, Any]:
    if quick:
        return {"skipped": "not searched in --quick (run without it)"}
    measured = [(int(n), r["paced"]["busy"]["p99_ms"], r["paced"]["holds_10hz"])
                for n, r in results["sizes"].items() if "paced" in r]
    if not measured:
        for n in sizes:
            probe = short_paced_p99(n, seconds=15.0, warmup_ticks=10)
            measured.append((n, probe["p99_ms"], probe["passes"]))
    return find_capacity(measured, seconds=15.0, warmup_ticks=10, log=_log)


def _mesa(args: argparse.Namespace, quick: bool) -> dict[str, Any]:
    if not mesa_available():
        _log("mesa comparison skipped: mesa is not installed (pip install -e '.[bench]')")
        return {"skipped": "mesa is not installed (pip install -e '.[bench]')"}
    sizes = args.mesa_sizes or ([1000] if quick else [1000, 10000])
    steps = args.steps or (10 if quick else 50)
    repeats = args.repeats or (1 if quick else 3)
    return compare(sizes, steps=steps, repeats=repeats, log=_log)


# -- entry point -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["profile"]:
        pargs = build_profile_parser().parse_args(argv[1:])
        profile_world(pargs.agents, pargs.ticks, warmup_ticks=pargs.warmup, top=pargs.top,
                      tree=pargs.tree)
        return 0
    if argv[:1] == ["mesa"]:
        argv = [*argv[1:], "--only", "mesa"]
    args = build_parser().parse_args(argv)
    results = run(args)
    tables = build_tables(results)
    m = results["machine"]
    print(f"Agent World benchmark, {m['date']}, commit {m['commit']}: {m['cpu']}, "
          f"{m['cores']} cores, Python {m['python']}; load average "
          f"{m['load_average_start']} at start, {m['load_average_end']} at end; "
          f"took {results['seconds']:.0f} s")
    print()
    print(render_text(tables))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(f"figures written to {args.json}")
    if args.markdown is not None:
        text = render_markdown(results, tables)
        if args.markdown == "-":
            print(text)
        else:
            Path(args.markdown).write_text(text, encoding="utf-8")
            print(f"RESULTS.md section written to {args.markdown}")
    return 0
