"""A counterfactual fork's plan: the source world checked up to the fork tick, the agents
chosen, the seeds of its branches, and what every branch starts with.

``plan_fork`` replays the source folder from its first snapshot to the fork tick, verifying
every logged state hash and every snapshot on the way (it only reads the folder), and
resolves the chosen agents' names at that tick. Every branch then forks the source at that
tick (``persistence.fork_world``), so all of them start from the same state, whose hash the
plan keeps, and applies the plan's inputs at its first tick (``branch_inputs``):

1. ``reseed``: the branch's own seed (``branch_seed``);
2. ``brain``: the chosen agents get the brain under test;
3. ``brain``: every other agent whose brain answers from outside this process (``llm``,
   ``remote``, ``rl``) or is not registered here gets ``builtin``, in every branch alike,
   so that a branch needs no network (unless the brain under test is ``llm``) and no
   client. Other agents keep their brains: built-in, registered ones and policies.

They are logged inputs like any other, so a branch's folder replays and verifies alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_world.config import Config, llm_profile_of
from agent_world.core.world import World
from agent_world.persistence import DivergenceError, SaveError, SaveFolder
from agent_world.persistence.replay import replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.sandbox import Sandbox

__all__ = ["FORK_SOURCE", "OUTSIDE_BRAINS", "ForkError", "ForkPlan", "branch_inputs",
           "branch_name", "branch_seed", "plan_fork", "runs_here"]

FORK_SOURCE = "fork-eval"  # the source of the inputs a branch starts with
OUTSIDE_BRAINS = frozenset({"llm", "remote", "rl"})  # answered from outside the process
SEED_LIMIT = 2**63  # a branch's seed is below it (the reseed input's rule)
NAMES_SHOWN = 8  # living agents named when a chosen one is not among them


class ForkError(ValueError):
    """A fork that cannot be made as asked; the message names the value and the fix."""


def branch_seed(source_seed: int, tick: int, brain: str, index: int) -> int:
    """The seed of branch ``index`` (1, 2, ...) of ``brain`` forked at ``tick`` from a world
    of ``source_seed``: the first 8 bytes of BLAKE2b over ``"SEED:TICK:BRAIN:INDEX"``, big
    endian, below 2**63. Stable across runs, machines and Python's hash seeds."""
    digest = hashlib.blake2b(f"{source_seed}:{tick}:{brain}:{index}".encode(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big") % SEED_LIMIT


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkPlan:
    """What every branch of a fork shares, as checked in the source at the fork tick."""

    source: str  # the source world's folder, absolute
    world: str  # its name
    seed: int  # its seed
    tick: int
    state_hash: str  # the source's state at ``tick`` (every branch starts from it)
    agents: dict[str, int]  # the chosen agents, by name, and their ids
    ticks: int  # how long each branch runs
    # Other agents given the built-in brain in every branch (by name: id), and what they had.
    fallback: dict[str, int] = field(default_factory=dict)
    fallback_brains: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.agents:
            raise ForkError("a fork needs at least one chosen agent")
        if self.ticks < 1:
            raise ForkError(f"ticks must be >= 1, got {self.ticks}")

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ForkPlan:
        return cls(source=str(record["source"]), world=str(record["world"]),
                   seed=int(record["seed"]), tick=int(record["tick"]),
                   state_hash=str(record["state_hash"]), agents=dict(record["agents"]),
                   ticks=int(record["ticks"]), fallback=dict(record.get("fallback") or {}),
                   fallback_brains=dict(record.get("fallback_brains") or {}))


def branch_name(plan: ForkPlan, brain: str, index: int) -> str:
    """A branch's save folder name: ``WORLD-tTICK-BRAIN-INDEX``."""
    return f"{plan.world}-t{plan.tick}-{brain.replace(':', '-')}-{index}"


def branch_inputs(plan: ForkPlan, brain: str, seed: int) -> list[tuple[str, dict[str, Any]]]:
    """The inputs a branch applies at its first tick, in order (the module says why)."""
    inputs: list[tuple[str, dict[str, Any]]] = [("reseed", {"seed": seed})]
    inputs += [("brain", {"agent": eid, "brain": brain}) for eid in sorted(plan.agents.values())]
    inputs += [("brain", {"agent": eid, "brain": "builtin"})
               for eid in sorted(plan.fallback.values())]
    return inputs


def runs_here(brain: str, registered: Mapping[str, object]) -> bool:
    """Whether an agent not chosen keeps ``brain`` in a branch: built in, or registered
    here and answered in this process."""
    return brain == "builtin" or (brain not in OUTSIDE_BRAINS and llm_profile_of(brain) is None
                                  and brain in registered)


def _replayed(folder: SaveFolder, tick: int, config: Config) -> World:
    """The source world at ``tick``, replayed from its first snapshot with every logged
    state hash and snapshot on the way verified: ForkError when it cannot be."""
    where = folder.root
    history = folder.history()
    if not history:
        raise ForkError(f"{where} holds no snapshot, so it cannot be replayed to --at {tick}; "
                        "give a save folder with its snapshots/")
    first = history[0][0]
    if tick < first:
        raise ForkError(f"--at {tick}: the log of {where} begins at tick {first} (its first "
                        f"snapshot); fork at tick {first} or later")
    world = load_first_snapshot(folder, config).world
    try:
        with Sandbox(config, wait=False) as sandbox:  # the abilities the world cast
            sandbox.install(world)
            result = replay(world, folder, until=tick, check_snapshots=True,
                            end=folder.read_meta().get("last_tick"))
    except DivergenceError as exc:
        world.close()
        raise ForkError(f"{where} does not verify before the fork point: it diverges at tick "
                        f"{exc.tick} (logged state {exc.expected}, replayed {exc.actual}); "
                        f"fork at tick {exc.tick - 1} or earlier, or see python main.py "
                        f"replay {where}") from None
    except BaseException:
        world.close()
        raise
    if world.tick != tick:
        reached = world.tick
        world.close()
        why = (f" (it lost ticks {result.gap.start}..{result.gap.tick}: {result.gap.reason})"
               if result.gap is not None else
               f" ({result.damaged.name} is damaged)" if result.damaged is not None else "")
        raise ForkError(f"--at {tick}: the log of {where} ends at tick {reached}{why}; fork "
                        f"at tick {reached} or earlier")
    return world


def _chosen(world: World, names: Sequence[str]) -> dict[str, int]:
    chosen: dict[str, int] = {}
    for name in names:
        # An id (17 or #17) names an agent too: names are never all digits.
        eid = int(name.lstrip("#")) if name.lstrip("#").isdigit() else \
            world.population.find(name)
        if eid is not None and not world.is_agent(eid):
            eid = None
        if eid is None or not world.alive(eid):
            living = sorted(row.agent.name for _eid, row in world.agents())
            shown = ", ".join(living[:NAMES_SHOWN]) + (", ..." if len(living) > NAMES_SHOWN
                                                       else "")
            died = any(row.get("name", "").lower() == name.lower() and "died_at" in row
                       for row in world.metrics.rows.values())
            state = (f"{name} died before tick {world.tick}" if died else
                     f"no agent {name} is alive at tick {world.tick}")
            raise ForkError(f"--agents {name}: {state} (alive then: {shown or 'nobody'}); "
                            "choose a living agent, or fork earlier with --at")
        chosen[world.name_of(eid)] = eid
    return chosen


def plan_fork(source: Path, tick: int, agents: Sequence[str], ticks: int, config: Config,
              registered: Mapping[str, object]) -> ForkPlan:
    """Check the source up to ``tick`` and resolve the chosen agents there; ForkError
    naming the value and the fix. ``registered``: the brains this configuration can run
    (``load_brains``); other agents' brains beyond them fall back to ``builtin``."""
    try:
        folder = SaveFolder.open(source)
    except SaveError as exc:
        raise ForkError(f"{source}: {exc}") from None
    meta = folder.read_meta()
    world = _replayed(folder, tick, config)
    try:
        chosen = _chosen(world, agents)
        others = [(row.agent.name, eid, row.agent.brain) for eid, row in world.agents()
                  if eid not in chosen.values()
                  and not runs_here(row.agent.brain, registered)]
        return ForkPlan(source=str(folder.root.resolve()),
                        world=str(meta.get("world") or folder.root.name), seed=world.seed,
                        tick=tick, state_hash=world.state_hash(), agents=chosen, ticks=ticks,
                        fallback={name: eid for name, eid, _brain in others},
                        fallback_brains={name: brain for name, _eid, brain in others})
    finally:
        world.close()
