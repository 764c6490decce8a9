"""``python main.py replay saves/NAME``: verify, inspect or fork a saved world.

The verdict says exactly what was verified and what was not, and the exit status follows
it: 0 only when the whole log replayed and every state hash and snapshot on the way matched
(OK), 3 when part of it could not be verified (PARTLY VERIFIED: damage, lost or unreadable
lines, files set aside), 1 for a divergence, 2 for bad usage. Replaying only reads the
folder; it needs no lock and works on a world that is running.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence import DivergenceError, SaveError, SaveFolder, replay
from agent_world.persistence.eventlog import final_tick
from agent_world.persistence.lock import lock_holder
from agent_world.persistence.replay import ReplayResult, SnapshotMismatch
from agent_world.persistence.snapshots import (
    LoadedSnapshot,
    claimed_tick,
    first_tick,
    load_first_snapshot,
    load_nearest_snapshot,
)
from agent_world.persistence.spans import SetupFactory, verify_in_spans
from agent_world.persistence.worlds import Setup
from agent_world.sandbox import Sandbox
from agent_world.types import TickReport
from agent_world.worldlog import ROUTINE, format_event

__all__ = ["EXIT_DIVERGED", "EXIT_OK", "EXIT_PARTIAL", "EXIT_USAGE", "available_cpus",
           "resolve_world_path", "run_replay", "sandboxed"]

EXIT_OK = 0
EXIT_DIVERGED = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3


class _Playback:
    """Paces the replay at ``speed`` times the world's tick rate and prints the world log."""

    def __init__(self, tick_rate: float, speed: float) -> None:
        self.period = 1.0 / (tick_rate * speed)
        self.deadline = time.monotonic()

    def __call__(self, report: TickReport) -> None:
        for event in report.events:
            if event.get("type") not in ROUTINE:
                print(f"t={report.tick:07d} {format_event(event)}", flush=True)
        self.deadline += self.period
        delay = self.deadline - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            self.deadline = time.monotonic()


def resolve_world_path(path: Path, config: Config) -> Path:
    """``path`` as given if it exists, else the world of that name under ``paths.saves``
    (``replay NAME`` as well as ``replay saves/NAME``)."""
    if path.exists():
        return path
    named = Path(config.paths.saves) / path
    if not path.is_absolute() and named.exists():
        return named
    raise SaveError(f"{path} does not exist, and neither does {named}; give a save folder or "
                    f"the name of a world in {config.paths.saves} (python main.py worlds "
                    "lists them)")


def _count(n: int, noun: str, plural: str = "s") -> str:
    return f"{n} {noun}{'' if n == 1 else plural}"


