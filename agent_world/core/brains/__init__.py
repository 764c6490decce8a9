"""Built-in brains: utility-based choices, weighted by personality.

Each decision scores the actions that make sense for the agent's needs and surroundings and
returns the best one as an ``Action`` from the same action set the LLM uses. Which brains a
world runs is one of its rules (``game.brain_version``): ``v2`` for new worlds, ``v1`` (the
first brains, unchanged) for worlds saved before, so that they replay exactly.

- ``profiles``: the personalities' drives.
- ``v1``: the first brains.
- ``v2``: brains that trade by need, carry within their capacity, avoid what they could not
  reach, talk (``speech``) and use abilities and the angel (``casting``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core.actions import Action
from agent_world.core.brains import v1, v2
from agent_world.core.brains.profiles import PROFILES, Profile

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["PROFILES", "Profile", "decide"]


def decide(world: World, eid: int, row: AgentRow) -> Action | None:
    """The built-in choice for one agent, or None to carry on with what it is doing."""
    if world.rules.brain_version >= 2:
        return v2.decide(world, eid, row)
    return v1.decide(world, eid, row)
