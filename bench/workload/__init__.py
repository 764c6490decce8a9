"""The shared workload: one set of rules, implemented on Agent World's engine and on Mesa.

Agents live on a torus grid (several may share a cell). Each step runs five phases in this
order, on both engines:

1. **move** - every agent steps to one of its 8 neighbouring cells, chosen at random;
2. **perceive** - every agent counts the others within radius 2 (the 5x5 square around it);
3. **fight** - in a shuffled order, a living agent that perceived at least ``CROWD`` others
   and has a living agent on its own or an adjacent cell attacks one of them at random with
   probability ``ATTACK_CHANCE``, for ``DAMAGE`` health; a blow that kills takes the victim's
   wealth;
4. **respawn** - every dead agent is removed and a fresh one (``MAX_HEALTH``,
   ``START_WEALTH``) is placed on a random cell: the only source of new wealth, and the
   population stays constant;
5. **trade** - in a shuffled order, every agent with wealth gives one unit to a random agent
   on its own or an adjacent cell, if there is one.

Both versions draw every random number from one seeded ``random.Random``; they draw in a
different order, so their runs are alike in distribution, not identical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ATTACK_CHANCE",
    "CROWD",
    "DAMAGE",
    "MAX_HEALTH",
    "START_WEALTH",
    "Counters",
    "Workload",
    "WorkloadModel",
]

MAX_HEALTH = 100
DAMAGE = 20
ATTACK_CHANCE = 0.5
CROWD = 2
START_WEALTH = 10
PERCEPTION_RADIUS = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """How big a run is: ``agents`` on a square torus holding ``density`` agents per cell."""

    agents: int
    density: float = 0.1
    seed: int = 42

    def __post_init__(self) -> None:
        if self.agents < 1:
            raise ValueError(f"agents must be >= 1, got {self.agents}")
        if not 0 < self.density <= 1:
            raise ValueError(f"density must be in (0, 1], got {self.density}")

    @property
    def side(self) -> int:
        return max(2 * PERCEPTION_RADIUS + 1, round(math.sqrt(self.agents / self.density)))


@dataclass(slots=True)
class Counters:
    """What the rules did, for comparing the two versions' dynamics."""

    attacks: int = 0
    deaths: int = 0
    transfers: int = 0
    wealth_created: int = 0
    seen_total: int = 0  # sum over agents and steps of the perceived count


class WorkloadModel(Protocol):
    counters: Counters

    def step(self) -> None: ...

    def population(self) -> int: ...

    def total_wealth(self) -> int: ...
