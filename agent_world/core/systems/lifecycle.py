"""Death (dropping what is carried, settling the estate), old age and immigration
(newcomers keep a world alive).

A dead agent's goods fall where it died. Of its gold, ``game.estate_dues`` leaves the
world, and with ``game.inheritance`` the rest goes to its heirs, the agents it liked best
(so a killer does not simply pick up a victim's fortune); without heirs it falls there too.

Agents past ``game.lifespan_ticks`` die of old age by chance (``OLD_AGE_CHANCE`` every
``OLD_AGE_CHECK_TICKS``), so a world renews itself. Newcomers arrive every
``world.immigration_interval_ticks`` while fewer than ``world.starting_agents`` live; with
``world.immigrants_fill_mix`` each takes the personality the population lacks most against
``world.personality_mix`` (a missing one first), and one arrives even in a full world while
a personality of the mix has no one left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_world.config import PERSONALITIES
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.abilities import forget_agent
from agent_world.core.components import NO_ONE
from agent_world.core.items import GOLD

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["die", "lifecycle_system"]

KILL_CREDIT_TICKS = 30
MAX_HEIRS = 3
HEIR_LIKING = 0.2  # how much the dead must have liked someone to leave them its gold
OLD_AGE_CHECK_TICKS = 1000
OLD_AGE_CHANCE = 0.1


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
        world.spawn_item(kind, qty, pos.x, pos.y, carried=True)
    estate = _settle_estate(world, eid, killer) if inv.gold else {}
    if inv.gold:
        world.spawn_item(GOLD, inv.gold, pos.x, pos.y, carried=True)
    world.market.close_all_of(eid)
    if killer != NO_ONE:
        killer_agent = store.try_get(killer, c.Agent)
        if killer_agent is not None:
            killer_agent.kills += 1
        world.remember(killer, f"killed {world.label(eid)}")
    world.count("deaths")
    world.emit(ev.DEATH, agent=eid, name=agent.name, personality=agent.personality,
               cause=cause, killer=killer, x=pos.x, y=pos.y, age=world.tick - agent.born,
               dropped=dict(inv.items) | ({GOLD: inv.gold} if inv.gold else {}), **estate)
    forget_agent(world, eid)
    world.minds.forget(eid)
    world.remove_entity(eid)


def _settle_estate(world: World, eid: int, killer: int) -> dict[str, Any]:
    """The dead's gold: ``game.estate_dues`` of it leaves the world; with
    ``game.inheritance`` the rest goes in equal shares to its heirs (up to ``MAX_HEIRS``
    living agents it liked best, never its killer); what is left falls where it died.
    Returns the fields the death event gains (``estate_lost``, ``heirs``)."""
    rules = world.rules
    inv = world.store.get(eid, c.Inventory)
    fields: dict[str, Any] = {}
    if rules.estate_dues:
        lost = min(inv.gold, round(inv.gold * rules.estate_dues))
        if lost:
            inv.gold -= lost
            world.market.burn(lost)
            world.count("estate_gold", lost)
            fields["estate_lost"] = lost
    if rules.inheritance and inv.gold:
        rel = world.store.get(eid, c.Social).relationships
        heirs = sorted((k for k, v in rel.items() if v > HEIR_LIKING and k != killer
                        and world.is_agent(k) and world.alive(k)),
                       key=lambda k: (-rel[k], k))[:MAX_HEIRS]
        if heirs:
            share, rest = divmod(inv.gold, len(heirs))
            given: list[dict[str, Any]] = []
            for i, heir in enumerate(heirs):
                amount = share + (rest if i == 0 else 0)
                if amount:
                    world.store.get(heir, c.Inventory).gold += amount
                    world.remember(heir, f"I inherited {amount} gold from {world.label(eid)}")
                    given.append({"agent": heir, "name": world.name_of(heir), "gold": amount})
            inv.gold = 0
            fields["heirs"] = given
    return fields


def _old_age(world: World) -> None:
    lifespan = world.rules.lifespan_ticks
    tick = world.tick
    old = [eid for eid, row in world.agents() if tick - row.agent.born > lifespan]
    for eid in old:
        if world.rng.random() < OLD_AGE_CHANCE:
            world.count("deaths_of_old_age")
            die(world, eid, cause="old age")


def newcomer_personality(world: World) -> str | None:
    """The personality the population lacks most against the mix (a missing one first;
    ties by weight, then name), or None when the mix has no weights."""
    mix = {p: w for p, w in world.settings.personality_mix.items() if w > 0}
    if not mix:
        return None
    living = world.population.personalities
    counts = {p: living.get(p, 0) for p in mix}
    total = sum(mix.values())
    n = sum(counts.values()) + 1
    return max((p for p in PERSONALITIES if p in mix),
               key=lambda p: (counts[p] == 0, mix[p] * n / total - counts[p], mix[p]))


def _immigration(world: World) -> None:
    settings = world.settings
    interval = settings.immigration_interval_ticks
    if not interval or world.tick % interval:
        return
    living = len(world.agents())
    if not settings.immigrants_fill_mix:
        if living < settings.starting_agents:
            world.spawn_agent()
            world.count("immigrants")
        return
    personality = newcomer_personality(world)
    if personality is None or living >= settings.max_agents:
        return
    missing = not world.population.personalities.get(personality)
    if living < settings.starting_agents or missing:
        world.spawn_agent(personality=personality)
        world.count("immigrants")


def lifecycle_system(world: World) -> None:
    columns = world.agent_columns()
    dead = [eid for eid, needs in zip(columns.ids, columns.needs, strict=True)
            if needs.health <= 0.0]
    for eid in dead:
        die(world, eid)
    if world.rules.lifespan_ticks and world.tick % OLD_AGE_CHECK_TICKS == 0:
        _old_age(world)
    _immigration(world)
