"""Built-in brains: utility-based choices, weighted by personality.

Each decision scores the actions that make sense for the agent's needs and surroundings and
returns the best one as an ``Action`` from the same action set the LLM uses. Which brains a
world runs is part of its rules version (``agent_world.core.rules``): ``v2`` here, and the
first brains, unchanged, in ``agent_world.core.rules.brains_v1`` for worlds made before.

- ``profiles``: the personalities' drives.
- ``v2``: brains that trade by need, carry within their capacity, avoid what they could not
  reach, talk (``speech``) and use abilities and the angel (``casting``).
"""

from __future__ import annotations

from agent_world.core.brains.profiles import PROFILES, Profile

__all__ = ["PROFILES", "Profile"]
