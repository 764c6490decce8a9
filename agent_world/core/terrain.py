"""The map: tile kinds, what blocks walking, and where things may be placed."""

from __future__ import annotations

import base64
import random
import zlib
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator, Sequence
from itertools import compress, islice
from typing import Any, overload

__all__ = ["GRASS", "ROCK", "TILE_NAMES", "WATER", "OpenTiles", "Terrain"]

GRASS, WATER, ROCK = 0, 1, 2
TILE_NAMES = {GRASS: "grass", WATER: "water", ROCK: "rock"}
_RUN = 64  # tiles per run of OpenTiles' running counts
_BLOCKS = bytes(0 if kind == GRASS else 1 for kind in range(256))  # tile kind -> blocks?


class Terrain:
    """A width x height grid of tile kinds plus a blocked mask.

    ``blocked[i]`` counts what blocks tile ``i``: blocking terrain and blocking objects
    (a count, so an object on an already blocked tile can be removed cleanly).
    ``open_tiles`` lists the walkable tiles of the largest connected area, ascending, where
    things are placed; it is derived, never saved (see ``OpenTiles`` for its compact form).

    ``coords[n]`` is the int ``n`` for every coordinate of the map, one shared object each:
    the positions ``random_open_tile`` hands out (every object and item spawned at random,
    every newcomer) reuse them instead of holding two ints of their own, 32 bytes each above
    256 (about 0.4 KB per agent at the benchmark's density)."""

    def __init__(self, width: int, height: int, tiles: bytearray) -> None:
        if len(tiles) != width * height:
            raise ValueError(f"tiles has {len(tiles)} entries, expected {width}x{height}")
        self.width = width
        self.height = height
        self.tiles = tiles
        self.blocked = bytearray(1 if t != GRASS else 0 for t in tiles)
        self.open_tiles = self._largest_area()
        self.coords = tuple(range(max(width, height)))
        self._packed: str | None = None  # tiles never change: encode them once

    @classmethod
    def sharing_area(cls, width: int, height: int, tiles: bytearray,
                     open_tiles: Sequence[int]) -> Terrain:
        """A terrain of known tiles whose placement area was found before (a scratch copy of
        a world: finding the area again takes a second on the largest maps). Nothing blocks
        but the tiles themselves; ``open_tiles`` is only read."""
        if len(tiles) != width * height:
            raise ValueError(f"tiles has {len(tiles)} entries, expected {width}x{height}")
        terrain = cls.__new__(cls)
        terrain.width = width
        terrain.height = height
        terrain.tiles = tiles
        terrain.blocked = bytearray(tiles.translate(_BLOCKS))
        terrain.open_tiles = open_tiles if isinstance(open_tiles, OpenTiles) \
            else OpenTiles.of(width * height, open_tiles)
        terrain.coords = tuple(range(max(width, height)))
        terrain._packed = None
        return terrain

    # -- generation ------------------------------------------------------------------------

    @classmethod
    def generate(cls, width: int, height: int, rng: random.Random,
                 obstacle_density: float) -> Terrain:
        """Lakes (round blobs) and rock ridges (random walks) until the density is met."""
        tiles = bytearray(width * height)
        target = int(width * height * obstacle_density)
        covered = 0
        while covered < target:
            if rng.random() < 0.55:
                covered += cls._lake(tiles, width, height, rng, target - covered)
            else:
                covered += cls._ridge(tiles, width, height, rng, target - covered)
        return cls(width, height, tiles)

    @staticmethod
    def _lake(tiles: bytearray, w: int, h: int, rng: random.Random, budget: int) -> int:
        cx, cy = rng.randrange(w), rng.randrange(h)
        r = rng.randint(2, max(2, min(7, w // 8, h // 8)))
        added = 0
        for y in range(max(0, cy - r), min(h, cy + r + 1)):
            for x in range(max(0, cx - r), min(w, cx + r + 1)):
                if (x - cx) ** 2 + (y - cy) ** 2 <= r * r and tiles[y * w + x] == GRASS:
                    tiles[y * w + x] = WATER
                    added += 1
                    if added >= budget:
                        return added
        return max(added, 1)

    @staticmethod
    def _ridge(tiles: bytearray, w: int, h: int, rng: random.Random, budget: int) -> int:
        x, y = rng.randrange(w), rng.randrange(h)
        dx, dy = rng.choice(((1, 0), (0, 1), (1, 1), (1, -1)))
        added = 0
        for _ in range(rng.randint(4, 14)):
            if 0 <= x < w and 0 <= y < h and tiles[y * w + x] == GRASS:
                tiles[y * w + x] = ROCK
                added += 1
                if added >= budget:
                    break
            if rng.random() < 0.3:
                dx, dy = rng.choice(((1, 0), (0, 1), (1, 1), (1, -1)))
            x, y = x + dx, y + dy
        return max(added, 1)

    def _largest_area(self) -> OpenTiles:
        w, h, tiles = self.width, self.height, self.tiles
        seen = bytearray(w * h)
        best: array[int] = array("I")
        for start in range(w * h):
            if seen[start] or tiles[start] != GRASS:
                continue
            area = array("I", [start])  # C ints: no Python int is kept per tile
            seen[start] = 1
            queue = deque([start])
            while queue:
                i = queue.popleft()
                x, y = i % w, i // w
                for nx, ny in ((x, y - 1), (x + 1, y), (x, y + 1), (x - 1, y)):
                    if 0 <= nx < w and 0 <= ny < h:
                        j = ny * w + nx
                        if not seen[j] and tiles[j] == GRASS:
                            seen[j] = 1
                            area.append(j)
                            queue.append(j)
            if len(area) > len(best):
                best = area
        return OpenTiles.of(w * h, best)

    # -- queries -----------------------------------------------------------------------------

    def in_bounds(self, x: int, y: int) -> bool:
        return 0 <= x < self.width and 0 <= y < self.height

    def is_blocked(self, x: int, y: int) -> bool:
        return not self.in_bounds(x, y) or self.blocked[y * self.width + x] > 0

    def xy(self, i: int) -> tuple[int, int]:
        """The coordinates of tile index ``i`` (as the shared ``coords`` ints)."""
        coords, w = self.coords, self.width
        return coords[i % w], coords[i // w]

    def tile_name(self, x: int, y: int) -> str:
        return TILE_NAMES[self.tiles[y * self.width + x]]

    def block(self, x: int, y: int) -> None:
        self.blocked[y * self.width + x] += 1

    def unblock(self, x: int, y: int) -> None:
        i = y * self.width + x
        if self.blocked[i] == 0:
            raise ValueError(f"tile ({x}, {y}) is not blocked")
        self.blocked[i] -= 1

    def random_open_tile(self, rng: random.Random, tries: int = 64) -> tuple[int, int] | None:
        """A random unblocked tile of the main area, or None if none was found."""
        if not self.open_tiles:
            return None
        for _ in range(tries):
            i = self.open_tiles[rng.randrange(len(self.open_tiles))]
            if not self.blocked[i]:
                return self.xy(i)
        return None

    # -- state -------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        if self._packed is None:
            self._packed = base64.b64encode(zlib.compress(bytes(self.tiles), 6)).decode("ascii")
        return {"width": self.width, "height": self.height, "tiles": self._packed}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Terrain:
        tiles = bytearray(zlib.decompress(base64.b64decode(state["tiles"])))
        return cls(int(state["width"]), int(state["height"]), tiles)


class OpenTiles(Sequence[int]):
    """A set of tile indices as a read-only ascending sequence, stored as a mask (a byte a
    tile) and the number of members before each run of 64 tiles.

    The placement area holds nearly every tile of a large map, and ``random_open_tile``
    needs its n-th member: a list of Python ints costs 40 bytes a tile (about 7 KB per agent
    at the benchmark's density), this a little over one byte. The n-th member is a
    bisection over the run counts and a walk over at most one run: about a microsecond,
    where a list takes a few tens of nanoseconds (a tick draws a few dozen)."""

    __slots__ = ("_before", "_len", "_mask")

    def __init__(self, mask: bytes) -> None:
        """``mask[i]`` is 1 for a member, 0 otherwise."""
        self._mask = mask
        before = array("I")
        total = 0
        for start in range(0, len(mask), _RUN):
            before.append(total)
            total += mask.count(1, start, start + _RUN)
        self._before = before
        self._len = total

    @classmethod
    def of(cls, size: int, members: Sequence[int]) -> OpenTiles:
        """The set of ``members`` among tiles 0 .. size - 1."""
        mask = bytearray(size)
        for i in members:
            mask[i] = 1
        return cls(bytes(mask))

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, n: int) -> int: ...
    @overload
    def __getitem__(self, n: slice) -> list[int]: ...
    def __getitem__(self, n: int | slice) -> int | list[int]:
        if isinstance(n, slice):
            return [self[k] for k in range(*n.indices(self._len))]
        if n < 0:
            n += self._len
        if not 0 <= n < self._len:
            raise IndexError("open tile index out of range")
        run = bisect_right(self._before, n) - 1  # last run with <= n members before it
        start = run * _RUN
        found = compress(range(start, start + _RUN), self._mask[start:start + _RUN])
        return next(islice(found, n - self._before[run], None))

    def __iter__(self) -> Iterator[int]:
        return compress(range(len(self._mask)), self._mask)

    def __contains__(self, tile: object) -> bool:
        return isinstance(tile, int) and 0 <= tile < len(self._mask) and self._mask[tile] == 1
