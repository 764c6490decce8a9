"""Death (dropping everything carried) and immigration (newcomers keep a world alive)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core.abilities import forget_agent
from agent_world.core.components import NO_ONE
from agent_world.core.items import GOLD

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["die", "lifecycle_system"]

KILL_CREDIT_TICKS = 30


def die(world: World, eid: int, cause: str | None = None) -> None:
    """Remove an agent: its goods fall where it stood, its offers lapse, the world hears."""
    store = world.store
    pos = store.get(eid, c.Position)
    needs = store.get(eid, c.Needs)
    inv = store.get(eid, c.Inventory)
    combat = store.get(eid, c.Combat)
    agent = store.get(eid, c.Agent)
    killer = NO_ONE
    if cause is None:
        recent = world.tick - combat.last_attacked <= KILL_CREDIT_TICKS
        if recent and combat.last_attacker in store:
            killer = combat.last_attacker
            cause = f"killed by {world.label(killer)}"
        elif needs.hunger >= 100.0:
            cause = "starvation"
        else:
            cause = "wounds"
    for kind, qty in sorted(inv.items.items()):
        world.spawn_item(kind, qty, pos.x, pos.y)
    if inv.gold:
        world.spawn_item(GOLD, inv.gold, pos.x, pos.y)
    for oid in [o for o, offer in world.offers.items() if eid in (offer["from"], offer["to"])]:
        world.remove_offer(oid)
    if killer != NO_ONE:
        killer_agent = store.try_get(killer, c.Agent)
        if killer_agent is not None:
            killer_agent.kills += 1
        world.remember(killer, f"killed {world.label(eid)}")
    world.count("deaths")
    world.emit("death", agent=eid, name=agent.name, personality=agent.personality,
               cause=cause, killer=killer, x=pos.x, y=pos.y, age=world.tick - agent.born,
               dropped=dict(inv.items) | ({GOLD: inv.gold} if inv.gold else {}))
    forget_agent(world, eid)
    world.remove_entity(eid)


def lifecycle_system(world: World) -> None:
    dead = [eid for eid, row in world.agents() if row[2].health <= 0.0]
    for eid in dead:
        die(world, eid)
    interval = world.settings.immigration_interval_ticks
    if (interval and world.tick % interval == 0
            and len(world.agents()) < world.settings.starting_agents):
        world.spawn_agent()
        world.count("immigrants")
