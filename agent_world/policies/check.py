"""Checking a policy source before agents use it: ``python main.py policy check FILE``.

The source must pass the gate and compile under the policy contract and have good metadata
(``load_policy``); then ``decide(obs, memory)`` is dry-run through the real sandbox on real
observations: the configured world (at most ``SAMPLE_AGENTS`` agents) lives
``SAMPLE_TICKS`` ticks, and ``AGENTS`` of its agents (the hungriest, the most hurt, the one
with the most around it) are observed twice, ``ROUND_GAP`` ticks apart, the memory of the
first call handed to the second, as a running world would.

Verdicts: ``accepted``; ``rejected`` (refused before running: gate, RestrictedPython,
metadata, name), ``failed`` (a dry run faulted: a limit, an exception, an invalid decision or
memory, a timeout; or a dry run took more than a fifth of the time a world lets a decision
run, ``SLOW_SHARE``, so that it would time out on a busy machine). The report holds one
line per problem and, for every dry run, the decision (or fault) and the steps it took of
the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agent_world.config import Config
from agent_world.contract.observation import Observation, observe
from agent_world.core.world import World
from agent_world.policies.policy import Policy, PolicyError, load_policy
from agent_world.policies.runner import (
    PolicyOutcome,
    PolicyRunner,
    decision_timeout_s,
    policy_seed,
)
from agent_world.sandbox.check import RunnerOwner

__all__ = ["AGENTS", "DryRun", "PolicyChecker", "PolicyReport", "Sample", "sample_observations"]

SAMPLE_TICKS = 300  # how long the sample world lives before it is observed
SAMPLE_AGENTS = 60  # at most this many agents in it (a huge configured world is scaled)
AGENTS = 3  # agents observed
ROUND_GAP = 25  # ticks between an agent's two observations
SLOW_SHARE = 5  # a dry run may take a fifth of a world's time for a decision, in CPU time


@dataclass(frozen=True, slots=True)
class Sample:
    """One agent's observations, oldest first (its memory is carried from one to the next)."""

    agent: int
    name: str
    observations: tuple[Observation, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DryRun:
    """One call of ``decide``: on whose observation, at which tick, and what came of it."""

    number: int
    agent: int
    name: str
    tick: int
    outcome: PolicyOutcome

    @property
    def who(self) -> str:
        return f"{self.name}#{self.agent} at t={self.tick}"

    def line(self) -> str:
        """``dry run 2 (Ada#4 at t=325): eat() in 212 of 20000 steps, memory 31 bytes``."""
        o = self.outcome
        if not o.ok:
            return f"dry run {self.number} ({self.who}): {o.kind}: {o.reason}"
        said = f" “{o.decision['reasoning']}”" if o.decision.get("reasoning") else ""
        memory = "memory unchanged" if o.memory is None else f"memory {o.memory_bytes} bytes"
        return (f"dry run {self.number} ({self.who}): {o.line()}{said} in {o.steps} of "
                f"{o.budget} steps, {memory}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyReport:
    """The verdict on one source: ``accepted``, ``rejected`` or ``failed``, one line per
    problem, and the dry runs with their step counts."""

    verdict: str
    problems: tuple[str, ...] = ()
    category: str = ""  # why not: gate, restricted, metadata, name, dry-run, slow
    policy: Policy | None = None
    runs: tuple[DryRun, ...] = ()
    step_budget: int = 0
    memory_limit: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted" and self.policy is not None

    @property
    def max_steps(self) -> int:
        """The most steps one dry run took."""
        return max((r.outcome.steps for r in self.runs), default=0)

    @property
    def mean_steps(self) -> float:
        return sum(r.outcome.steps for r in self.runs) / len(self.runs) if self.runs else 0.0

    def lines(self) -> list[str]:
        """The verdict: ``accepted``, or one ``rejected: ...``/``failed: ...`` per problem."""
        if self.accepted:
            return ["accepted"]
        return [f"{self.verdict}: {problem}" for problem in self.problems]

    def details(self) -> list[str]:
        """What it is and how its dry runs went (the command line's stderr)."""
        out = []
        if self.policy is not None:
            meta = self.policy.meta
            out.append(f"{meta.name} v{meta.version} (parent {meta.parent or 'none'}): "
                       f"{meta.description}")
            if meta.constants:
                out.append("constants: " + ", ".join(f"{k} = {v!r}"
                                                     for k, v in meta.constants.items()))
        out.extend(run.line() for run in self.runs)
        if self.runs:
            share = 100 * self.max_steps / self.step_budget if self.step_budget else 0
            out.append(f"steps: at most {self.max_steps} of {self.step_budget} per decision "
                       f"({share:.1f}%), {self.mean_steps:.0f} on average over "
                       f"{len(self.runs)} dry runs")
        out.extend(self.notes)
        return out


def _picks(world: World, count: int) -> list[int]:
    """Up to ``count`` agents that see different things: the hungriest, the most hurt, the
    one with the most around it, then by id."""
    views = [(eid, observe(world, eid)) for eid, _row in world.agents() if world.alive(eid)]
    orders: list[Callable[[tuple[int, Observation]], Any]] = [
        lambda v: (-v[1].me.hunger, v[0]),
        lambda v: (v[1].me.health / max(1e-9, v[1].me.max_health), v[0]),
        lambda v: (-(5 * len(v[1].offers) + len(v[1].agents) + len(v[1].items)), v[0]),
        lambda v: v[0],
    ]
    chosen: list[int] = []
    for order in orders:
        fill = order is orders[-1]  # the last order fills up; the others give one each
        for eid, _obs in sorted(views, key=order):
            if eid not in chosen:
                chosen.append(eid)
                if not fill:
                    break
    return chosen[:count]


def sample_observations(config: Config, *, agents: int = AGENTS, rounds: int = 2
                        ) -> list[Sample]:
    """Observations of ``agents`` agents of the configured world (scaled to at most
    ``SAMPLE_AGENTS``) after ``SAMPLE_TICKS`` ticks, ``rounds`` each, ``ROUND_GAP`` ticks
    apart: what ``policy check`` dry-runs on."""
    count = min(config.world.starting_agents, SAMPLE_AGENTS) or 1
    sample = config.replace(world={"starting_agents": count,
                                   "max_agents": max(count, config.world.max_agents)},
                            persistence={"enabled": False})
    world = World.create(sample)
    try:
        for _ in range(SAMPLE_TICKS):
            world.step()
        chosen = _picks(world, agents)
        seen: dict[int, list[Observation]] = {eid: [] for eid in chosen}
        for round_ in range(rounds):
            if round_:
                for _ in range(ROUND_GAP):
                    world.step()
            for eid in chosen:
                if world.alive(eid):
                    seen[eid].append(observe(world, eid))
        return [Sample(eid, world.name_of(eid), tuple(obs)) for eid, obs in seen.items()
                if obs]
    finally:
        world.close()


class PolicyChecker(RunnerOwner):
    """Gate, compile and dry-run policy sources. Owns a ``PolicyRunner`` (sandbox worker
    processes) unless given one; ``close`` it (or use ``with``)."""

    def __init__(self, config: Config, runner: PolicyRunner | None = None) -> None:
        self.config = config
        brains = config.brains
        self._own_runner = runner is None
        # Dry runs wait as a replay would: a busy machine must not fail a source its step
        # budget accepts.
        self.runner: PolicyRunner = runner if runner is not None else PolicyRunner(
            config.sandbox, steps=brains.policy_steps, memory_bytes=brains.policy_memory_bytes,
            timeout_s=config.decisions.of("brains").deadline_ms / 1000
            * config.sandbox.replay_slack)
        self._samples: list[Sample] | None = None

    def samples(self) -> list[Sample]:
        """The observations dry runs use (made once, from the configuration)."""
        if self._samples is None:
            self._samples = sample_observations(self.config)
        return self._samples

    def check(self, source: str, *, origin: str = "text", taken: Collection[str] = (),
              samples: Sequence[Sample] | None = None) -> PolicyReport:
        """The verdict on ``source``. ``taken``: names already used (a name among them is
        refused); ``samples``: the observations to dry-run on (default: ``samples()``)."""
        base = PolicyReport(verdict="rejected", step_budget=self.runner.steps,
                            memory_limit=self.runner.memory_bytes)
        try:
            policy = load_policy(source, origin)
        except PolicyError as exc:
            return replace(base, problems=exc.problems, category=exc.category)
        base = replace(base, policy=policy)
        if policy.name in taken:
            return replace(base, category="name",
                           problems=(f"a policy named {policy.name!r} exists already",))
        runs = self.dry_runs(policy, self.samples() if samples is None else samples)
        if not runs:
            return replace(base, verdict="failed", category="dry-run",
                           problems=("no agent lived in the sample world to try it on",))
        problems = _problems(runs)
        if problems:
            return replace(base, verdict="failed", problems=problems, category="dry-run",
                           runs=tuple(runs))
        slow = self._too_slow(runs)
        if slow:
            return replace(base, verdict="failed", problems=(slow,), category="slow",
                           runs=tuple(runs))
        return replace(base, verdict="accepted", runs=tuple(runs))

    def _too_slow(self, runs: Sequence[DryRun]) -> str:
        """Why the slowest dry run would time out in a world ("" if none would)."""
        slowest = max(runs, key=lambda run: run.outcome.cpu_ms)
        allowed_ms = decision_timeout_s(self.config.decisions.of("brains").deadline_ms) * 1000
        limit_ms = allowed_ms / SLOW_SHARE
        if slowest.outcome.cpu_ms <= limit_ms:
            return ""
        return (f"too slow: dry run {slowest.number} ({slowest.who}) took "
                f"{slowest.outcome.cpu_ms:.0f} ms of CPU; a world stops a decision after "
                f"{allowed_ms:.0f} ms (80% of decisions.brains.deadline_ms) and a policy must "
                f"take under a fifth of that ({limit_ms:.0f} ms) so that a busy machine does not "
                "stop it: "
                "do less work per decision (or raise decisions.brains.deadline_ms)")

    def dry_runs(self, policy: Policy, samples: Sequence[Sample]) -> list[DryRun]:
        """``decide`` on every sample's observations, round by round, each agent's memory
        carried from one of its calls to the next (a faulted call leaves it as it was)."""
        runs: list[DryRun] = []
        memories: dict[int, dict[str, Any]] = {s.agent: {} for s in samples}
        rounds = max((len(s.observations) for s in samples), default=0)
        for round_ in range(rounds):
            for sample in samples:
                if round_ >= len(sample.observations):
                    continue
                obs = sample.observations[round_]
                outcome = self.runner.decide(policy, obs.to_dict(), memories[sample.agent],
                                             agent=sample.agent,
                                             seed=policy_seed(sample.agent, obs.tick))
                if outcome.ok and outcome.memory is not None:
                    memories[sample.agent] = outcome.memory
                runs.append(DryRun(number=len(runs) + 1, agent=sample.agent,
                                   name=sample.name, tick=obs.tick, outcome=outcome))
        return runs


def _problems(runs: Sequence[DryRun]) -> tuple[str, ...]:
    """One line per distinct fault: what it was, in how many dry runs, the first where."""
    faults: dict[tuple[str, str], list[DryRun]] = {}
    for run in runs:
        if not run.outcome.ok:
            faults.setdefault((run.outcome.kind, run.outcome.reason), []).append(run)
    out = []
    for (kind, reason), where in faults.items():
        first = where[0]
        times = (f"dry run {first.number} of {len(runs)}" if len(where) == 1 else
                 f"{len(where)} of {len(runs)} dry runs, the first {first.number}")
        out.append(f"{kind}: {reason} ({times}: {first.who})")
    return tuple(out)
