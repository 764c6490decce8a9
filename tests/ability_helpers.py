"""Ability sources, scripted runners and staged worlds shared by the ability tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from helpers import STAY, add_agent, give_plan, small_world

from agent_world.core.abilities import AbilityMeta, AbilitySpec, source_digest
from agent_world.core.world import World
from agent_world.types import ABILITY_OK, AbilityCall, AbilityResult


def source(body: str, *, name: str = "probe", energy: float = 0, cooldown: int = 0,
           range_: int = 3, args: Mapping[str, str] | None = None) -> str:
    """A complete ability source around ``body`` (the lines of execute, indented 4)."""
    return (f"NAME = {name!r}\nDESCRIPTION = 'A test ability.'\nENERGY_COST = {energy!r}\n"
            f"COOLDOWN = {cooldown!r}\nRANGE = {range_!r}\nARGS = {dict(args or {})!r}\n\n\n"
            f"def execute(ctx):\n{body}")


def spec(name: str = "probe", *, energy: float = 0, cooldown: int = 0, range_: int = 3,
         args: Mapping[str, str] | None = None, body: str = "    return []\n") -> AbilitySpec:
    text = source(body, name=name, energy=energy, cooldown=cooldown, range_=range_, args=args)
    meta = AbilityMeta(name=name, description="A test ability.", energy_cost=energy,
                       cooldown=cooldown, range=range_, args=dict(args or {}))
    return AbilitySpec(meta=meta, source=text, digest=source_digest(text), origin="test")


Script = Callable[[AbilityCall], AbilityResult]


def returns(*effects: Mapping[str, Any]) -> Script:
    return lambda call: AbilityResult(status=ABILITY_OK, effects=[dict(e) for e in effects])


class FakeRunner:
    """An AbilityRunner that answers from a script, recording every call it gets."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls: list[AbilityCall] = []
        self.batches: list[tuple[int, bool]] = []

    def run(self, calls: Sequence[AbilityCall], *, replaying: bool, steps: int,
            alloc: int) -> list[AbilityResult]:
        self.calls.extend(calls)
        self.batches.append((len(calls), replaying))
        return [self.script(c) for c in calls]


def staged(runner: Any = None, *abilities: AbilitySpec, seed: int = 1,
           game: Mapping[str, Any] | None = None) -> tuple[World, int, int]:
    """A small empty world with a caster at (5, 5) and a target at (7, 5) (which stays put),
    both rested, with no regeneration or hunger (exact numbers); ``abilities`` are registered
    as generated ones."""
    w = small_world(seed, game={"health_regen_per_tick": 0, "hunger_per_tick": 0,
                                **(game or {})})
    w.abilities.runner = runner
    for s in abilities:
        w.abilities.add(s)
    caster = add_agent(w, "Cas", 5, 5, items={"wood": 5, "apple": 2})
    target = add_agent(w, "Tig", 7, 5, health=50.0)
    give_plan(w, target, STAY)
    return w, caster, target


def stay(w: World, eid: int) -> None:
    """Keep an agent where it is (no brain wandering or fleeing) for 300 ticks."""
    give_plan(w, eid, STAY)


def cast(name: str, **args: Any) -> dict[str, Any]:
    return {"name": "use_ability", "args": {"ability": name, **args}}
