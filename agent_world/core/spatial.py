"""A uniform grid of buckets for "what is near (x, y)" queries.

Derived data: rebuilt from positions when a world is loaded, so bucket order (which depends
on history) never leaks into results; every query returns entities sorted by
(squared distance, id).

Two flavours, because the hot query (perception) visits thousands of buckets per tick:
a *moving* grid keeps each entity's live Position and is told when it moves; a *static* grid
(items and objects never move) stores ``(x, y, id)`` in its buckets, so a query reads
coordinates without a dictionary lookup.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SpatialGrid"]


class _HasXY(Protocol):
    x: int
    y: int


class SpatialGrid:
    def __init__(self, width: int, height: int, cell: int = 8, *, static: bool = False) -> None:
        if cell < 1:
            raise ValueError(f"cell must be >= 1, got {cell}")
        self.cell = cell
        self.cols = (width + cell - 1) // cell
        self.rows = (height + cell - 1) // cell
        self.static = static
        self._buckets: list[list[int]] = [[] for _ in range(self.cols * self.rows)]
        self._cells: list[list[tuple[int, int, int]]] = (
            [[] for _ in range(self.cols * self.rows)] if static else [])
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
        if self.static:
            self._cells[b].append((pos.x, pos.y, eid))

    def remove(self, eid: int) -> None:
        b = self._bucket_of.pop(eid)
        pos = self._pos.pop(eid)
        self._buckets[b].remove(eid)
        if self.static:
            self._cells[b].remove((pos.x, pos.y, eid))

    def moved(self, eid: int) -> None:
        """Call after changing the entity's position (moving grids only)."""
        if self.static:
            raise ValueError("entities in a static grid do not move; remove and re-insert")
        pos = self._pos[eid]
        b = self._bucket(pos.x, pos.y)
        old = self._bucket_of[eid]
        if b != old:
            self._buckets[old].remove(eid)
            self._buckets[b].append(eid)
            self._bucket_of[eid] = b

    def bucket_range(self, x: int, y: int, radius: int) -> tuple[int, int, int, int]:
        """First and last bucket column and row a query of ``radius`` around (x, y) visits."""
        cell = self.cell
        return (max(0, (x - radius) // cell), min(self.cols - 1, (x + radius) // cell),
                max(0, (y - radius) // cell), min(self.rows - 1, (y + radius) // cell))

    def collect(self, x: int, y: int, r2: int, span: tuple[int, int, int, int],
                found: list[tuple[int, int]]) -> None:
        """Append (squared distance, id) of entities within sqrt(r2) in the buckets of
        ``span`` (from ``bucket_range``) to ``found``, unsorted."""
        c0, c1, r0, r1 = span
        cols = self.cols
        if self.static:
            cells = self._cells
            for row in range(r0, r1 + 1):
                base = row * cols
                for col in range(c0, c1 + 1):
                    for ex, ey, eid in cells[base + col]:
                        d2 = (ex - x) * (ex - x) + (ey - y) * (ey - y)
                        if d2 <= r2:
                            found.append((d2, eid))
            return
        pos = self._pos
        buckets = self._buckets
        for row in range(r0, r1 + 1):
            base = row * cols
            for col in range(c0, c1 + 1):
                for eid in buckets[base + col]:
                    p = pos[eid]
                    d2 = (p.x - x) * (p.x - x) + (p.y - y) * (p.y - y)
                    if d2 <= r2:
                        found.append((d2, eid))

    def near(self, x: int, y: int, radius: int) -> list[tuple[int, int]]:
        """(squared distance, id) of entities within ``radius`` (Euclidean), nearest first."""
        found: list[tuple[int, int]] = []
        self.collect(x, y, radius * radius, self.bucket_range(x, y, radius), found)
        found.sort()
        return found

    def at(self, x: int, y: int) -> list[int]:
        """Ids of entities on exactly this tile, ascending."""
        return sorted(eid for d2, eid in self.near(x, y, 0))
