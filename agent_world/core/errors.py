"""Errors the core raises for requests it cannot carry out."""

from __future__ import annotations

__all__ = ["WorldError"]


class WorldError(ValueError):
    """A request the world cannot carry out (bad tile, unknown kind, unknown entity ...)."""
