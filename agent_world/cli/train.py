"""``python main.py train SCENARIO``: improve a policy on a scenario.

    python main.py train foraging --iterations 8 --episodes 4 --out runs/forager
    python main.py train market --generator llm --from my_trader.py --config config.yaml

The request is checked by ``agent_world.training.request.prepare`` before anything runs.
"""

from __future__ import annotations

import argparse
import datetime
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from agent_world.config import ConfigError, load_config
from agent_world.eval.scenario import built_in_names
from agent_world.policies import PolicyError
from agent_world.runs import prune_runs
from agent_world.training.request import TrainRequest, prepare
from agent_world.training.trainer import THIN, Message, TrainError, lineage_table

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py train",
        description="Improve a policy on a scenario: generate, check, evaluate, keep the best.")
    parser.add_argument("scenario", help=f"a built-in scenario ({', '.join(built_in_names())}) "
                                         "or a YAML file")
    parser.add_argument("--iterations", type=int, default=5, help="new versions to try")
    parser.add_argument("--episodes", type=int, default=3,
                        help="episodes (seeds 1..M) each version is evaluated over; more "
                             "narrow the intervals a version must be better by")
    parser.add_argument("--generator", default="templates", choices=("templates", "llm"),
                        help="templates: mutate the policy's constants (offline); llm: ask "
                             "the configured LLM")
    parser.add_argument("--from", dest="start", metavar="NAME|FILE",
                        help="the policy to start from (default: an example that suits the "
                             "scenario)")
    parser.add_argument("--out", type=Path, help="folder for every version, its bundle and "
                                                 "episodes (default paths.runs/SCENARIO-DATE)")
    parser.add_argument("--ticks", type=int, help="episode length (default: the scenario's)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)),
                        help="episodes at once, each in a process of its own")
    parser.add_argument("--margin", type=float, default=0.02,
                        help="share of the best score that a new version's gain must clear "
                             "with 95%% confidence, paired seed by seed (default 0.02; at "
                             "least 0.01 points)")
    parser.add_argument("--seed", type=int, default=0,
                        help="the template generator's random seed")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="configuration: the LLM, brains.policies (default: config.yaml "
                             "if present)")
    return parser


def _printer(message: Message) -> None:
    kind = message["type"]
    if kind == "step" and message.get("stage") == "generate":
        print(f"iteration {message['iteration']}: asking the {message['generator']} "
              f"generator (best: {message['best']})", file=sys.stderr)
    elif kind == "critique":
        score = message.get("score")
        said = "" if score is None else f" score {score:,.2f}"
        print(f"  {message['version']}: {message['status']}{said}: {message['reason']}",
              file=sys.stderr)


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    if hasattr(signal, "SIGUSR1"):  # ``kill -USR1 PID``: every thread's stack, to stderr
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    stop = threading.Event()
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out or Path(config.paths.runs) / (
        f"{Path(args.scenario).stem}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    request = TrainRequest(scenario=args.scenario, iterations=args.iterations,
                           episodes=args.episodes, generator=args.generator, start=args.start,
                           ticks=args.ticks, workers=args.workers, margin=args.margin,
                           seed=args.seed)
    for line in prune_runs(config.paths):  # old runs go first: they count in the budget
        print(line, file=sys.stderr)
    try:
        trainer = prepare(request, config, out, on_message=_printer, stop=stop)
    except (ConfigError, ValueError, PolicyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"training on {trainer.scenario.name}: {args.iterations} iterations x "
          f"{args.episodes} episodes, generator {args.generator}; versions in {out}",
          file=sys.stderr)
    if args.episodes < 2:
        print("note: one episode gives no interval, so no version can be shown better with "
              "confidence; give --episodes 3 or more", file=sys.stderr)
    try:
        best = trainer.run()
    except TrainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        stop.set()
        print("interrupted: the versions so far are in " + str(out), file=sys.stderr)
        return 130
    finally:
        for line in prune_runs(config.paths, spare=out):
            print(line, file=sys.stderr)
    if best is None:
        print(f"stopped before the starting policy was evaluated; see {out}", file=sys.stderr)
        return 1
    print("\n".join(lineage_table(trainer.versions, best)))
    if trainer.halted:
        print(f"\nstopped early: {trainer.halted}")
    thin = sum(THIN in v.reason for v in trainer.versions)
    if thin:
        print(f"\n{thin} version{'s' if thin != 1 else ''} scored higher than the best but "
              f"not with confidence (the evidence is too thin): more --episodes narrow the "
              f"intervals")
    first = trainer.versions[0]
    print(f"\nbest: {best.name} (score {best.score:,.2f}; the start scored "
          f"{first.score:,.2f}); source in {out / 'best.py'}, lineage in "
          f"{out / 'lineage.md'}")
    return 0

