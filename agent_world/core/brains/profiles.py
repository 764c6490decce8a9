"""Personalities: how much each drive weighs for the built-in brains."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROFILES", "Profile"]


@dataclass(frozen=True, slots=True)
class Profile:
    """How much each drive weighs (0 .. 1) for one personality."""

    fight: float
    steal: float
    trade: float
    gather: float
    social: float
    caution: float
    generosity: float


PROFILES: dict[str, Profile] = {
    "aggressive": Profile(fight=1.0, steal=0.7, trade=0.2, gather=0.4, social=0.3,
                          caution=0.15, generosity=0.05),
    "cautious": Profile(fight=0.1, steal=0.0, trade=0.5, gather=0.6, social=0.5,
                        caution=1.0, generosity=0.3),
    "trader": Profile(fight=0.2, steal=0.1, trade=1.0, gather=0.5, social=0.8,
                      caution=0.5, generosity=0.4),
    "gatherer": Profile(fight=0.25, steal=0.05, trade=0.4, gather=1.0, social=0.5,
                        caution=0.5, generosity=0.7),
}
