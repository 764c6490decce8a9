"""A uniform grid of buckets for "what is near (x, y)" queries.

Derived data: rebuilt from positions when a world is loaded, so bucket order (which depends
on history) never leaks into results; every query returns entities sorted by
(squared distance, id).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SpatialGrid"]


class _HasXY(Protocol):
    x: int
    y: int


class SpatialGrid:
    def __init__(self, width: int, height: int, cell: int = 8) -> None:
        if cell < 1:
            raise ValueError(f"cell must be >= 1, got {cell}")
        self.cell = cell
        self.cols = (width + cell - 1) // cell
        self.rows = (height + cell - 1) // cell
        self._buckets: list[list[int]] = [[] for _ in range(self.cols * self.rows)]
        self._pos: dict[int, _HasXY] = {}
        self._bucket_of: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, eid: object) -> bool:
        return eid in self._pos

    def _bucket(self, x: int, y: int) -> int:
        return (y // self.cell) * self.cols + (x // self.cell)

    def insert(self, eid: int, pos: _HasXY) -> None:
        """Track ``pos`` (the entity's live Position component) under ``eid``."""
        if eid in self._pos:
            raise ValueError(f"entity {eid} is already in the grid")
        b = self._bucket(pos.x, pos.y)
        self._pos[eid] = pos
        self._bucket_of[eid] = b
        self._buckets[b].append(eid)

    def remove(self, eid: int) -> None:
        b = self._bucket_of.pop(eid)
        del self._pos[eid]
        self._buckets[b].remove(eid)

    def moved(self, eid: int) -> None:
        """Call after changing the entity's position."""
        pos = self._pos[eid]
        b = self._bucket(pos.x, pos.y)
        old = self._bucket_of[eid]
        if b != old:
            self._buckets[old].remove(eid)
            self._buckets[b].append(eid)
            self._bucket_of[eid] = b

    def near(self, x: int, y: int, radius: int) -> list[tuple[int, int]]:
        """(squared distance, id) of entities within ``radius`` (Euclidean), nearest first."""
        cell = self.cell
        r2 = radius * radius
        c0, c1 = max(0, (x - radius) // cell), min(self.cols - 1, (x + radius) // cell)
        r0, r1 = max(0, (y - radius) // cell), min(self.rows - 1, (y + radius) // cell)
        pos = self._pos
        found: list[tuple[int, int]] = []
        for row in range(r0, r1 + 1):
            base = row * self.cols
            for col in range(c0, c1 + 1):
                for eid in self._buckets[base + col]:
                    p = pos[eid]
                    d2 = (p.x - x) * (p.x - x) + (p.y - y) * (p.y - y)
                    if d2 <= r2:
                        found.append((d2, eid))
        found.sort()
        return found

    def at(self, x: int, y: int) -> list[int]:
        """Ids of entities on exactly this tile, ascending."""
        return sorted(eid for d2, eid in self.near(x, y, 0))
