"""A uniform grid of buckets for "what is near (x, y)" queries.

Derived data: rebuilt from positions when a world is loaded, so bucket order (which depends
on history) never leaks into results; every query returns entities sorted by
(squared distance, id).

Two flavours, because the hot query (perception) runs a thousand times per tick:
a *moving* grid keeps each entity's live Position and is told when it moves; a *static* grid
(items and objects never move) stores ``(x, y, id)`` in its buckets, so a query reads
coordinates without a dictionary lookup. Both also keep, per bucket, everything in the 3x3
block of buckets around it: a query whose radius is at most the cell size always falls
inside that block, so it walks one bucket instead of nine.

Memory: a large map has tens of thousands of buckets, so nothing per bucket is kept that is
not read. Which buckets make up a block is computed when an entity enters or leaves one
(rare) rather than stored (nine ints a bucket, about 4 KB per agent over the three grids at
the benchmark's density); a static grid keeps no id-only buckets (its queries read the
``(x, y, id)`` ones) and no entity -> bucket map (its entities never move, so the bucket
follows from the position). Buckets are tuples, replaced whole when an entity enters or
leaves: a tuple of a few entries is about two thirds the size of a list (no separate array,
no spare room), the empty one is shared (most buckets of the agents' and items' grids are
empty), and rebuilding a bucket of a few entries costs a microsecond or two more than a list's
append and remove, for the few hundred entries and departures of a 5,000-agent tick.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, TypeVar

__all__ = ["SpatialGrid"]

T = TypeVar("T")


def _put(buckets: list[tuple[T, ...]], i: int, value: T) -> None:
    """Add ``value`` to bucket ``i``."""
    buckets[i] += (value,)


def _take(buckets: list[tuple[T, ...]], i: int, value: T) -> None:
    """Remove ``value`` (ValueError if it is not there) from bucket ``i``."""
    bucket = buckets[i]
    at = bucket.index(value)
    buckets[i] = bucket[:at] + bucket[at + 1:]


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
        # Per bucket, what it holds and what its 3x3 block holds: ids (moving grid) or
        # (x, y, id) (static grid); each grid keeps only its own flavour.
        self._buckets: list[tuple[int, ...]] = [] if static else [()] * count
        self._cells: list[tuple[tuple[int, int, int], ...]] = [()] * count if static else []
        self._block_ids: list[tuple[int, ...]] = [] if static else [()] * count
        self._block_cells: list[tuple[tuple[int, int, int], ...]] = (
            [()] * count if static else [])
        self._pos: dict[int, _HasXY] = {}
        self._bucket_of: dict[int, int] = {}  # moving grid only
        # A bucket's 3x3 block, as offsets from it (for buckets not on the map's edge).
        self._around = tuple(dr * self.cols + dc for dr in (-1, 0, 1) for dc in (-1, 0, 1))

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, eid: object) -> bool:
        return eid in self._pos

    def __iter__(self) -> Iterator[int]:
        """The ids it holds, in the order they came."""
        return iter(self._pos)

    def _bucket(self, x: int, y: int) -> int:
        return (y // self.cell) * self.cols + (x // self.cell)

    def _block_of(self, bucket: int) -> tuple[int, ...]:
        """The buckets whose 3x3 block contains ``bucket`` (the same 3x3 around it)."""
        cols = self.cols
        row, col = divmod(bucket, cols)
        if 0 < row < self.rows - 1 and 0 < col < cols - 1:  # inside: all nine, the fast way
            return tuple(map(bucket.__add__, self._around))
        return tuple(r * cols + c
                     for r in range(max(0, row - 1), min(self.rows, row + 2))
                     for c in range(max(0, col - 1), min(cols, col + 2)))

    def insert(self, eid: int, pos: _HasXY) -> None:
        """Track ``pos`` (the entity's live Position component) under ``eid``."""
        if eid in self._pos:
            raise ValueError(f"entity {eid} is already in the grid")
        b = self._bucket(pos.x, pos.y)
        self._pos[eid] = pos
        if self.static:
            entry = (pos.x, pos.y, eid)
            _put(self._cells, b, entry)
            for nb in self._block_of(b):
                _put(self._block_cells, nb, entry)
        else:
            self._bucket_of[eid] = b
            _put(self._buckets, b, eid)
            for nb in self._block_of(b):
                _put(self._block_ids, nb, eid)

    def remove(self, eid: int) -> None:
        pos = self._pos.pop(eid)
        if self.static:
            b = self._bucket(pos.x, pos.y)
            entry = (pos.x, pos.y, eid)
            _take(self._cells, b, entry)
            for nb in self._block_of(b):
                _take(self._block_cells, nb, entry)
        else:
            b = self._bucket_of.pop(eid)
            _take(self._buckets, b, eid)
            for nb in self._block_of(b):
                _take(self._block_ids, nb, eid)

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
        _take(self._buckets, old, eid)
        _put(self._buckets, b, eid)
        self._bucket_of[eid] = b
        before, after = self._block_of(old), self._block_of(b)
        block_ids = self._block_ids
        for nb in before:
            if nb not in after:
                _take(block_ids, nb, eid)
        for nb in after:
            if nb not in before:
                _put(block_ids, nb, eid)

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

    def ids_in_block(self, x: int, y: int, r2: int) -> list[int]:
        """Ids of the entities within sqrt(r2) of (x, y), nearest first (then by id), under
        the conditions of ``collect_block``: the hot query of perception, in one call."""
        found: list[tuple[int, int]] = []
        self.collect_block(x, y, r2, found)
        if len(found) > 1:
            found.sort()
        return [eid for _d2, eid in found]

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
