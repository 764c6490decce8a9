"""Ability sources, scripted runners and staged worlds shared by the ability tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from helpers import STAY, add_agent, give_plan, small_config

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
            alloc: int, tick_steps: int = 0) -> list[AbilityResult]:
        self.calls.extend(calls)
        self.batches.append((len(calls), replaying))
        return [self.script(c) for c in calls]


def scripted(*results: AbilityResult) -> Script:
    """Answer the calls with ``results`` in turn (a call past the last is a test bug)."""
    answers = iter(results)
    return lambda call: next(answers)


def staged(runner: Any = None, *abilities: AbilitySpec, seed: int = 1,
           game: Mapping[str, Any] | None = None,
           rules: Mapping[str, Any] | None = None) -> tuple[World, int, int]:
    """A small empty world with a caster at (5, 5) and a target at (7, 5) (which stays put),
    both rested, with no regeneration or hunger (exact numbers); ``abilities`` are registered
    as generated ones; ``rules`` changes settings of the abilities section."""
    config = small_config(game={"health_regen_per_tick": 0, "hunger_per_tick": 0,
                                **(game or {})})
    w = World.create(config.replace(abilities=dict(rules or {})), seed=seed)
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


class PinnedRunner:
    """Runs trusted sources (the built-ins) in this process, with the random helpers pinned
    to the end that yields the most (``rand_int`` its high end, ``rand_chance`` true,
    ``rand`` just below 1): every call takes its worst case as the caps see it."""

    def __init__(self) -> None:
        self.calls: list[AbilityCall] = []

    def run(self, calls: Sequence[AbilityCall], *, replaying: bool, steps: int,
            alloc: int, tick_steps: int = 0) -> list[AbilityResult]:
        from agent_world.sandbox.compiler import compile_ability
        from agent_world.sandbox.runtime import Meter, build_globals

        self.calls.extend(calls)
        results = []
        for call in calls:
            _meta, code = compile_ability(call.source)
            scope = build_globals(Meter(steps, alloc), 0)
            scope["__builtins__"] = {**scope["__builtins__"], "rand": lambda: 1 - 2**-53,
                                     "rand_int": lambda low, high: high,
                                     "rand_chance": lambda p: True}
            exec(code, scope)  # the program's own built-in sources, trusted
            results.append(AbilityResult(status=ABILITY_OK,
                                         effects=scope["execute"](call.ctx)))
        return results
