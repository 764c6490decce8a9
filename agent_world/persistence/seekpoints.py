"""Seek points: snapshots spaced by what a seek costs, kept within a byte budget, so that
reaching any tick of a recorded world (a fork, ``replay --serve``'s timeline, a resume)
replays about ``persistence.seek_target_ms`` of ticks at most, instead of up to a snapshot
interval.

A seek point is a snapshot file (the format of ``snapshots/``, gzipped at the fastest
level) in ``seek/``. The writer thread makes it from the state bytes it already holds for
the state hash of that tick, so the tick loop pays nothing more; like every snapshot it is
written only after the log before it is fsynced.

Where they fall (``SeekSpacing``): on multiples of ``persistence.seek_interval_ticks``, and
of those only where replaying from the previous point would otherwise take longer than the
target. The cost of a replay is estimated from what this run's ticks cost the main thread:
a replay runs the same systems on the same inputs (and reads the log and checks hashes
where the live world wrote them). A 20-agent world then writes one every few thousand
ticks, a 1,000-agent world one every hundred or so. Wall-clock time decides only where
these files go: they are a cache outside the world's state and the event log, so no hash
or log line depends on it.

Past ``persistence.seek_budget_mb`` every other seek point of the older half is deleted,
so recent ticks stay dense and older ones thin out (a 1,000-agent world takes about 0.8 MB
per seek point).
"""

from __future__ import annotations

import gzip
from pathlib import Path

from agent_world.persistence.files import write_atomic
from agent_world.persistence.folder import SaveFolder, snapshot_files
from agent_world.persistence.snapshots import encode_snapshot

__all__ = ["SeekPoints", "SeekSpacing", "discard_seek_points_after", "write_state_file"]

SEEK_LEVEL = 1  # gzip level: 1.7 MB of state in ~9 ms on the writer thread (1,000 agents)


def write_state_file(path: Path, tick: int, state: bytes) -> int:
    """Write the state bytes of ``tick`` as a snapshot file at ``path`` (atomically);
    returns its size."""
    data = gzip.compress(encode_snapshot(tick, state)[0], SEEK_LEVEL)
    write_atomic(path, data)
    return len(data)


class _Cost:
    """Seconds spent on a number of ticks."""

    __slots__ = ("seconds", "ticks")

    def __init__(self) -> None:
        self.seconds = 0.0
        self.ticks = 0

    def add(self, seconds: float) -> None:
        self.seconds += seconds
        self.ticks += 1

    def per_tick(self) -> float:
        return self.seconds / self.ticks if self.ticks else 0.0


class SeekSpacing:
    """Decides, tick by tick, whether the tick just run becomes a seek point (the main
    thread's; no clock of its own: it is told what each tick cost).

    A point falls on a multiple of ``grid`` (``seek_interval_ticks``; 0: never), and, with
    a ``target_s`` above 0, only when skipping it would let a seek replay longer than
    ``target_s``: the ticks since the last point, plus one more interval up to the next
    multiple, at what they cost. ``last_point`` is the tick replays start from now (the
    newest seek point, or the first snapshot), which may lie before this run: its ticks are
    counted at this run's cost per tick."""

    def __init__(self, grid: int, target_s: float, last_point: int) -> None:
        if grid < 0 or target_s < 0:
            raise ValueError(f"grid and target_s must be >= 0, got {grid} and {target_s}")
        self.grid = grid
        self.target_s = target_s
        self.last_point = last_point
        self._since_point = _Cost()  # this run's ticks after the last point
        self._interval = _Cost()  # this run's ticks after the previous multiple of grid

    def after_tick(self, tick: int, seconds: float) -> bool:
        """Count ``tick``, which cost ``seconds``; True when it is to be a seek point."""
        self._since_point.add(seconds)
        self._interval.add(seconds)
        if self.grid == 0 or tick % self.grid:
            return False
        interval, self._interval = self._interval, _Cost()
        if self.target_s > 0 and self.replay_estimate(tick, interval) <= self.target_s:
            return False
        self.last_point = tick
        self._since_point = _Cost()
        return True

    def replay_estimate(self, tick: int, interval: _Cost) -> float:
        """Seconds a seek to the tick before the next multiple of grid would replay, were
        no point made at ``tick``: the ticks since the last point at their mean cost, and
        the next interval at the cost of the last one (a world that just grew costs more
        from now on)."""
        return (self._since_point.per_tick() * (tick - self.last_point)
                + interval.per_tick() * self.grid)


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
