"""Finding the entity a command names, in the world as it is now."""

from __future__ import annotations

from agent_world.commands.parsing import CommandError, EntityRef, closest
from agent_world.core import components as c
from agent_world.core.world import World

__all__ = ["agent_names", "kind_of", "resolve"]


def agent_names(world: World) -> list[str]:
    """The names of the living agents, ascending by id."""
    return [row.agent.name for _eid, row in world.agents()]


def kind_of(world: World, eid: int) -> str:
    """agent, item, object or entity."""
    store = world.store
    if store.has(eid, c.Agent):
        return "agent"
    if store.has(eid, c.Item):
        return "item"
    if store.has(eid, c.StaticObject):
        return "object"
    return "entity"


def resolve(world: World, ref: EntityRef, *, agent: bool = False) -> int:
    """The id ``ref`` names; with ``agent``, it must name a living agent."""
    if ref.eid is not None:
        eid = ref.eid
        if eid not in world.store:
            raise CommandError(f"no entity #{eid} (gone, or never was); /list shows what "
                               "exists")
        if agent and not world.is_agent(eid):
            raise CommandError(f"{world.label(eid)} is {kind_of(world, eid)}, not an agent")
        return eid
    assert ref.name is not None
    found = world.population.find(ref.name)
    if found is None:
        proper = {n.lower(): n for n in agent_names(world)}
        close = closest(ref.name.lower(), proper)
        hint = f"; did you mean {proper[close]!r}?" if close is not None else ""
        raise CommandError(f"no living agent named {ref.name!r} (/list agents shows who "
                           f"lives){hint}")
    return found
