"""A training run's request, checked before anything runs: ``prepare`` checks everything a
run needs (the scenario, the starting policy, the generator and its LLM, the numbers) and
makes the ``Trainer``, or says in one line what is wrong. Shared by the command line
(``python main.py train``, ``agent_world.cli.train``) and the web API (``POST /api/train``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_world.app import known_secrets
from agent_world.config import Config
from agent_world.eval.scenario import Scenario, load_scenario, with_ticks
from agent_world.llm.gates import Gates
from agent_world.llm.providers import provider_factory
from agent_world.llm.redact import Redactor
from agent_world.llm.textmodel import ProviderTextModel
from agent_world.policies import PolicyError, available_policies, load_policy, read_policy
from agent_world.runs import check_budget
from agent_world.training.contract import contract_text
from agent_world.training.generators import LLMGenerator, PolicyGenerator, TemplateGenerator
from agent_world.training.trainer import Message, Trainer
from agent_world.types import MonotonicClock

__all__ = ["MAX_EPISODES", "MAX_ITERATIONS", "MAX_TICKS", "TrainRequest", "prepare"]

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
    model = ProviderTextModel.alone(config.llm, provider_factory(config.llm, redactor),
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
