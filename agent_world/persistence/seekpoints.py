"""Seek points: frequent snapshots kept within a byte budget, so that reaching any tick of a
recorded world (a fork, ``replay --serve``'s timeline, a resume) replays at most
``persistence.seek_interval_ticks`` ticks instead of up to a snapshot interval.

A seek point is a snapshot file (the format of ``snapshots/``, gzipped at the fastest
level) in ``seek/``. The writer thread makes it from the state bytes it already holds for
the state hash of that tick, so the tick loop pays nothing more; like every snapshot it is
written only after the log before it is fsynced. Past ``persistence.seek_budget_mb`` every
other seek point of the older half is deleted, so recent ticks stay dense and older ones
thin out (a 1,000-agent world takes about 0.8 MB per seek point, 280 MB per hour: the
default budget keeps three and a half hours at every 100 ticks before thinning starts).
"""

from __future__ import annotations

import gzip
from pathlib import Path

from agent_world.persistence.files import write_atomic
from agent_world.persistence.folder import SaveFolder, snapshot_files
from agent_world.persistence.snapshots import encode_snapshot

__all__ = ["SeekPoints", "discard_seek_points_after", "write_state_file"]

SEEK_LEVEL = 1  # gzip level: 1.7 MB of state in ~9 ms on the writer thread (1,000 agents)


def write_state_file(path: Path, tick: int, state: bytes) -> int:
    """Write the state bytes of ``tick`` as a snapshot file at ``path`` (atomically);
    returns its size."""
    data = gzip.compress(encode_snapshot(tick, state)[0], SEEK_LEVEL)
    write_atomic(path, data)
    return len(data)


class SeekPoints:
    """The seek points of one folder and their budget (the writer thread's)."""

    def __init__(self, folder: SaveFolder, budget_bytes: int) -> None:
        self.folder = folder
        self.budget = budget_bytes
        self.sizes: dict[int, int] = {}
        for tick, path in snapshot_files(folder.seek_dir):
            try:
                self.sizes[tick] = path.stat().st_size
            except OSError:
                continue
        self.total = sum(self.sizes.values())
        self.deleted = 0
        self.failed = 0  # not written (the disk refused); the next one may be

    def add(self, tick: int, state: bytes) -> None:
        self.folder.seek_dir.mkdir(exist_ok=True)
        size = write_state_file(self.folder.seek_path(tick), tick, state)
        self.total += size - self.sizes.get(tick, 0)
        self.sizes[tick] = size
        self._thin()

    def _thin(self) -> None:
        while self.total > self.budget and len(self.sizes) > 1:
            ticks = sorted(self.sizes)
            older = ticks[: len(ticks) // 2]
            for tick in older[1::2] or older[:1]:
                self.folder.seek_path(tick).unlink(missing_ok=True)
                self.total -= self.sizes.pop(tick)
                self.deleted += 1


def discard_seek_points_after(folder: SaveFolder, tick: int) -> int:
    """Delete the seek points past ``tick``: a world resumed at ``tick`` (its log lost what
    came after) makes new ones from there, and the old ones belong to a lost future."""
    stale = [path for at, path in snapshot_files(folder.seek_dir) if at > tick]
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)
