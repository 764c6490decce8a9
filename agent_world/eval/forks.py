"""Counterfactual forks: a saved world forked at a tick into branches per brain, the chosen
agents playing that brain in each, every branch run for the same ticks and measured
(``python main.py fork-eval``, docs/evaluation.md "Counterfactual forks").

A branch is a job like an episode (``jobs.Job``), run by the same pools (``runner.run_jobs``:
local processes or Ray). It forks the source into a save folder of its own, applies the
plan's first inputs (``forkplan.branch_inputs``: its seed, the brains) and ticks with a wait
for every decision (``stage.tick_settled``), so the same command gives the same results.
Its figures are counted from the fork tick (``AtFork``) by ``branch_figures``, which
``eval.verify`` calls on the replayed folder too: the chosen agents' metrics over the
branch, and the world's deaths, trades, agents alive and wealth.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from agent_world.app import Session
from agent_world.config import Config, config_from_dict, llm_profile_of
from agent_world.core.metrics import COUNTED, percentile_of
from agent_world.core.world import World
from agent_world.eval.forkplan import (
    FORK_SOURCE,
    OUTSIDE_BRAINS,
    ForkPlan,
    branch_inputs,
    branch_name,
    branch_seed,
)
from agent_world.eval.runner import Ran, run_jobs
from agent_world.eval.stage import staged, tick_settled, wealth
from agent_world.persistence import SaveFolder, fork_world
from agent_world.sandbox import Sandbox
from agent_world.userbrains.registry import load_brains

__all__ = ["WORLD_FIGURES", "AtFork", "Branch", "BranchJob", "ForkEvaluation",
           "branch_figures", "fork_evaluate", "run_branch"]

WORLD_FIGURES = ("deaths", "trades", "alive", "wealth")


@dataclass(frozen=True, slots=True)
class AtFork:
    """The world at the fork tick, which a branch's figures are counted from: the chosen
    agents' metrics, latency counts and wealth, the prices wealth is valued at (the fork's,
    all through: prices follow offers agents can move), and the world's counters."""

    tick: int
    agents: dict[str, int]
    prices: dict[str, float]
    rows: dict[int, dict[str, float]]
    latency: dict[int, list[int]]
    wealth: dict[int, float]
    counters: dict[str, int]

    @classmethod
    def of(cls, world: World, agents: Mapping[str, int]) -> AtFork:
        prices = dict(world.market.prices)
        return cls(tick=world.tick, agents=dict(agents), prices=prices,
                   rows={eid: world.metrics.of(eid) for eid in agents.values()},
                   latency={eid: list(world.metrics.latency.get(eid, []))
                            for eid in agents.values()},
                   wealth={eid: wealth(world, eid, prices) for eid in agents.values()},
                   counters=dict(world.counters))


def _agent_figures(world: World, start: AtFork, eid: int) -> dict[str, float]:
    """One chosen agent's metrics over the branch: its counts since the fork, the latency
    of the decisions taken since, the ticks it lived and the wealth it gained."""
    now, before = world.metrics.of(eid), start.rows[eid]
    row = {m: now[m] - before[m] for m in COUNTED}
    hist = world.metrics.latency.get(eid, [])
    old = start.latency[eid]
    since = [n - (old[i] if i < len(old) else 0) for i, n in enumerate(hist)]
    row["latency_p50"] = percentile_of(since, 0.5)
    row["latency_p95"] = percentile_of(since, 0.95)
    kept = world.metrics.rows.get(eid, {})
    row["ticks_alive"] = float(kept.get("died_at", world.tick) - start.tick)
    row["wealth_gained"] = wealth(world, eid, start.prices) - start.wealth[eid]
    return row


def branch_figures(world: World, start: AtFork) -> dict[str, Any]:
    """A branch's figures now (the fields of ``Branch`` its world gives): the ticks run,
    each chosen agent's metrics and their mean, how many of them live, and the world's."""
    agents = {name: _agent_figures(world, start, eid) for name, eid in start.agents.items()}
    rows = list(agents.values())
    means = {m: sum(row[m] for row in rows) / len(rows) for m in rows[0]}
    living = [eid for eid, _row in world.agents()]
    return {"ticks": world.tick - start.tick, "metrics": means, "agents": agents,
            "alive": sum(1 for eid in start.agents.values() if world.alive(eid)),
            "world": {"deaths": float(world.counters.get("deaths", 0)
                                      - start.counters.get("deaths", 0)),
                      "trades": float(world.counters.get("trades", 0)
                                      - start.counters.get("trades", 0)),
                      "alive": float(len(living)),
                      "wealth": sum(wealth(world, eid, start.prices) for eid in living)}}


@dataclass(frozen=True, slots=True)
class Branch:
    """A branch's result: the chosen agents' mean metrics over it (and each one's), the
    world's figures, and what ``python main.py verify`` checks them against."""

    brain: str
    branch: int  # 1, 2, ...
    seed: int
    ticks: int
    metrics: dict[str, float]
    agents: dict[str, dict[str, float]]
    alive: int  # chosen agents alive at the end
    world: dict[str, float]
    folder: str
    seconds: float
    origin_hash: str = ""  # its state at the fork tick (the same in every branch)
    state_hash: str = ""
    log_digest: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _branch_config(base: Config, out: Path, name: str, brain: str) -> Config:
    config = staged(base, out, name)
    if llm_profile_of(brain) is None:  # no network in a branch, unless an LLM is tested
        config = config.replace(llm={"provider": "none"})
    return config


