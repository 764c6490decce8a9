"""The systems, in the fixed order one tick runs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agent_world.core.systems.abilities import abilities_system
from agent_world.core.systems.census import census_system
from agent_world.core.systems.combat import combat_system
from agent_world.core.systems.decide import decide_system
from agent_world.core.systems.economy import economy_system
from agent_world.core.systems.hazards import hazards_system
from agent_world.core.systems.interaction import interaction_system
from agent_world.core.systems.lifecycle import lifecycle_system
from agent_world.core.systems.movement import movement_system
from agent_world.core.systems.needs import needs_system
from agent_world.core.systems.perception import perception_system
from agent_world.core.systems.teamplay import capture_system
from agent_world.core.systems.upkeep import upkeep_system

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["SYSTEMS"]

SYSTEMS: tuple[Callable[[World], None], ...] = (
    needs_system,
    decide_system,
    movement_system,
    perception_system,
    interaction_system,
    combat_system,
    abilities_system,
    hazards_system,
    capture_system,
    economy_system,
    upkeep_system,
    lifecycle_system,
    census_system,
)
