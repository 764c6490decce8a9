"""The fixed shape of an environment's observations and actions: how many slots each list of
things an agent perceives gets, the map they are measured on and how long a step lasts.

A layout is fixed when the environment is made (spaces cannot change size between episodes)
and the same for every agent. Slots are filled nearest first, as the Observation lists
things; what does not fit is left out, empty slots are zeros with ``present`` 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agent_world.config import Config
from agent_world.core.actions import ACTIONS
from agent_world.core.items import ITEMS, OBJECTS

__all__ = ["KINDS", "MAX_SLOTS", "MAX_TICKS_PER_STEP", "OBJECT_KINDS", "SLOT_GROUPS", "Layout",
           "LayoutError"]

KINDS: tuple[str, ...] = tuple(ITEMS)  # item kinds (gold last), the order of every per-kind row
OBJECT_KINDS: tuple[str, ...] = tuple(OBJECTS)
VERBS: tuple[str, ...] = tuple(ACTIONS)  # ``doing``: 0 nothing, else 1 + this index
SLOT_GROUPS = {"agents": 5, "items": 5, "objects": 5, "hazards": 5, "offers": 3}
"""Slot groups and their default sizes (``slots={"agents": 8}`` changes one)."""
MAX_SLOTS = 64
# A plan's idle padding (``idle`` takes at most 100 ticks) lasts one step.
MAX_TICKS_PER_STEP = ACTIONS["idle"].args["ticks"].high


class LayoutError(ValueError):
    """An environment option that cannot be used (out of range, an unknown brain); the
    message names it, the rule and the fix."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """``width``/``height``: the map; ``points``: the scenario's capture points (0: the
    observation has no ``points``); ``ticks_per_step``: world ticks one step advances;
    ``episode_ticks``: the scenario's ``end.ticks``; ``move_tiles``: how far a ``move_to``
    direction aims (what walking covers in a step)."""

    width: int
    height: int
    agents: int
    items: int
    objects: int
    hazards: int
    offers: int
    points: int
    ticks_per_step: int
    episode_ticks: int
    move_tiles: int

    def __post_init__(self) -> None:
        for group in SLOT_GROUPS:
            n = getattr(self, group)
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SLOTS:
                raise LayoutError(f"slots[{group!r}] must be a whole number in "
                                  f"[1, {MAX_SLOTS}], got {n!r}")
        if not 1 <= self.ticks_per_step <= MAX_TICKS_PER_STEP:
            raise LayoutError(f"ticks_per_step must be a whole number in "
                              f"[1, {MAX_TICKS_PER_STEP}], got {self.ticks_per_step!r}")

    @property
    def span(self) -> int:
        """The largest offset between two tiles of the map: bounds of dx, dy, distance."""
        return max(self.width, self.height)

    @classmethod
    def of(cls, config: Config, *, ticks_per_step: int, episode_ticks: int,
           slots: Mapping[str, int] | None = None) -> Layout:
        """The layout of a scenario's world (``config``: the scenario's configuration)."""
        if isinstance(ticks_per_step, bool) or not isinstance(ticks_per_step, int):
            raise LayoutError(f"ticks_per_step must be a whole number of ticks, got "
                              f"{ticks_per_step!r}")
        given = dict(slots or {})
        unknown = sorted(set(given) - set(SLOT_GROUPS))
        if unknown:
            raise LayoutError(f"slots: unknown group {unknown[0]!r}; the groups are "
                              f"{', '.join(SLOT_GROUPS)}")
        width, height = config.world.size
        return cls(width=width, height=height, points=config.world.capture_points,
                   ticks_per_step=ticks_per_step, episode_ticks=episode_ticks,
                   move_tiles=max(1, ticks_per_step // config.game.move_interval_ticks),
                   **{group: given.get(group, n) for group, n in SLOT_GROUPS.items()})
