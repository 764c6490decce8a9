"""``Ruleset``: what one rules version does, as the systems ask it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_world.core.actions import Action

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["Ruleset"]


@dataclass(frozen=True, slots=True)
class Ruleset:
    """The behaviour of one rules version, by what it is rather than by its number."""

    version: int
    # The built-in brains' choice for one agent (None: carry on).
    decide: Callable[[World, int, AgentRow], Action | None]
    counts_actions_started: bool  # every action begun counts in the census
    avoids_unreachable: bool  # an agent leaves alone a target it failed to reach
    teaches_needs: bool  # the angel's answer to a built-in brain is taught for its need
    brains_cast: bool  # a new world with the built-in abilities lets its brains cast them
