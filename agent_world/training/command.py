"""``python main.py train SCENARIO``: improve a policy on a scenario.

    python main.py train foraging --iterations 8 --episodes 4 --out runs/forager
    python main.py train market --generator llm --from my_trader.py --config config.yaml

``prepare`` checks everything a run needs (the scenario, the starting policy, the generator
and its LLM, the numbers) before anything runs, and is shared with the web API
(``POST /api/train``): one line naming what is wrong, no traceback.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_world.app import known_secrets
from agent_world.config import Config, ConfigError, load_config
from agent_world.eval.scenario import Scenario, built_in_names, load_scenario, with_ticks
from agent_world.llm.gates import Gates
from agent_world.llm.providers import provider_factory
from agent_world.llm.redact import Redactor
from agent_world.llm.textmodel import ProviderTextModel
from agent_world.policies import PolicyError, available_policies, load_policy, read_policy
from agent_world.runs import check_budget, prune_runs
from agent_world.training.contract import contract_text
from agent_world.training.generators import LLMGenerator, PolicyGenerator, TemplateGenerator
from agent_world.training.trainer import THIN, Message, Trainer, TrainError, lineage_table
from agent_world.types import MonotonicClock

__all__ = ["TrainRequest", "build_parser", "main", "prepare"]

DEFAULT_START = {"market": "trader", "survival": "survivor"}
"""The example a run starts from when none is given (forager for the others)."""
MAX_ITERATIONS = 1000
MAX_EPISODES = 1000
MAX_TICKS = 10**7  # the longest episode the command line takes
_VERSIONED = re.compile(r"_v\d+\Z")


@dataclass(frozen=True, slots=True)
class TrainRequest:
    scenario: str
    iterations: int = 5
    episodes: int = 3
    generator: str = "templates"
    start: str | None = None  # a policy's name or a file
    code: str | None = None  # a policy's source (the web API's "code")
    ticks: int | None = None
    workers: int = 1
    margin: float = 0.02
    seed: int = 0


def _start_source(request: TrainRequest, scenario: Scenario, config: Config) -> str:
    if request.code is not None:
        try:
            return load_policy(request.code, "code").source
        except PolicyError as exc:
            raise ValueError(f"the code given is not a usable policy: {exc}") from None
    start = request.start or DEFAULT_START.get(scenario.name, "forager")
    if start.endswith(".py"):
        try:
            return read_policy(start).source
        except PolicyError as exc:
            raise ValueError(f"--from {start}: {exc}") from None
    known = available_policies(config.brains.policies)
    if start not in known:
        raise ValueError(f"--from {start!r}: no such policy (known: {', '.join(known)}); "
                         "give a policy's name or a .py file")
    return known[start].source


def _generator(request: TrainRequest, config: Config) -> PolicyGenerator:
    if request.generator == "templates":
        return TemplateGenerator(seed=request.seed)
    if request.generator != "llm":
        raise ValueError(f"--generator {request.generator!r}: expected llm or templates")
    if not config.llm.enabled:
        raise ValueError("--generator llm needs an LLM: set llm.provider in the configuration "
                         "(--config FILE), or use --generator templates")
    redactor = Redactor(known_secrets(config))
    # A run's calls pass the same gates as a world's: llm.tokens_per_hour, cost_per_hour
    # and the breaker hold for the trainer too.
    gates = Gates.from_config(config.llm, clock=MonotonicClock(), redact=redactor)
    model = ProviderTextModel(config.llm, provider_factory(config.llm, redactor),
                              gates=gates, max_tokens=2500)
    return LLMGenerator(model, contract_text())


def prepare(request: TrainRequest, config: Config, out: Path, *,
            on_message: Callable[[Message], None] = lambda _m: None,
            stop: threading.Event | None = None, scenario: Scenario | None = None,
            max_ticks: int = MAX_TICKS) -> Trainer:
    """A trainer ready to run, or ValueError/ConfigError saying in one line what is wrong
    (RunRefused, a ValueError, for a run that would pass the runs' disk budget).
    ``scenario``: one read already (the web reads only the scenarios it may); ``max_ticks``:
    the longest episode allowed (the web's is ``web.train_max_ticks``)."""
    for key, value, high in (("--iterations", request.iterations, MAX_ITERATIONS),
                             ("--episodes", request.episodes, MAX_EPISODES)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise ValueError(f"{key} {value!r}: give a whole number from 1 to {high}")
    if request.ticks is not None and not 1 <= request.ticks <= max_ticks:
        raise ValueError(f"--ticks {request.ticks}: give 1 to {max_ticks:,} ticks")
    scenario = with_ticks(scenario or load_scenario(request.scenario), request.ticks)
    if scenario.ticks > max_ticks:
        raise ValueError(f"scenario {scenario.name} runs {scenario.ticks:,} ticks an episode, "
                         f"more than the {max_ticks:,} allowed here; ask for fewer ticks")
    if not 1 <= request.workers <= 256:
        raise ValueError(f"--workers {request.workers}: give 1 to 256")
    if not 0 <= request.margin <= 10:
        raise ValueError(f"--margin {request.margin}: give a share from 0 to 10 (0.02: 2%)")
    if (out / "lineage.json").exists():
        raise ValueError(f"{out} holds a training run already; give another --out")
    versions = request.iterations + 1
    check_budget(config.paths, out, episodes=versions * request.episodes, ticks=scenario.ticks,
                 what=f"{versions:,} versions x {request.episodes:,} episodes")
    source = _start_source(request, scenario, config)
    stem = _VERSIONED.sub("", load_policy(source, "start").name)[:24]
    generator = _generator(request, config)
    return Trainer(scenario, start=source, stem=stem, iterations=request.iterations,
                   episodes=request.episodes, generator=generator, out=out, base=config,
                   contract=contract_text(), workers=request.workers, margin=request.margin,
                   on_message=on_message, stop=stop)


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

