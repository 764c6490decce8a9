"""Checking an ability source before it enters a world: ``python main.py ability check``.

The source must pass the gate and compile; then it is dry-run in several scratch worlds, each
a small empty map holding a caster (carrying some of every item), a target agent, a tree, a
berry bush and an apple at the ability's range, with the caster's health, hunger and
neighbours varying between runs. The caster is given a plan to use the ability with the
arguments its ARGS ask for, and the world runs through the real abilities system and the
real sandbox until the action ends.

Verdicts: ``accepted``; ``rejected: REASON`` (refused before running: gate, RestrictedPython,
metadata, name); ``disabled: REASON`` (stopped while running: an exception, a limit, a kill,
malformed effects). A cast the world refused by its rules (out of range, missing goods) does
not count against the source.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.abilities import AbilityError, AbilityMeta, AbilitySpec, source_digest
from agent_world.core.items import ITEMS
from agent_world.core.world import World
from agent_world.sandbox.compiler import compile_ability
from agent_world.sandbox.gate import GateError
from agent_world.sandbox.runner import SandboxRunner

__all__ = ["AbilityChecker", "CheckReport"]

SCRATCH_WORLD: dict[str, Any] = {
    "name": "scratch", "size": [24, 24], "starting_agents": 0, "obstacle_density": 0.0,
    "objects_per_1000_tiles": 0, "shelters_per_1000_tiles": 0, "item_spawn_rate": 0.0,
    "max_items_per_1000_tiles": 0, "immigration_interval_ticks": 0,
}
MAX_DRY_RUN_TICKS = 40
CENTRE = 12


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckReport:
    """The verdict on one source."""

    verdict: str  # accepted | rejected | disabled
    reason: str = ""
    category: str = ""  # why not: gate, restricted, metadata, name, dry-run
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


class AbilityChecker:
    """Gate, compile and dry-run sources. Owns a runner (worker processes) unless given one;
    use it from one thread."""

    def __init__(self, config: Config, runner: SandboxRunner | None = None) -> None:
        self.config = config
        self._own_runner = runner is None
        self.runner = runner if runner is not None else SandboxRunner(config.sandbox, spare=0)
        self.scratch = config.replace(world=SCRATCH_WORLD, persistence={"enabled": False})

    def close(self) -> None:
        if self._own_runner:
            self.runner.close()

    def __enter__(self) -> AbilityChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check(self, source: str, *, taken: Collection[str] = ()) -> CheckReport:
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
        casts = 0
        notes: list[str] = []
        for run in range(self.config.angel.dry_runs):
            outcome, detail = self._dry_run(spec, run)
            if outcome == "disabled":
                return replace(base, verdict="disabled", category="dry-run", casts=casts,
                               reason=f"dry run {run + 1}: {detail}", notes=notes)
            if outcome == "cast":
                casts += 1
            elif detail:
                notes.append(f"dry run {run + 1}: {detail}")
        return replace(base, casts=casts, notes=notes)

    # -- scratch worlds ----------------------------------------------------------------------

    def _dry_run(self, spec: AbilitySpec, run: int) -> tuple[str, str]:
        """('cast' | 'refused' | 'disabled', detail) for one scratch world."""
        world = World.create(self.scratch, seed=7919 * (run + 1))
        try:
            world.abilities.runner = self.runner
            world.abilities.add(spec)
            caster, args = self._stage(world, spec.meta, run)
            world.inbox.submit("plan", {"agent": caster, "source": "check", "actions": [
                {"name": "use_ability", "args": {"ability": spec.name, **args}}]})
            detail = "the action did not end"
            for _ in range(MAX_DRY_RUN_TICKS):
                report = world.step()
                for event in report.events:
                    if event["type"] == "ability_disabled":
                        return "disabled", str(event["reason"])
                    if event["type"] == "ability" and event.get("agent") == caster:
                        return "cast", ""
                    if event["type"] == "action_failed" and event.get("agent") == caster:
                        detail = f"refused by the world: {event['reason']}"
                if world.store.get(caster, c.Intent).action is None:
                    break
            return "refused", detail
        finally:
            world.close()

    @staticmethod
    def _stage(world: World, meta: AbilityMeta, run: int) -> tuple[int, dict[str, Any]]:
        reach = min(meta.range, (1, meta.range, 2, meta.range)[run % 4])
        cx = cy = CENTRE
        caster = world.spawn_agent(name="Caster", personality="cautious", x=cx, y=cy,
                                   gold=20)
        inv = world.store.get(caster, c.Inventory)
        inv.items = {kind: 5 for kind in ITEMS if kind != "gold"}
        needs = world.store.get(caster, c.Needs)
        needs.health = (60.0, 100.0, 30.0, 85.0)[run % 4]
        needs.hunger = (20.0, 60.0, 90.0, 5.0)[run % 4]
        needs.energy = 100.0
        target = world.spawn_agent(name="Target", personality="cautious", x=cx + reach,
                                   y=cy, gold=5)
        world.store.get(target, c.Needs).health = 70.0
        if run % 4 == 2:  # a crowd
            for i, (dx, dy) in enumerate(((0, 1), (-1, 0), (1, 1), (-1, -1), (0, -2))):
                world.spawn_agent(name=f"Bystander{i}", personality="cautious", x=cx + dx,
                                  y=cy + dy)
        bush = world.spawn_object("berry_bush", cx, cy + reach)
        tree = world.spawn_object("tree", cx - max(1, reach), cy) if reach else bush
        apple = world.spawn_item("apple", 2, cx, cy - reach)
        args: dict[str, Any] = {}
        for key in meta.args:
            kind = meta.kind(key)
            if key == "target":
                args["target"] = {"agent": target, "entity": target, "item": apple,
                                  "object": tree if run % 2 else bush}[kind]
            elif key == "x":
                args["x"], args["y"] = cx + reach, cy + reach
            elif key == "item":
                args["item"] = "wood"
            elif key == "qty":
                args["qty"] = 1
            elif key == "text":
                args["text"] = "Hello there, neighbours."
        return caster, args
