"""Run folders under ``paths.runs``: what is in use, what a new run may take, what goes.

A training run (``python main.py train``, ``POST /api/train``) and an evaluation
(``python main.py eval``) each write a folder: every episode a replayable save folder, about
1 MB per 3,000 ticks. Three rules keep that from growing without end:

- **in use**: a run holds the lock of its folder (``RUN/.lock``, the world lock's ``flock``)
  from its start to its end and says what it is in ``RUN/run.json``; a folder whose lock is
  held is never deleted, by hand or by retention. The kernel frees the lock when the process
  ends, ``kill -9`` included.
- **budget**: before a run starts its size is estimated (versions x episodes x ticks x
  ``BYTES_PER_TICK``); one that does not fit in what is left of ``paths.runs_max_bytes``, or
  in the disk's free space, is refused with one line (``RunRefused``).
- **retention**: at start-up and after each run, finished runs past ``paths.runs_keep``
  (the oldest first), older than ``paths.runs_max_age_days``, or past the budget (the
  oldest first) are deleted.

Only folders that are runs (a ``run.json``, or the ``lineage.json``/``results.json`` of
runs made before it) are ever deleted; anything else in ``paths.runs`` is left alone.
"""

from __future__ import annotations

import datetime
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_world.config import PathsConfig
from agent_world.persistence.files import disk_problem, folder_bytes, human_size
from agent_world.persistence.folder import DELETING, LOCK_NAME, SaveError, delete_folder
from agent_world.persistence.lock import WorldInUse, WorldLock, lock_holder

__all__ = ["BYTES_PER_TICK", "MARKER", "RunFolder", "RunInUse", "RunRefused", "RunRow",
           "check_budget", "delete_run", "estimate_bytes", "list_runs",
           "prune_runs"]

BYTES_PER_TICK = 350
"""An episode's save folder per tick, roughly (1 MB per 3,000 ticks with a scenario's few
dozen agents; measured 0.4-0.6 MB with built-in brains, more with policies' traces)."""
MARKER = "run.json"
LEGACY = ("lineage.json", "results.json")  # what runs made before run.json hold
DAY_S = 86_400


class RunRefused(ValueError):
    """A run that would not fit: the message is one line with the figures and the fix."""


class RunInUse(SaveError):
    """Another process (or this one) holds the run folder's lock."""


def estimate_bytes(*, episodes: int, ticks: int) -> int:
    """What ``episodes`` episodes of ``ticks`` ticks write, about."""
    return episodes * ticks * BYTES_PER_TICK


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


# -- one run's folder --------------------------------------------------------------------------


class RunFolder:
    """A run's folder while the run works in it: locked, with ``run.json`` saying what runs
    there. ``finish`` writes when it ended and frees the lock."""

    def __init__(self, root: Path, lock: WorldLock, record: dict[str, Any]) -> None:
        self.root = root
        self.lock = lock
        self.record = record

    @classmethod
    def start(cls, root: Path, *, kind: str, scenario: str, episodes: int, ticks: int
              ) -> RunFolder:
        """Make (or take) ``root`` for a run: RunInUse if another run works there."""
        root.mkdir(parents=True, exist_ok=True)
        try:
            lock = WorldLock.acquire(root, root.name)
        except WorldInUse as exc:
            holder = f"process {exc.pid}" if exc.pid else "another process"
            raise RunInUse(f"run folder {root} is in use by {holder}; wait for that run to "
                           "end, or give another --out") from None
        record = {"kind": kind, "scenario": scenario, "episodes": episodes, "ticks": ticks,
                  "estimate_bytes": estimate_bytes(episodes=episodes, ticks=ticks),
                  "started": _now(), "ended": None, "pid": os.getpid()}
        folder = cls(root, lock, record)
        try:
            folder._write()
        except OSError:
            lock.release()
            raise
        return folder

    def _write(self) -> None:
        path = self.root / MARKER
        temp = path.with_name(MARKER + ".tmp")
        temp.write_bytes(orjson.dumps(self.record, option=orjson.OPT_INDENT_2))
        os.replace(temp, path)

    def finish(self) -> None:
        """The run ended (done, stopped or failed): say when, and free the folder."""
        if not self.lock.held:
            return
        self.record["ended"] = _now()
        try:
            self._write()
        except OSError:
            pass  # a full disk: the folder's age is its files' then; the lock goes anyway
        finally:
            self.lock.release()


