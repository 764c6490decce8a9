"""Checking an ability source before it enters a world: ``python main.py ability check``,
the angel, and ``/ability load``.

The source must pass the gate and compile; then it is dry-run through the real abilities
system and the real sandbox in scratch copies of real neighbourhoods (``core.scene``): the
world's map, tick and entity ids, agents with their own names, needs, goods and
surroundings. The caster, an agent of that neighbourhood, is given a plan to use the ability
with arguments picked from what is around it, and the world runs until the action ends.
Nothing in ``ctx`` tells a dry run from a real cast, so code that behaves only when it is not
being checked has nothing to go by. A world's angel checks in scenes of that world (the
asker's first); ``ability check`` has no world, so it lives one (the configured world, a few
hundred ticks in) and checks there.

Verdicts: ``accepted``; ``rejected: REASON`` (refused before running: gate, RestrictedPython,
metadata, name; or after its dry runs, as too slow: a call that took more than a tenth of
the sandbox's CPU backstop, which is there for runaway code, not for accepted code);
``disabled: REASON`` (stopped while running: an exception, a limit, calls
killed ``abilities.kills_to_disable`` times in a row, malformed effects). A cast the world
refused by its rules (out of range, missing goods) does not count against the source. Dry
runs wait for a call as long as a replay would (nothing is recorded here, and a busy machine
must not fail a source that its step budget accepts).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Self

from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.abilities import AbilityError, AbilityMeta, AbilitySpec, source_digest
from agent_world.core.items import ITEMS
from agent_world.core.scene import Scene, capture_around
from agent_world.core.world import World, WorldError
from agent_world.sandbox.compiler import compile_ability
from agent_world.sandbox.gate import GateError
from agent_world.sandbox.runner import SandboxRunner
from agent_world.types import AbilityCall, AbilityResult

__all__ = ["AbilityChecker", "CheckReport", "RunnerOwner", "sample_scenes", "slow_code_ms"]

MAX_DRY_RUN_TICKS = 60
SLOW_CODE_FRACTION = 10  # accepted code stays within a tenth of the CPU backstop
SAMPLE_TICKS = 300  # how long ``ability check`` lets its sample world live first
SAMPLE_AGENTS = 200  # at most this many agents in it (a huge configured world is scaled)
NEAR = 4  # a target further than RANGE + NEAR from the caster is not worth walking to
SAYINGS = ("Well met, neighbours.", "The berries are ripe by the river.",
           "Mind the rocks to the north.", "Fair trades here, come and see.")


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckReport:
    """The verdict on one source."""

    verdict: str  # accepted | rejected | disabled
    reason: str = ""
    category: str = ""  # why not: gate, restricted, metadata, name, dry-run, slow
    meta: AbilityMeta | None = None
    source: str = ""
    digest: str = ""
    casts: int = 0  # dry runs in which the ability took effect
    notes: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted" and self.meta is not None

    @property
    def name(self) -> str:
        return self.meta.name if self.meta is not None else ""

    @property
    def description(self) -> str:
        return self.meta.description if self.meta is not None else ""

    def line(self) -> str:
        return self.verdict if self.accepted else f"{self.verdict}: {self.reason}"


class _Patient:
    """The checker's runner as the world sees it: every call gets a replay's patience. It
    keeps the most CPU time any call took, for the verdict on slow code."""

    def __init__(self, runner: SandboxRunner) -> None:
        self.runner = runner
        self.most_cpu_ms = 0.0

    def run(self, calls: Sequence[AbilityCall], *, replaying: bool, steps: int,
            alloc: int, tick_steps: int = 0) -> list[AbilityResult]:
        results = self.runner.run(calls, replaying=True, steps=steps, alloc=alloc)
        self.most_cpu_ms = max([self.most_cpu_ms, *(r.cpu_ms for r in results)])
        return results


def slow_code_ms(config: Config) -> float:
    """The most CPU time one dry-run call of accepted code may take: a tenth of the CPU
    backstop, so that the backstop, which is not the same on every machine, never stops
    accepted code, even on a busy machine whose caches the other work keeps cold."""
    return config.sandbox.cpu_seconds * 1000 / SLOW_CODE_FRACTION


def sample_scenes(config: Config, count: int) -> tuple[Scene, ...]:
    """Scenes from the configured world after it has lived ``SAMPLE_TICKS`` ticks (its
    seed, its map; at most ``SAMPLE_AGENTS`` agents): where ``ability check`` dry-runs."""
    agents = min(config.world.starting_agents, SAMPLE_AGENTS) or 1
    sample = config.replace(world={"starting_agents": agents,
                                   "max_agents": max(agents, config.world.max_agents)},
                            persistence={"enabled": False})
    world = World.create(sample)
    try:
        for _ in range(SAMPLE_TICKS):
            world.step()
        return capture_around(world, None, count)
    finally:
        world.close()


class _Closable(Protocol):
    def close(self) -> None: ...


class RunnerOwner:
    """A checker's hold on its runner (worker processes): closed with the checker when the
    checker made it, left alone when it was given one. Usable in ``with``."""

    runner: _Closable
    _own_runner: bool

    def close(self) -> None:
        if self._own_runner:
            self.runner.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AbilityChecker(RunnerOwner):
    """Gate, compile and dry-run sources. Owns a runner (worker processes) unless given one;
    use it from one thread."""

    def __init__(self, config: Config, runner: SandboxRunner | None = None) -> None:
        self.config = config
        self._own_runner = runner is None
        self.runner: SandboxRunner = runner if runner is not None else SandboxRunner(
            config.sandbox, spare=0)
        self._sampled: tuple[Scene, ...] | None = None

    def check(self, source: str, *, taken: Collection[str] = (),
              scenes: Sequence[Scene] = ()) -> CheckReport:
        """The verdict on ``source``; dry runs happen in ``scenes`` (those of the world it
        is for), or else in scenes of a sample world made from the configuration."""
        try:
            meta, _code = compile_ability(source)
        except GateError as exc:
            category = "restricted" if str(exc).startswith("RestrictedPython") else "gate"
            return CheckReport(verdict="rejected", reason=str(exc), category=category,
                               source=source if isinstance(source, str) else "")
        base = CheckReport(verdict="accepted", meta=meta, source=source,
                           digest=source_digest(source))
        if meta.name in taken:
            return replace(base, verdict="rejected", category="name",
                           reason=f"an ability named {meta.name!r} already exists")
        if meta.range > self.config.abilities.max_range:
            return replace(base, verdict="rejected", category="metadata",
                           reason=f"RANGE {meta.range} exceeds abilities.max_range "
                                  f"({self.config.abilities.max_range})")
        try:
            spec = AbilitySpec(meta=meta, source=source, digest=base.digest, origin="check")
        except AbilityError as exc:
            return replace(base, verdict="rejected", category="metadata", reason=str(exc))
        scenes = list(scenes) or list(self._sample())
        if not scenes:
            return replace(base, verdict="rejected", category="dry-run",
                           reason="no agent lives in the world to try it on")
        casts = 0
        notes: list[str] = []
        runner = _Patient(self.runner)
        for run in range(self.config.angel.dry_runs):
            outcome, detail = self._dry_run(spec, scenes[run % len(scenes)], run, runner)
            if outcome == "disabled":
                return replace(base, verdict="disabled", category="dry-run", casts=casts,
                               reason=f"dry run {run + 1}: {detail}", notes=notes)
            if outcome == "cast":
                casts += 1
            elif detail:
                notes.append(f"dry run {run + 1}: {detail}")
        limit = slow_code_ms(self.config)
        if runner.most_cpu_ms > limit:
            return replace(base, verdict="rejected", category="slow", casts=casts, notes=notes,
                           reason=f"too slow: a dry-run call took {runner.most_cpu_ms:.0f} ms "
                                  f"of CPU; accepted code must take under {limit:.0f} ms (a "
                                  f"tenth of sandbox.cpu_seconds), so that the CPU backstop "
                                  f"never stops it on a busy machine")
        return replace(base, casts=casts, notes=notes)

    def _sample(self) -> tuple[Scene, ...]:
        if self._sampled is None:
            self._sampled = sample_scenes(self.config, self.config.angel.dry_runs)
        return self._sampled

    # -- dry runs ----------------------------------------------------------------------------

    def _dry_run(self, spec: AbilitySpec, scene: Scene, run: int,
                 runner: _Patient) -> tuple[str, str]:
        """('cast' | 'refused' | 'disabled', detail) for one scene."""
        world = scene.build(self.config, seed=(scene.seed + 7919 * (run + 1)) % 2**63)
        try:
            world.abilities.runner = runner
            world.abilities.add(spec)
            caster = scene.agent
            args = _stage(world, caster, spec, random.Random(scene.seed + run))
            plan = {"agent": caster, "source": "check", "actions": [
                {"name": "use_ability", "args": {"ability": spec.name, **args}}]}
            world.inbox.submit("plan", plan)
            detail = "the action did not end"
            for _ in range(MAX_DRY_RUN_TICKS):
                report = world.step()
                for event in report.events:
                    if event.get("agent") != caster and event["type"] != ev.ABILITY_DISABLED:
                        continue
                    if event["type"] == ev.ABILITY_DISABLED:
                        return "disabled", str(event["reason"])
                    if event["type"] == ev.ABILITY:
                        return "cast", ""
                    if event["type"] == ev.ABILITY_KILLED:
                        world.inbox.submit("plan", plan)  # a strike: try again, as a caster would
                    elif event["type"] == ev.ACTION_FAILED:
                        detail = f"refused by the world: {event['reason']}"
                intent = world.store.try_get(caster, c.Intent)
                if intent is None or (intent.action is None and not world.inbox.pending()):
                    break
            return "refused", detail
        finally:
            world.close()


def _stage(world: World, caster: int, spec: AbilitySpec, rng: random.Random) -> dict[str, Any]:
    """Arguments for the caster's cast, as its ARGS ask, picked from its surroundings (a
    newcomer or a fresh item is placed near it when nothing fits). The caster is given the
    energy the cast costs if it lacks it, and a few of each good the source names (a
    gatherer could carry them as well), so that code which spends goods gets to run its
    effects rather than being refused by the world for want of them."""
    meta = spec.meta
    needs = world.store.get(caster, c.Needs)
    if needs.energy < meta.energy_cost:
        needs.energy = round(min(100.0, meta.energy_cost + rng.uniform(1, 20)), 2)
    inv = world.store.get(caster, c.Inventory)
    for kind in ITEMS:
        if f'"{kind}"' in spec.source or f"'{kind}'" in spec.source:
            if kind == "gold":
                inv.gold += rng.randint(5, 20)
            else:
                inv.add(kind, rng.randint(2, 6))
    args: dict[str, Any] = {}
    for key in meta.args:
        kind = meta.kind(key)
        if key == "target":
            args["target"] = _target(world, caster, kind, meta.range, rng)
        elif key == "x":
            args["x"], args["y"] = _tile(world, caster, meta.range, rng)
        elif key == "item":
            carried = world.store.get(caster, c.Inventory).items
            args["item"] = max(carried, key=lambda k: (carried[k], k)) if carried else (
                rng.choice(sorted(k for k in ITEMS if k != "gold")))
        elif key == "qty":
            args["qty"] = 1
        elif key == "text":
            args["text"] = rng.choice(SAYINGS)
    return args


def _nearest(world: World, caster: int, grids: Sequence[Any], reach: int) -> int | None:
    pos = world.store.get(caster, c.Position)
    found = [(d2, eid) for grid in grids for d2, eid in grid.near(pos.x, pos.y, reach)
             if eid != caster and (not world.is_agent(eid) or world.alive(eid))]
    return min(found)[1] if found else None


def _target(world: World, caster: int, kind: str, reach: int, rng: random.Random) -> int:
    grids = {"agent": [world.agents_grid], "object": [world.ground.objects],
             "item": [world.ground.items],
             "entity": [world.agents_grid, world.ground.objects, world.ground.items]}[kind]
    found = _nearest(world, caster, grids, reach + NEAR)
    if found is not None:
        return found
    x, y = _tile(world, caster, max(1, reach), rng)
    try:
        if kind in ("agent", "entity"):
            return world.spawn_agent(x=x, y=y)  # a newcomer, named like any other
        if kind == "object":
            return world.spawn_object(rng.choice(("tree", "berry_bush", "rock")), x, y)
        return world.spawn_item(rng.choice(("apple", "berries", "wood")), 1, x, y)
    except WorldError:
        return caster  # nowhere to put one: the world will refuse the cast, not the code


def _tile(world: World, caster: int, reach: int, rng: random.Random) -> tuple[int, int]:
    """A walkable tile within ``reach`` of the caster (its own tile if there is none)."""
    pos = world.store.get(caster, c.Position)
    spots = [(pos.x + dx, pos.y + dy) for dy in range(-reach, reach + 1)
             for dx in range(-reach, reach + 1)
             if (dx or dy) and not world.terrain.is_blocked(pos.x + dx, pos.y + dy)
             and not world.ground.objects.at(pos.x + dx, pos.y + dy)]
    return rng.choice(spots) if spots else (pos.x, pos.y)
