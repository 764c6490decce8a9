"""``python main.py eval SCENARIO``: compare brains on a scenario over many seeds.

    python main.py eval survival --brains builtin,forager --seeds 1-20 --workers 2
    python main.py eval my_scenario.yaml --brains builtin,llm --seeds 1,2,3 --ticks 2000

Runs one episode per brain and seed in local worker processes (one save folder each,
replayable and viewable), then prints and writes (``--out``, default
``paths.runs/eval-SCENARIO-DATE``) each brain's mean score and 95% confidence interval with
the key metrics: results.json, results.csv, results.md, and a PNG per metric when matplotlib
is installed. Under ``paths.runs`` an evaluation is a run like a training run: listed by
``python main.py runs``, pruned by the same retention, and refused before it starts when it
would pass the runs' disk budget. Bad input (an unknown scenario, brain or metric, a bad
seed range) is one line and exit status 2, before any episode starts; a failed episode
makes it 1.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agent_world.config import Config, ConfigError, load_config
from agent_world.eval.raypool import RayError
from agent_world.eval.runner import (
    Evaluation,
    evaluate,
    key_metrics,
    summarise,
    write_results,
)
from agent_world.eval.scenario import Scenario, built_in_names, load_scenario, with_ticks
from agent_world.persistence import SaveError
from agent_world.runs import RunFolder, check_budget, prune_runs
from agent_world.userbrains.registry import brain_refusal, load_brains

__all__ = ["add_pool_arguments", "main", "parse_seeds", "start_run"]

MAX_SEEDS = 10_000


def parse_seeds(text: str) -> list[int]:
    """``1-20``, ``1,5,9`` or both (``1-3,10``); ValueError naming what is wrong."""
    seeds: list[int] = []
    for piece in text.split(","):
        part = piece.strip()
        low, dash, high = part.partition("-")
        try:
            first, last = (int(low), int(high)) if dash else (int(part), int(part))
        except ValueError:
            raise ValueError(f"--seeds {text!r}: {part!r} is not a seed or a range like "
                             "1-20") from None
        if first < 0 or last < first:
            raise ValueError(f"--seeds {text!r}: {part!r} is not a range of seeds >= 0 "
                             "(low-high)")
        seeds.extend(range(first, last + 1))
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"--seeds {text!r}: more than {MAX_SEEDS} seeds")
    return sorted(set(seeds))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py eval", description="Compare brains on a scenario over seeds.")
    parser.add_argument("scenario", help=f"a built-in scenario ({', '.join(built_in_names())}) "
                                         "or a YAML file")
    parser.add_argument("--brains", default="builtin",
                        help="comma-separated: builtin, llm, or registered brains' names")
    parser.add_argument("--seeds", default="1-5", help="e.g. 1-20 or 1,2,3 (default 1-5)")
    parser.add_argument("--ticks", type=int, help="episode length (default: the scenario's)")
    add_pool_arguments(parser, "episode", "episodes", "paths.runs/eval-NAME-DATE")
    return parser


def start_run(config: Config, out: Path, *, kind: str, scenario: str, units: str,
              episodes: int, ticks: int, what: str) -> RunFolder:
    """The run folder ``out`` of a command that runs ``episodes`` of ``ticks`` (eval's
    episodes, a fork's branches), once old runs are pruned and the disk budget allows it;
    ValueError (or SaveError) naming why not."""
    if (out / "saves").exists() and any((out / "saves").iterdir()):
        raise ValueError(f"{out} holds {units} already; give another --out")
    for line in prune_runs(config.paths):  # old runs go first: they count in the budget
        print(line, file=sys.stderr)
    check_budget(config.paths, out, episodes=episodes, ticks=ticks, what=what)
    return RunFolder.start(out, kind=kind, scenario=scenario, episodes=episodes, ticks=ticks)


def add_pool_arguments(parser: argparse.ArgumentParser, unit: str, units: str,
                       out: str) -> None:
    """What every command that runs its ``units`` (episodes, a fork's branches) through the
    pools takes: ``--workers``, ``--out`` (default ``out``), ``--config``, ``--brains-path``
    and ``--ray``."""
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)),
                        help=f"{units} at once, each in a process of its own")
    parser.add_argument("--out", type=Path, help=f"folder for the results and the {units}' "
                                                 f"save folders (default {out})")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="configuration: the LLM, registered brains (default: "
                             "config.yaml if present)")
    parser.add_argument("--brains-path", metavar="DIR", help="a folder to import brains from")
    parser.add_argument("--ray", metavar="auto|ADDRESS",
                        help=f"run each {unit} as a task on this Ray cluster (auto: the one "
                             "this machine belongs to); pip install 'agent-world[ray]'")


def _check(args: argparse.Namespace, scenario: Scenario
           ) -> tuple[list[str], list[int], Config]:
    config = load_config(args.config)
    brains = [b.strip() for b in args.brains.split(",") if b.strip()]
    if not brains:
        raise ValueError("--brains: name at least one brain (builtin, llm or a registered one)")
    registered = load_brains(config.brains, path=args.brains_path,
                             llm=config.llm.enabled, models=config.llm.models)
    where = dict.fromkeys(brains, "--brains")
    where.update(dict.fromkeys(scenario.other_brains(),
                               f"scenario {scenario.name}: a team's brain"))
    for brain, said in where.items():
        refusal = brain_refusal(brain, registered, llm=config.llm.enabled, models=config.llm.models)
        if refusal is not None:
            raise ValueError(f"{said}: {refusal}")
    if args.ticks is not None and not 1 <= args.ticks <= 10**7:
        raise ValueError(f"--ticks {args.ticks}: give 1 to 10,000,000 ticks")
    if args.workers < 1:
        raise ValueError(f"--workers {args.workers}: give 1 or more")
    return brains, parse_seeds(args.seeds), config


def _plots(result: Evaluation, out: Path) -> str:
    """A PNG per key metric, when matplotlib is installed."""
    try:
        import matplotlib  # type: ignore[import-not-found]  # noqa: PLC0415 - optional

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found]  # noqa: PLC0415
    except ImportError:
        return "no plots: matplotlib is not installed (pip install matplotlib)"
    summaries = summarise(result)
    written = 0
    for metric in ("score", *key_metrics(result.scenario)):
        pairs = [(s.brain, s.score if metric == "score" else s.metrics.get(metric))
                 for s in summaries]
        shown = [(b, v) for b, v in pairs if v is not None]
        if not shown:
            continue
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.bar([b for b, _ in shown], [v[0] for _, v in shown],
               yerr=[v[1] for _, v in shown], capsize=4)
        ax.set_title(f"{result.scenario.name}: {metric} (mean, 95% CI)")
        fig.tight_layout()
        fig.savefig(out / f"{metric}.png")
        plt.close(fig)
        written += 1
    return f"{written} plots"


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        scenario = with_ticks(load_scenario(args.scenario), args.ticks)
        brains, seeds, config = _check(args, scenario)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = args.out or Path(config.paths.runs) / (
        f"eval-{scenario.name}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    try:
        folder = start_run(config, out, kind="eval", scenario=scenario.name, units="episodes",
                           episodes=len(brains) * len(seeds), ticks=scenario.ticks,
                           what=f"{len(brains)} brains x {len(seeds)} seeds")
    except (ValueError, SaveError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    where = f"on the Ray cluster {args.ray}" if args.ray else f"{args.workers} at a time"
    print(f"{scenario.name}: {len(brains)} brains x {len(seeds)} seeds, {scenario.ticks} "
          f"ticks each, {where}; episodes in {out / 'saves'}", file=sys.stderr)
    try:
        result = evaluate(scenario, brains, seeds, out, workers=args.workers, base=config,
                          brains_path=args.brains_path, ray_address=args.ray,
                          log=lambda text: print(text, file=sys.stderr))
        lines = write_results(result, out)
    except RayError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        folder.finish()
        for line in prune_runs(config.paths, spare=out):
            print(line, file=sys.stderr)
    print("\n".join(lines))
    print(f"\n{len(result.episodes)} episodes in {result.seconds:g} s; results in "
          f"{out}/results.{{json,csv,md}}; {_plots(result, out)}", file=sys.stderr)
    return 1 if result.failed else 0