def available_cpus() -> int:
    """The CPUs this process may run on: how many spans a verification replays at once."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


@contextmanager
def sandboxed(config: Config) -> Iterator[Setup]:
    """The ability sandbox a replayed world runs its abilities in, made in a span's worker
    process (a ``SetupFactory``) and closed when the span is done."""
    with Sandbox(config) as sandbox:
        yield sandbox.install


def _unverified(folder: SaveFolder, result: ReplayResult, reached: int, extent: int,
                to: int | None) -> list[str]:
    """What the replay did not verify, one line each."""
    lines = []
    missing = f"ticks {reached + 1}..{extent}: " if extent > reached else ""
    if result.gap is not None:
        gap = result.gap
        lines.append(f"{missing}the log lost ticks {gap.start}..{gap.tick} ({gap.reason}); "
                     "a replay cannot cross that gap")
    elif result.damaged is not None:
        damage = next((p for p in result.problems if p.startswith(result.damaged.name)),
                      f"{result.damaged.name} is damaged")
        lines.append(f"{missing}{damage}")
    elif missing and (to is None or to > reached):
        lines.append(f"{missing}the folder says the world reached tick {extent}, but no "
                     "log line reaches past tick "
                     f"{max(result.last_logged_tick, reached)}")
    damage_name = result.damaged.name if result.damaged is not None else None
    lines.extend(p for p in result.problems
                 if damage_name is None or not p.startswith(damage_name))
    if to is None:
        lines.extend(f"{path.name}: set aside after damage; it is not part of the log and "
                     "was not replayed" for path in folder.set_aside())
    return lines


def run_replay(path: Path, config: Config, *, to: int | None, playback: float | None,
               setup: Setup | None = None, from_start: bool = False, workers: int = 1,
               setup_factory: SetupFactory | None = None) -> int:
    """Replay with logged inputs only, checking every logged hash and every snapshot on the
    way: from the first snapshot, or with ``to`` (and neither ``from_start`` nor
    ``playback``) from the latest snapshot or seek point at or before it. A verification
    from the first snapshot without ``playback`` uses up to ``workers`` processes
    (``persistence.spans``; each makes what its world needs with ``setup_factory``, as
    ``setup`` does here).

    Prints the verdict (OK, PARTLY VERIFIED or DIVERGED) with what was and was not
    verified. Returns the exit status (EXIT_*)."""
    folder = SaveFolder.open(path)
    holder = lock_holder(folder.root)
    if holder is not None:
        who = f"process {holder}" if holder else "another process"
        print(f"note: world '{folder.name}' is running ({who}); replaying what it has "
              "written so far", file=sys.stderr)
    tick_rate = folder.recorded_tick_rate(config.world.tick_rate)
    if workers > 1 and (to is None or from_start) and not playback:
        status = _verify_in_spans(folder, config, path, to=to, workers=workers,
                                  tick_rate=tick_rate, setup_factory=setup_factory)
        if status is not None:
            return status
    nearest = to is not None and not from_start and not playback
    start = _nearest_start(folder, config, to) if nearest and to is not None \
        else load_first_snapshot(folder, config)
    world = start.world
    try:
        if setup is not None:
            setup(world)
        return _verify(folder, start.tick, world, path, to=to,
                       on_tick=_Playback(tick_rate, playback) if playback else None,
                       tick_rate=tick_rate,
                       began_at=start.source if start.tick != first_tick(folder) else None)
    finally:
        world.close()


def _nearest_start(folder: SaveFolder, config: Config, tick: int) -> LoadedSnapshot:
    """The latest saved state at or before ``tick`` that loads (the first snapshot if
    none does); a damaged one skipped is noted."""
    warnings: list[str] = []
    try:
        return load_nearest_snapshot(folder, config, tick, warnings)
    except SaveError:
        return load_first_snapshot(folder, config)
    finally:
        for line in warnings:
            print(f"note: {line}", file=sys.stderr)


def _verify(folder: SaveFolder, first: int, world: World, path: Path, *, to: int | None,
            on_tick: _Playback | None, tick_rate: float, began_at: Path | None = None) -> int:
    claimed = claimed_tick(folder)
    began = time.perf_counter()
    try:
        result = replay(world, folder, until=to, on_tick=on_tick, check_snapshots=True,
                        end=claimed if to is None else min(to, claimed))
    except DivergenceError as exc:
        return _diverged(exc)
    status = _report(folder, path, result, first=first, reached=world.tick, claimed=claimed,
                     to=to, elapsed=time.perf_counter() - began, tick_rate=tick_rate,
                     began_at=began_at)
    if to is not None and status == EXIT_OK:
        print(f"tick {world.tick} state_hash {world.state_hash()}")
    return status


def _verify_in_spans(folder: SaveFolder, config: Config, path: Path, *, to: int | None,
                     workers: int, tick_rate: float, setup_factory: SetupFactory | None
                     ) -> int | None:
    """The log from its first snapshot (up to ``to``) verified in spans side by side
    (``persistence.spans``); None when it is replayed from the start on one core instead."""
    claimed = claimed_tick(folder)
    began = time.perf_counter()
    try:
        verdict = verify_in_spans(folder, config, workers=workers, until=to,
                                  setup_factory=setup_factory)
    except DivergenceError as exc:
        return _diverged(exc)
    if verdict is None:
        return None
    if isinstance(verdict, str):
        print(f"note: replaying on one core: {verdict}", file=sys.stderr)
        return None
    status = _report(folder, path, verdict.result, first=first_tick(folder),
                     reached=verdict.reached, claimed=claimed, to=to,
                     elapsed=time.perf_counter() - began, tick_rate=tick_rate,
                     processes=verdict.spans)
    if to is not None and status == EXIT_OK:
        print(f"tick {verdict.reached} state_hash {verdict.reached_hash}")
    return status


def _diverged(exc: DivergenceError) -> int:
    if isinstance(exc, SnapshotMismatch):
        print(f"DIVERGED at tick {exc.tick}: {exc.source.name} records state {exc.expected}, "
              f"the replay reached {exc.actual}: the snapshot contradicts the event log",
              file=sys.stderr)
    else:
        print(f"DIVERGED at tick {exc.tick}: the log recorded state {exc.expected}, the "
              f"replay reached {exc.actual}", file=sys.stderr)
    print(f"  {exc.detail}", file=sys.stderr)
    return EXIT_DIVERGED


def _report(folder: SaveFolder, path: Path, result: ReplayResult, *, first: int, reached: int,
            claimed: int, to: int | None, elapsed: float, tick_rate: float,
            began_at: Path | None = None, processes: int = 1) -> int:
    """Print the verdict of a finished replay; returns the exit status."""
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    extent = max(claimed, reached, result.last_logged_tick)
    if result.gap is not None or result.damaged is not None:
        extent = max(extent, final_tick(folder))
    if to is not None and to > extent:
        print(f"error: the log of {path} ends at tick {extent}; --to must be at most that",
              file=sys.stderr)
        return EXIT_USAGE
    unverified = _unverified(folder, result, reached, extent if to is None else to, to)
    if to is not None and reached == first == to and not result.ticks and not unverified:
        # --to a tick a saved state holds: nothing to replay, and a speed of "0.0x real
        # time" over no ticks said nothing true. Say what was checked instead.
        if began_at is None:
            what = "the world's first snapshot"
        else:
            kind = "seek point" if began_at.parent == folder.seek_dir else "snapshot"
            what = f"the {kind} of tick {first} ({began_at.name})"
        print(f"OK: tick {to} is {what}, loaded and checked against its own state hash; no "
              "tick needed replaying" + ("" if began_at is None else
                                        " (--from-start replays the log up to it from the "
                                        "first snapshot, verifying it)"))
        return EXIT_OK
    rate = result.ticks / elapsed if elapsed > 0 else float("inf")
    counts = (f"{result.ticks} ticks, {result.inputs} inputs, {result.checks} state hashes "
              "verified")
    speed = (f"in {elapsed:.2f} s: {rate:,.0f} ticks/s, {rate / tick_rate:,.1f}x real "
             "time" + (f", in {processes} processes" if processes > 1 else ""))
    checked = (f"  checked: {_count(result.checks, 'logged state hash', 'es')}"
               + (f", the last at tick {result.last_check_tick}" if result.checks else "")
               + f"; {_count(result.snapshots_checked, 'snapshot')}"
               + (f", the last at tick {result.last_snapshot_tick}"
                  if result.snapshots_checked else ""))
    span = f"ticks {first + 1}..{reached}" if reached > first else "no ticks"
    origin = ""
    if began_at is not None:
        kind = "seek point" if began_at.parent == folder.seek_dir else "snapshot"
        origin = (f"  from: the {kind} of tick {first} ({began_at.name}); --from-start "
                  "replays from the first snapshot")
    if unverified:
        print(f"PARTLY VERIFIED: replayed {span} of {first + 1}..{extent if to is None else to}"
              f" ({counts}) {speed}")
        if origin:
            print(origin)
        print(checked)
        for line in unverified:
            print(f"  not verified: {line}")
        return EXIT_PARTIAL
    print(f"OK: replayed {span} ({counts}) {speed}")
    if origin:
        print(origin)
    print(checked)
    return EXIT_OK
