"""Needs: hunger grows, energy drains (or returns with rest), health regenerates or starves."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["needs_system"]


def needs_system(world: World) -> None:
    r = world.rules
    hunger_rate = r.hunger_per_tick
    drain = r.energy_per_tick
    starve = r.starvation_damage_per_tick
    regen = r.health_regen_per_tick
    near_shelter = world.ground.near_shelter
    columns = world.agent_columns()
    for pos, needs, intent in zip(columns.positions, columns.needs, columns.intents,
                                  strict=True):
        hunger = needs.hunger + hunger_rate
        needs.hunger = hunger = 100.0 if hunger > 100.0 else hunger
        action = intent.action
        if action is not None and action.name == "rest":
            gain = r.rest_energy_per_tick
            if near_shelter(pos.x, pos.y):
                gain *= r.shelter_rest_multiplier
            energy = needs.energy + gain
            needs.energy = 100.0 if energy > 100.0 else energy
        else:
            energy = needs.energy - drain
            needs.energy = 0.0 if energy < 0.0 else energy
        if hunger >= 100.0:
            needs.health -= starve
        elif hunger < 50.0 and needs.energy > 20.0 and needs.health < needs.max_health:
            health = needs.health + regen
            needs.health = needs.max_health if health > needs.max_health else health