def run_branch(plan: ForkPlan, brain: str, index: int, out: Path, base: Config,
               brains_path: str | None = None) -> Branch:
    """Fork ``plan``'s source into ``out/saves/<branch_name>`` and run it ``plan.ticks``
    ticks with the chosen agents on ``brain``."""
    began = time.perf_counter()
    name = branch_name(plan, brain, index)
    seed = branch_seed(plan.seed, plan.tick, brain, index)
    config = _branch_config(base, out, name, brain)
    # The world runs its abilities in a sandbox, as it did; a branch has no angel (a
    # request for a new ability goes unanswered alike in every branch).
    with Sandbox(config, wait=False) as sandbox:
        opened = fork_world(SaveFolder.open(Path(plan.source)), plan.tick, name, config,
                            setup=sandbox.install)
        world = opened.world
        try:
            origin = world.state_hash()
            if origin != plan.state_hash:
                raise RuntimeError(f"{plan.source} at tick {plan.tick} is not the state the "
                                   f"fork was planned from ({origin} != {plan.state_hash}): "
                                   "was the source changed meanwhile?")
            start = AtFork.of(world, plan.agents)
            needed = {b for b in {brain, *(row.agent.brain for _eid, row in world.agents())}
                      if llm_profile_of(b) is None} - {"builtin"} - OUTSIDE_BRAINS
            classes = load_brains(config.brains, path=brains_path,
                                  llm=config.llm.enabled,
                                  models=config.llm.models) if needed else {}
            session = Session(config, world, folder=opened.folder, brains=classes)
        except BaseException:
            opened.close()
            raise
        try:
            for kind, data in branch_inputs(plan, brain, seed):
                world.inbox.submit(kind, data, source=FORK_SOURCE)
            episode = {"scenario": f"fork of {plan.world} at tick {plan.tick}",
                       "objective": "", "seed": seed, "ticks": plan.ticks, "team": "",
                       "subject": True, "branch": index}
            if session.brains is not None:  # the chosen agents' brains hear of the branch
                session.brains.begin_episode({name: {**episode, "name": name}
                                              for name in plan.agents})
            for _ in range(plan.ticks):
                tick_settled(session)
            figures = branch_figures(world, start)
            state_hash = world.state_hash()
            if session.brains is not None:
                session.brains.end_episode({
                    eid: {**episode, "name": name, "agent": eid, "ended": "ticks",
                          "tick": world.tick, "score": None,
                          "figures": figures["agents"][name]}
                    for name, eid in plan.agents.items() if world.alive(eid)})
        finally:
            session.close()  # the log complete on disk
    folder = SaveFolder(out / "saves" / name)
    return Branch(brain=brain, branch=index, seed=seed, folder=str(folder.root),
                  seconds=round(time.perf_counter() - began, 2), origin_hash=origin,
                  state_hash=state_hash, log_digest=folder.log_digest(), **figures)


@dataclass(frozen=True, slots=True)
class BranchJob:
    """A branch as a job for ``runner.run_jobs`` (``jobs.Job``)."""

    plan: ForkPlan
    brain: str
    branch: int
    out: str
    base: dict[str, Any]
    brains_path: str | None = None

    def label(self) -> str:
        return f"branch {self.brain} #{self.branch}"

    def identity(self) -> dict[str, Any]:
        return {"brain": self.brain, "branch": self.branch}

    def retried(self) -> BranchJob:
        return dataclasses.replace(self, out=str(Path(self.out) / "retry"))

    def run(self) -> dict[str, Any]:
        return run_branch(self.plan, self.brain, self.branch, Path(self.out),
                          config_from_dict(self.base, source="fork-eval"),
                          self.brains_path).to_dict()


@dataclass
class ForkEvaluation:
    plan: ForkPlan
    brains: list[str]
    branches: int
    results: list[Branch] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    cancelled: bool = False


def fork_evaluate(plan: ForkPlan, brains: Sequence[str], branches: int, out: Path, *,
                  workers: int, base: Config, brains_path: str | None = None,
                  ray_address: str | None = None, progress: TextIO,
                  log: Callable[[str], None] = lambda _t: None) -> ForkEvaluation:
    """Every branch (``branches`` per brain) of ``plan``, through ``runner.run_jobs``."""
    began = time.perf_counter()
    out = out.resolve()  # the same path for every process and every node
    jobs = [BranchJob(plan, brain, index, str(out), base.to_dict(),
                      str(Path(brains_path).resolve()) if brains_path else None)
            for brain in brains for index in range(1, branches + 1)]
    ran: Ran = run_jobs(jobs, workers=workers, ray_address=ray_address, progress=progress,
                        noun="branches", log=log)
    result = ForkEvaluation(plan=plan, brains=list(brains), branches=branches,
                            results=[Branch(**r) for r in ran.results], failed=ran.failed,
                            cancelled=ran.cancelled)
    result.results.sort(key=lambda b: (brains.index(b.brain), b.branch))
    result.seconds = round(time.perf_counter() - began, 1)
    return result
