"""Reputation and pairwise relationships, and who sees what happens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["MAX_RELATIONSHIPS", "adjust_relationship", "adjust_reputation", "witnesses"]

MAX_RELATIONSHIPS = 64


def _clamp(v: float) -> float:
    return -1.0 if v < -1.0 else 1.0 if v > 1.0 else v


def adjust_relationship(world: World, who: int, other: int, delta: float) -> None:
    """Change how ``who`` feels about ``other`` (-1 hostile .. 1 friendly)."""
    if who == other:
        return
    social = world.store.try_get(who, c.Social)
    if social is None:
        return
    rel = social.relationships
    rel[other] = round(_clamp(rel.get(other, 0.0) + delta), 4)
    if len(rel) > MAX_RELATIONSHIPS:
        # Forget the most indifferent acquaintance (ties: the lowest id) to stay bounded.
        weakest = min(rel, key=lambda k: (abs(rel[k]), k))
        del rel[weakest]


def adjust_reputation(world: World, eid: int, delta: float) -> None:
    social = world.store.try_get(eid, c.Social)
    if social is not None:
        social.reputation = round(_clamp(social.reputation + delta), 4)


def witnesses(world: World, x: int, y: int, *exclude: int) -> list[int]:
    """Agents close enough to see tile (x, y), nearest first."""
    radius = world.rules.vision_radius
    return [eid for _d2, eid in world.agents_grid.near(x, y, radius) if eid not in exclude]
