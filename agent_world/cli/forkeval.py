"""``python main.py fork-eval saves/NAME``: what if some agents had played another brain?

    python main.py fork-eval saves/alpha --at 3000 --agents Ada,Bo \
        --brains builtin,policy:forager --branches 5 --ticks 2000

Forks the saved world at ``--at`` into ``--branches`` branches per brain (each with a seed
of its own, all from the same state), gives the chosen agents that brain, runs each branch
``--ticks`` ticks (in local worker processes, or on Ray with ``--ray``, as ``eval`` does)
and reports, per brain, the chosen agents' metrics and the world's deaths, trades, agents
alive and wealth, each as the mean and 95% interval over the branches: results.json,
results.csv and results.md in ``--out`` (default ``paths.runs/fork-NAME-tTICK-DATE``),
each branch a save folder the viewer opens. The source world is only read.

Bad input (a tick outside the log, an agent not alive at it, an unknown brain, a source that
does not verify up to the fork) is one line and exit status 2, before any branch starts; a
failed branch makes it 1.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Sequence
from pathlib import Path

from agent_world.argtypes import tick
from agent_world.cli.eval import add_pool_arguments, start_run
from agent_world.cli.replay import resolve_world_path
from agent_world.config import Config, ConfigError, load_config
from agent_world.eval.forkplan import ForkError, ForkPlan, plan_fork
from agent_world.eval.forkresults import write_fork_results
from agent_world.eval.forks import fork_evaluate
from agent_world.eval.raypool import RayError
from agent_world.persistence import SaveError
from agent_world.runs import prune_runs
from agent_world.userbrains.registry import brain_refusal, load_brains

__all__ = ["build_parser", "main"]

MAX_BRANCHES = 1000
MAX_TICKS = 10**7


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py fork-eval",
        description="Fork a saved world at a tick into branches per brain, the chosen agents "
                    "on that brain, and compare their metrics and the world's outcomes.")
    parser.add_argument("world", type=Path, help="a save folder (saves/NAME) or a world's name")
    parser.add_argument("--at", type=tick, required=True, metavar="TICK",
                        help="the tick to fork at (within the world's log)")
    parser.add_argument("--agents", required=True, metavar="A[,B]",
                        help="comma-separated names (or ids) of agents alive at that tick")
    parser.add_argument("--brains", required=True,
                        help="comma-separated: builtin, llm, or registered brains' names")
    parser.add_argument("--branches", type=int, default=5,
                        help="branches per brain, each with a seed of its own (default 5)")
    parser.add_argument("--ticks", type=int, required=True, help="how long each branch runs")
    add_pool_arguments(parser, "branch", "branches", "paths.runs/fork-NAME-tTICK-DATE")
    return parser


def _check(args: argparse.Namespace) -> tuple[list[str], ForkPlan, Config]:
    """Every argument, then the source up to the fork tick: ValueError (ForkError,
    ConfigError) naming the value and the fix."""
    config = load_config(args.config)
    brains = list(dict.fromkeys(b.strip() for b in args.brains.split(",") if b.strip()))
    if not brains:
        raise ValueError("--brains: name at least one brain (builtin, llm or a registered one)")
    registered = load_brains(config.brains, path=args.brains_path,
                             llm=config.llm.enabled, models=config.llm.models)
    for brain in brains:
        refusal = brain_refusal(brain, registered, llm=config.llm.enabled, models=config.llm.models)
        if refusal is not None:
            raise ValueError(f"--brains: {refusal}")
    agents = list(dict.fromkeys(a.strip() for a in args.agents.split(",") if a.strip()))
    if not agents:
        raise ValueError("--agents: name at least one agent alive at the fork tick")
    if not 1 <= args.ticks <= MAX_TICKS:
        raise ValueError(f"--ticks {args.ticks}: give 1 to {MAX_TICKS:,} ticks")
    if not 1 <= args.branches <= MAX_BRANCHES:
        raise ValueError(f"--branches {args.branches}: give 1 to {MAX_BRANCHES}")
    if args.workers < 1:
        raise ValueError(f"--workers {args.workers}: give 1 or more")
    try:
        source = resolve_world_path(args.world, config)
    except SaveError as exc:
        raise ValueError(str(exc)) from None
    try:
        plan = plan_fork(source, args.at, agents, args.ticks, config, registered)
    except SaveError as exc:  # a snapshot that cannot be read, rules this release lacks
        raise ValueError(f"{source}: {exc}") from None
    return brains, plan, config


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        brains, plan, config = _check(args)
    except (ConfigError, ForkError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = args.out or Path(config.paths.runs) / (
        f"fork-{plan.world}-t{plan.tick}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    try:
        folder = start_run(config, out, kind="fork-eval", scenario=f"{plan.world}@{plan.tick}",
                           units="branches", episodes=len(brains) * args.branches,
                           ticks=plan.ticks,
                           what=f"{len(brains)} brains x {args.branches} branches")
    except (ValueError, SaveError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    where = f"on the Ray cluster {args.ray}" if args.ray else f"{args.workers} at a time"
    print(f"{plan.world} forked at tick {plan.tick} (state {plan.state_hash}): "
          f"{', '.join(plan.agents)} on {len(brains)} brains x {args.branches} branches, "
          f"{plan.ticks} ticks each, {where}; branches in {out / 'saves'}", file=sys.stderr)
    try:
        result = fork_evaluate(plan, brains, args.branches, out, workers=args.workers,
                               base=config, brains_path=args.brains_path, ray_address=args.ray,
                               progress=sys.stderr, log=lambda text: print(text, file=sys.stderr))
        lines = write_fork_results(result, out)
    except RayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        folder.finish()
        for line in prune_runs(config.paths, spare=out):
            print(line, file=sys.stderr)
    print("\n".join(lines))
    shown = result.results[0].folder if result.results else str(out / "saves" / "BRANCH")
    print(f"\n{len(result.results)} branches in {result.seconds:g} s; results in "
          f"{out}/results.{{json,csv,md}}; each branch is a save folder in {out / 'saves'}: "
          f"python main.py replay {shown} --serve shows one in the viewer", file=sys.stderr)
    return 1 if result.failed else 0