# -- listing --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunRow:
    name: str
    kind: str  # train | eval | fork-eval | ? (unreadable run.json)
    scenario: str
    size: int  # bytes on disk
    when: float  # when it ended (started, while it runs), seconds since the epoch
    in_use: int | None  # the pid holding its lock (0: unknown pid), None: free

    @property
    def age_s(self) -> float:
        return max(0.0, time.time() - self.when)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _stamp(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _legacy_holder(root: Path) -> int | None:
    """A run made before run folders were locked is in use while one of its episodes'
    worlds is."""
    for lock in root.glob(f"**/saves/*/{LOCK_NAME}"):
        holder = lock_holder(lock.parent)
        if holder is not None:
            return holder
    return None


def _row(root: Path) -> RunRow | None:
    """The run in ``root``, or None when ``root`` is not a run."""
    marker = root / MARKER
    if marker.is_file():
        try:
            record = orjson.loads(marker.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            record = None
        if not isinstance(record, dict):
            return RunRow(root.name, "?", "?", folder_bytes(root), _mtime(marker),
                          lock_holder(root))
        when = _stamp(record.get("ended")) or _stamp(record.get("started")) or _mtime(marker)
        return RunRow(root.name, str(record.get("kind", "?")),
                      str(record.get("scenario", "?")), folder_bytes(root), when, lock_holder(root))
    for name, kind in zip(LEGACY, ("train", "eval"), strict=True):
        found = root / name
        if found.is_file():
            scenario = "?"
            try:
                doc = orjson.loads(found.read_bytes())
                value = doc.get("scenario") if isinstance(doc, dict) else None
                scenario = str(value.get("name") if isinstance(value, dict) else value)
            except (OSError, orjson.JSONDecodeError):
                pass
            return RunRow(root.name, kind, scenario, folder_bytes(root), _mtime(found),
                          _legacy_holder(root))
    return None


def list_runs(runs: Path) -> tuple[list[RunRow], list[str]]:
    """The runs in ``runs``, oldest first, and a remark on everything else there."""
    if runs.exists() and not runs.is_dir():
        raise SaveError(f"paths.runs = {str(runs)!r} is a file, not a folder; set "
                        "paths.runs to the folder holding the runs")
    if not runs.is_dir():
        return [], []
    rows, others = [], []
    for root in sorted(runs.iterdir()):
        if root.name.startswith("."):
            if DELETING in root.name:
                others.append(f"{root.name}: what remains of an interrupted delete; remove "
                              f"it with: rm -r {root}")
            continue
        row = _row(root) if root.is_dir() and not root.is_symlink() else None
        if row is None:
            others.append(f"{root.name}: not a run (no {MARKER}); left alone")
        else:
            rows.append(row)
    rows.sort(key=lambda r: (r.when, r.name))
    return rows, others


# -- deleting -------------------------------------------------------------------------------------


def _remove(runs: Path, row: RunRow) -> None:
    """Delete the run ``row`` holding its lock; RunInUse if a run works there."""
    root = runs / row.name
    try:
        lock = WorldLock.acquire(root, row.name)
    except WorldInUse as exc:
        holder = f"process {exc.pid}" if exc.pid else "another process"
        raise RunInUse(f"run '{row.name}' is in use by {holder}; stop that run first (or "
                       "wait for it to end), then delete it") from None
    except OSError as exc:
        raise SaveError(f"cannot delete run '{row.name}': {disk_problem(exc, root)}") from None
    try:
        if not (root / MARKER).exists():
            episode = _legacy_holder(root)
            if episode is not None:
                raise RunInUse(f"run '{row.name}' is in use by process {episode} (one of its "
                               "episodes runs); stop it first, then delete it")
        delete_folder(root, f"run '{row.name}'")
    finally:
        lock.release()


def describe(row: RunRow) -> str:
    return (f"run '{row.name}' ({row.kind}, {row.scenario}, {human_size(row.size)}, "
            f"{age_text(row.age_s)} old)")


def age_text(seconds: float) -> str:
    for unit, size in (("d", DAY_S), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}" if unit != "d" else f"{seconds / size:.1f}d"
    return f"{seconds:.0f}s"


def delete_run(runs: Path, name: str, *, confirm: Callable[[str], bool]) -> str | None:
    """Delete the run ``name`` in ``runs`` if ``confirm(question)`` agrees. Returns what
    was deleted (None: not confirmed); SaveError when it is not a run, is in use, or cannot
    be deleted."""
    if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
        raise SaveError(f"{name!r} is not a run's name (a folder of paths.runs); 'python "
                        "main.py runs' lists them")
    root = runs / name
    if root.is_symlink():
        raise SaveError(f"{root} is a symbolic link; nothing was deleted: remove the link by "
                        "hand")
    if not root.is_dir():
        raise SaveError(f"there is no run '{name}' in {runs}; 'python main.py runs' lists "
                        "them")
    row = _row(root)
    if row is None:
        raise SaveError(f"{root} is not a run (no {MARKER}); nothing was deleted: remove it "
                        "by hand if you mean to")
    if row.in_use is not None:
        holder = f"process {row.in_use}" if row.in_use else "another process"
        raise RunInUse(f"run '{name}' is in use by {holder}; stop that run first (or wait "
                       "for it to end), then delete it")
    what = describe(row)
    if not confirm(f"Delete {what}? This cannot be undone. [y/N] "):
        return None
    _remove(runs, row)
    return f"deleted {what}"


# -- retention and budget -------------------------------------------------------------------------


def _doomed(rows: list[RunRow], paths: PathsConfig, spare: set[str]
            ) -> Iterator[tuple[RunRow, str]]:
    """The finished runs retention deletes, oldest first, each with the rule that takes it."""
    free = [r for r in rows if r.in_use is None and r.name not in spare]
    chosen: dict[str, str] = {}
    if paths.runs_max_age_days:
        limit = paths.runs_max_age_days * DAY_S
        for row in free:
            if row.age_s > limit:
                chosen[row.name] = (f"older than paths.runs_max_age_days "
                                    f"{paths.runs_max_age_days:g}")
    if paths.runs_keep:
        finished = [r for r in rows if r.in_use is None]
        extra = len(finished) - paths.runs_keep
        for row in free:
            if extra <= 0:
                break
            if row.name not in chosen:
                chosen[row.name] = f"more than paths.runs_keep {paths.runs_keep}"
            extra -= 1
    if paths.runs_max_bytes:
        total = sum(r.size for r in rows if r.name not in chosen)
        for row in free:
            if total <= paths.runs_max_bytes:
                break
            if row.name not in chosen:
                chosen[row.name] = (f"past the budget paths.runs_max_bytes "
                                    f"{human_size(paths.runs_max_bytes)}")
                total -= row.size
    for row in free:
        if row.name in chosen:
            yield row, chosen[row.name]


def prune_runs(paths: PathsConfig, *, spare: Path | None = None) -> list[str]:
    """Apply the retention settings to ``paths.runs``: one line per run deleted (or that
    could not be). ``spare``: a run just made, never deleted here."""
    runs = Path(paths.runs)
    try:
        rows, _others = list_runs(runs)
    except SaveError as exc:
        return [str(exc)]
    keep = {spare.name} if spare is not None and spare.parent.resolve() == runs.resolve() \
        else set()
    said = []
    for row, why in _doomed(rows, paths, keep):
        try:
            _remove(runs, row)
        except RunInUse:
            continue  # it started being used since it was listed: it stays
        except SaveError as exc:
            said.append(f"retention: {exc}")
            continue
        said.append(f"retention: deleted {describe(row)}: {why}")
    return said


def _existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def check_budget(paths: PathsConfig, out: Path, *, episodes: int, ticks: int,
                 what: str) -> int:
    """Refuse (RunRefused, one line) a run into ``out`` of ``episodes`` episodes of
    ``ticks`` ticks that would pass ``paths.runs_max_bytes`` (when ``out`` is in
    ``paths.runs``) or the free space of its disk. ``what`` says how the episodes were
    counted (``"6 versions x 3 episodes"``). Returns the estimate."""
    estimate = estimate_bytes(episodes=episodes, ticks=ticks)
    said = (f"this run would write about {human_size(estimate)} ({what} x {ticks:,} ticks, "
            f"about {BYTES_PER_TICK} bytes a tick)")
    runs = Path(paths.runs)
    inside = out.resolve().parent == runs.resolve() or runs.resolve() in out.resolve().parents
    if paths.runs_max_bytes and inside:
        try:
            rows, _others = list_runs(runs)
        except SaveError as exc:
            raise RunRefused(str(exc)) from None
        used = sum(r.size for r in rows if r.name != out.name)
        left = paths.runs_max_bytes - used
        if estimate > left:
            raise RunRefused(
                f"{said}, more than the {human_size(max(0, left))} left of the runs' disk "
                f"budget (paths.runs_max_bytes {human_size(paths.runs_max_bytes)}, "
                f"{human_size(used)} used by {len(rows)} run{'s' if len(rows) != 1 else ''}): "
                "ask for fewer iterations, episodes or ticks, delete old runs (python main.py "
                "runs delete NAME) or raise paths.runs_max_bytes")
    try:
        free = shutil.disk_usage(_existing(out)).free
    except OSError:
        return estimate  # cannot be told: the budget above is the bound
    if estimate > free:
        raise RunRefused(f"{said}, more than the {human_size(free)} free on the disk holding "
                         f"{out}: ask for fewer iterations, episodes or ticks, or free some "
                         "space (python main.py runs delete NAME)")
    return estimate
