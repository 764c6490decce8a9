"""Input handlers: how each kind of input changes the world.

An input that cannot be applied (its agent died, its tile filled up since it was sent) is
rejected with an ``input_rejected`` event naming the reason; replay rejects it the same way.
Outer layers may register handlers for input types of their own.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agent_world.config import BRAIN_NAME
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.actions import Action, ActionError
from agent_world.core.errors import WorldError
from agent_world.core.items import ITEMS, OBJECTS
from agent_world.core.players import (
    PLAYER,
    PlayRefused,
    act_input,
    play_input,
    release_input,
    speak_input,
)
from agent_world.core.systems.abilities import (
    AbilityInputError,
    accept_input,
    outcome_input,
    refused_input,
    state_input,
)
from agent_world.core.systems.acting import finish
from agent_world.core.systems.lifecycle import die
from agent_world.types import Input

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["INPUT_HANDLERS", "MAX_PLAN", "InputRejected", "apply_input", "register_input"]

MAX_PLAN = 8


class InputRejected(ValueError):
    """The input is well-formed but cannot be applied to the world as it is now."""


InputHandler = Callable[["World", Mapping[str, Any]], None]


def _int(data: Mapping[str, Any], key: str, default: int | None = None) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputRejected(f"{key} must be a whole number, got {value!r}")
    return value


def _str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise InputRejected(f"{key} must be text, got {value!r}")
    return value


def _model_for(data: Mapping[str, Any]) -> dict[str, dict[str, str]] | None:
    """A spawn's ``model_for`` (``llm.model_for`` as the spawn was asked: brain ``llm`` is
    its team's or personality's model profile), checked."""
    value = data.get("model_for")
    if value is None:
        return None
    if not (isinstance(value, dict) and all(
            k in ("team", "personality") and isinstance(v, dict)
            and all(isinstance(n, str) and isinstance(p, str) for n, p in v.items())
            for k, v in value.items())):
        raise InputRejected("model_for must map team and personality to {name: profile}, "
                            f"got {value!r:.80}")
    return {k: dict(v) for k, v in value.items()}


def _agent(world: World, data: Mapping[str, Any], key: str = "agent") -> int:
    eid = _int(data, key)
    if eid is None or not world.is_agent(eid):
        raise InputRejected(f"{key} {eid!r} is not a living agent")
    return eid


def _spawn(world: World, data: Mapping[str, Any]) -> None:
    kind = _str(data, "kind") or ""
    x, y = _int(data, "x"), _int(data, "y")
    if (x is None) != (y is None):
        raise InputRejected("give both x and y, or neither")
    try:
        if kind == "agent":
            brain = _str(data, "brain") or "builtin"
            world.spawn_agent(_str(data, "name"), _str(data, "personality"), x, y,
                              brain=brain, gold=_int(data, "gold"), team=_str(data, "team"),
                              model_for=_model_for(data))
        elif kind in ITEMS:
            qty = _int(data, "qty", 1)
            if qty is None or qty < 1:
                raise InputRejected(f"qty must be >= 1, got {qty}")
            if x is None or y is None:
                spot = world.terrain.random_open_tile(world.rng)
                if spot is None:
                    raise InputRejected("no free tile for the item")
                x, y = spot
            elif world.terrain.is_blocked(x, y):
                raise InputRejected(f"tile ({x}, {y}) is blocked "
                                    f"({world.describe_tile(x, y)})")
            world.spawn_item(kind, qty, x, y, source="console")
        elif kind in OBJECTS:
            if x is None or y is None:
                spot = world.terrain.random_open_tile(world.rng)
                if spot is None:
                    raise InputRejected("no free tile for the object")
                x, y = spot
            world.spawn_object(kind, x, y)
        else:
            raise InputRejected(f"cannot spawn {kind!r}: expected agent, an item kind "
                                f"({', '.join(ITEMS)}) or an object kind "
                                f"({', '.join(OBJECTS)})")
    except WorldError as exc:
        raise InputRejected(str(exc)) from None


def _kill(world: World, data: Mapping[str, Any]) -> None:
    eid = _int(data, "target")
    if eid is None or eid not in world.store:
        raise InputRejected(f"target {eid!r} does not exist")
    if world.is_agent(eid):
        die(world, eid, cause=str(data.get("cause") or "struck down by the operator"))
    else:
        world.emit(ev.REMOVED, target=eid, what=world.label(eid))
        world.remove_entity(eid)


def _give(world: World, data: Mapping[str, Any]) -> None:
    eid = _agent(world, data, "target")
    kind = _str(data, "item") or ""
    qty = _int(data, "qty", 1) or 0
    if kind not in ITEMS:
        raise InputRejected(f"unknown item {kind!r}; expected one of {', '.join(ITEMS)}")
    if qty < 1:
        raise InputRejected(f"qty must be >= 1, got {qty}")
    world.store.get(eid, c.Inventory).add(kind, qty)
    if kind == "gold":
        world.market.mint(qty)
    world.emit(ev.GIVEN, target=eid, target_name=world.name_of(eid), item=kind, qty=qty)


def _plan(world: World, data: Mapping[str, Any]) -> None:
    eid = _agent(world, data)
    raw = data.get("actions")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_PLAN:
        raise InputRejected(f"actions must be a list of 1 to {MAX_PLAN} actions")
    try:
        actions = [Action.from_dict(a) for a in raw]
    except ActionError as exc:
        raise InputRejected(f"invalid action in plan: {exc}") from None
    player = world.players.player_of(eid)
    if player is not None:  # a played agent's brain is paused: only its player orders it
        raise InputRejected(f"{world.label(eid)} is played by {player}: its brain is paused "
                            "and its player alone gives it orders")
    intent = world.store.get(eid, c.Intent)
    if intent.action is not None:
        finish(intent, "replaced by a new plan")
    intent.plan = actions
    source = _str(data, "source") or "console"
    if source == PLAYER:
        raise InputRejected(f"plan source {PLAYER!r} is for a player's orders (act inputs)")
    intent.plan_source = source
    if world.metrics.enabled:
        world.metrics.on_plan(world, data)


def _brain(world: World, data: Mapping[str, Any]) -> None:
    """Agent ``agent`` thinks with ``brain`` from this tick on (a counterfactual fork gives
    its chosen agents the brain under test this way). The decision pipelines hear of it by
    the ``brain_changed`` event: the old brain's stops asking for the agent, the new one's
    starts."""
    eid = _agent(world, data)
    brain = _str(data, "brain") or ""
    if not BRAIN_NAME.fullmatch(brain):
        raise InputRejected(f"brain {brain!r} is not a brain's name (builtin, llm or a "
                            "registered brain's: a-z, 0-9 and _, or policy:NAME)")
    agent = world.store.get(eid, c.Agent)
    was, agent.brain = agent.brain, brain
    row = world.metrics.rows.get(eid)
    if row is not None:  # its figures are grouped under the brain it has now (/top, by)
        row["brain"] = brain
    world.emit(ev.BRAIN_CHANGED, agent=eid, name=agent.name, brain=brain, was=was)


def _reseed(world: World, data: Mapping[str, Any]) -> None:
    """The world draws its random numbers from ``seed`` from this tick on (its ``seed``,
    which abilities' own numbers derive from, too): each branch of a counterfactual fork
    starts from the same state with a seed of its own."""
    seed = _int(data, "seed")
    if seed is None or not 0 <= seed < 2**63:
        raise InputRejected(f"seed must be a whole number from 0 to 2**63 - 1, got {seed!r}")
    was = world.seed
    world.seed = seed
    world.rng = random.Random(seed)
    world.emit(ev.RESEEDED, seed=seed, was=was)


def _decision_fault(world: World, data: Mapping[str, Any]) -> None:
    """A brain that is not built in failed to decide for an agent (counted: metrics)."""
    eid = _agent(world, data)
    if world.metrics.enabled:
        world.metrics.add(world, eid, "decision_faults")


MAX_INTERVIEW_MEMORY = 300  # characters of a remembered interview in the agent's memory


def _interview(world: World, data: Mapping[str, Any]) -> None:
    """An interview and its answer (the record of every ``/ask`` and survey answer; what
    a model said is never asked again in a replay). With ``remember`` and an answer, the
    agent keeps it: a line of its memory (every brain's observation shows it) and an
    ``interview`` event that the LLM's and users' brains' memories take in; otherwise the
    world is left as it is."""
    question = _str(data, "question")
    answer = _str(data, "answer")
    remember = data.get("remember", False)
    if not isinstance(remember, bool):
        raise InputRejected(f"remember must be true or false, got {remember!r}")
    if question is None or answer is None:
        raise InputRejected("an interview needs its question and answer (text)")
    if not remember or not answer:
        return
    eid = _agent(world, data)
    line = f'I was asked "{question}" and answered "{answer}"'
    world.remember(eid, line[:MAX_INTERVIEW_MEMORY])
    world.emit(ev.INTERVIEW, agent=eid, name=world.name_of(eid), question=question,
               answer=answer, interview=_str(data, "id") or "")


INPUT_HANDLERS: dict[str, InputHandler] = {
    "spawn": _spawn,
    "kill": _kill,
    "give": _give,
    "plan": _plan,
    "decision_fault": _decision_fault,
    "brain": _brain,
    "reseed": _reseed,
    "interview": _interview,
    "play": play_input,
    "release": release_input,
    "act": act_input,
    "speak": speak_input,
    "ability": accept_input,
    "ability_refused": refused_input,
    "ability_state": state_input,
    "ability_outcome": outcome_input,  # late: written during a tick, replayed from the log
}


def register_input(type: str, handler: InputHandler) -> None:
    """Add a handler for a new input type (outer layers: abilities, LLM bookkeeping)."""
    if type in INPUT_HANDLERS and INPUT_HANDLERS[type] is not handler:
        raise ValueError(f"input type {type!r} already has a handler")
    INPUT_HANDLERS[type] = handler


def apply_input(world: World, inp: Input) -> None:
    handler = INPUT_HANDLERS.get(inp.type)
    try:
        if handler is None:
            raise InputRejected(f"unknown input type {inp.type!r}")
        handler(world, inp.data)
    except (InputRejected, AbilityInputError, PlayRefused) as exc:
        world.emit(ev.INPUT_REJECTED, seq=inp.seq, input=inp.type, source=inp.source,
                   reason=str(exc))
