"""A uniform grid of buckets for "what is near (x, y)" queries.

Derived data: rebuilt from positions when a world is loaded, so bucket order (which depends
on history) never leaks into results; every query returns entities sorted by
(squared distance, id).

Two flavours, because the hot query (perception) runs a thousand times per tick:
a *moving* grid keeps each entity's live Position and is told when it moves; a *static* grid
(items and objects never move) stores ``(x, y, id)`` in its buckets, so a query reads
coordinates without a dictionary lookup. Both also keep, per bucket, everything in the 3x3
block of buckets around it: a query whose radius is at most the cell size always falls
inside that block, so it walks one list instead of nine.
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
        self.width = width
        self.height = height
        self.cols = (width + cell - 1) // cell
        self.rows = (height + cell - 1) // cell
        self.static = static
        count = self.cols * self.rows
        self._buckets: list[list[int]] = [[] for _ in range(count)]
        self._cells: list[list[tuple[int, int, int]]] = (
            [[] for _ in range(count)] if static else [])
        # Each bucket's 3x3 block of buckets, and what the block holds: ids (moving grid) or
        # (x, y, id) (static grid).
        self._blocks: list[tuple[int, ...]] = [self._block_of(b) for b in range(count)]
        self._block_ids: list[list[int]] = [] if static else [[] for _ in range(count)]
        self._block_cells: list[list[tuple[int, int, int]]] = (
            [[] for _ in range(count)] if static else [])
        self._pos: dict[int, _HasXY] = {}
        self._bucket_of: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, eid: object) -> bool:
        return eid in self._pos

    def _bucket(self, x: int, y: int) -> int:
        return (y // self.cell) * self.cols + (x // self.cell)

    def _block_of(self, bucket: int) -> tuple[int, ...]:
        """The buckets whose 3x3 block contains ``bucket`` (the same 3x3 around it)."""
        row, col = divmod(bucket, self.cols)
        return tuple(r * self.cols + c
                     for r in range(max(0, row - 1), min(self.rows, row + 2))
                     for c in range(max(0, col - 1), min(self.cols, col + 2)))

    def insert(self, eid: int, pos: _HasXY) -> None:
        """Track ``pos`` (the entity's live Position component) under ``eid``."""
        if eid in self._pos:
            raise ValueError(f"entity {eid} is already in the grid")
        b = self._bucket(pos.x, pos.y)
        self._pos[eid] = pos
        self._bucket_of[eid] = b
        self._buckets[b].append(eid)
        if self.static:
            entry = (pos.x, pos.y, eid)
            self._cells[b].append(entry)
            for nb in self._blocks[b]:
                self._block_cells[nb].append(entry)
        else:
            for nb in self._blocks[b]:
                self._block_ids[nb].append(eid)

    def remove(self, eid: int) -> None:
        b = self._bucket_of.pop(eid)
        pos = self._pos.pop(eid)
        self._buckets[b].remove(eid)
        if self.static:
            entry = (pos.x, pos.y, eid)
            self._cells[b].remove(entry)
            for nb in self._blocks[b]:
                self._block_cells[nb].remove(entry)
        else:
            for nb in self._blocks[b]:
                self._block_ids[nb].remove(eid)

    def moved(self, eid: int) -> None:
        """Call after changing the entity's position (moving grids only)."""
        if self.static:
            raise ValueError("entities in a static grid do not move; remove and re-insert")
        pos = self._pos[eid]
        cell = self.cell
        b = (pos.y // cell) * self.cols + (pos.x // cell)
        old = self._bucket_of[eid]
        if b == old:
            return
        self._buckets[old].remove(eid)
        self._buckets[b].append(eid)
        self._bucket_of[eid] = b
        before, after = self._blocks[old], self._blocks[b]
        block_ids = self._block_ids
        for nb in before:
            if nb not in after:
                block_ids[nb].remove(eid)
        for nb in after:
            if nb not in before:
                block_ids[nb].append(eid)

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

    def inside(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height

    def collect_block(self, x: int, y: int, r2: int, found: list[tuple[int, int]]) -> None:
        """Like ``collect``, for a point on the map and a radius (sqrt(r2)) of at most the cell
        size: one walk over the 3x3 block of buckets around (x, y)."""
        b = (y // self.cell) * self.cols + (x // self.cell)
        if self.static:
            for ex, ey, eid in self._block_cells[b]:
                d2 = (ex - x) * (ex - x) + (ey - y) * (ey - y)
                if d2 <= r2:
                    found.append((d2, eid))
            return
        pos = self._pos
        for eid in self._block_ids[b]:
            p = pos[eid]
            d2 = (p.x - x) * (p.x - x) + (p.y - y) * (p.y - y)
            if d2 <= r2:
                found.append((d2, eid))

    def near(self, x: int, y: int, radius: int) -> list[tuple[int, int]]:
        """(squared distance, id) of entities within ``radius`` (Euclidean), nearest first."""
        found: list[tuple[int, int]] = []
        if radius <= self.cell and self.inside(x, y):
            self.collect_block(x, y, radius * radius, found)
        else:
            self.collect(x, y, radius * radius, self.bucket_range(x, y, radius), found)
        found.sort()
        return found

    def at(self, x: int, y: int) -> list[int]:
        """Ids of entities on exactly this tile, ascending."""
        return sorted(eid for d2, eid in self.near(x, y, 0))
