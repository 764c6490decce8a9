"""The ``craft`` action (``core.recipes`` says what can be made of what)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent_world.core import events as ev
from agent_world.core.actions import Action
from agent_world.core.goods import fits, load
from agent_world.core.items import ITEMS
from agent_world.core.systems.acting import fail, finish

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["craft"]


def _missing(inputs: Mapping[str, int], row: AgentRow) -> str | None:
    inv = row.inv
    short = [f"{n - inv.count(kind)} {kind}" for kind, n in inputs.items()
             if inv.count(kind) < n]
    return f"short of {', '.join(short)}" if short else None


def craft(world: World, eid: int, row: AgentRow, action: Action) -> None:
    """The ``craft`` action, run by the interaction system every tick while it lasts."""
    intent, inv = row.intent, row.inv
    output: str = action.args["item"]
    inputs = world.recipes.get(output)
    if inputs is None:
        known = ", ".join(world.recipes) or "none in this world (game.recipes)"
        fail(world, eid, intent, f"no recipe makes {output} (recipes: {known})")
        return
    short = _missing(inputs, row)
    if short is not None:
        fail(world, eid, intent, f"cannot craft {output}: {short}")
        return
    if world.tick - intent.since < world.rules.craft_ticks:
        return
    if not fits(world, inv, {output: 1}, leaving=inputs):
        fail(world, eid, intent, f"cannot carry the {output}: carrying {load(inv):g} of "
             f"{world.rules.carry_capacity:g}")
        return
    for kind, n in inputs.items():
        inv.take(kind, n)
    inv.add(output, 1)
    value = ITEMS[output].value
    world.count("crafts")
    world.remember(eid, f"I crafted a {output}")
    world.emit(ev.CRAFT, agent=eid, name=world.name_of(eid), item=output,
               inputs=dict(inputs), value=value)
    finish(intent)
