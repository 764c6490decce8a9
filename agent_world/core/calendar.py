"""World time. A world's rules speak of ticks, never of its pace (``world.tick_rate`` is not
one of its rules), so an hour in the rules is a fixed number of ticks."""

from __future__ import annotations

__all__ = ["TICKS_PER_HOUR"]

TICKS_PER_HOUR = 36_000
"""A world-hour: an hour at the default 10 Hz."""
