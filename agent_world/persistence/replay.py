"""Re-running a world from a snapshot with only the inputs its log recorded.

Used three ways: resume (latest good snapshot, then every logged tick), ``replay`` (from the
first snapshot, checking every recorded hash) and fork (replay to a tick, continue elsewhere).
No LLM, no angel, no network: only logged inputs reach the world.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_world.core.world import World, hash_state_bytes
from agent_world.persistence.eventlog import LogReader
from agent_world.persistence.folder import SaveError, SaveFolder
from agent_world.persistence.snapshots import SNAPSHOT_HEAD, load_snapshot_file, state_file_tick
from agent_world.types import Input, TickReport

__all__ = ["DivergenceError", "Gap", "LogStepper", "ReplayResult", "SnapshotMismatch",
           "describe_difference", "replay"]


class DivergenceError(Exception):
    """The replayed world's hash differs from the one the log recorded."""

    def __init__(self, tick: int, expected: str, actual: str, detail: str) -> None:
        super().__init__(f"diverged at tick {tick}: logged hash {expected}, replayed {actual}"
                         f"\n{detail}")
        self.tick = tick
        self.expected = expected
        self.actual = actual
        self.detail = detail
        self.report: TickReport | None = None  # the tick that diverged (a LogStepper's)


class SnapshotMismatch(DivergenceError):
    """A snapshot that is whole (its bytes match its own hash) records a different state
    than the replay reaches at its tick: it contradicts the event log."""

    def __init__(self, tick: int, expected: str, actual: str, detail: str,
                 source: Path) -> None:
        super().__init__(tick, expected, actual, detail)
        self.args = (f"diverged at tick {tick}: {source.name} records state {expected}, "
                     f"replayed {actual}\n{detail}",)
        self.source = source


@dataclass(frozen=True, slots=True)
class Gap:
    """A ``gap`` marker: the log lost the lines of ticks ``start``..``tick`` (damage found
    when the world resumed from its snapshot at ``tick``); no replay can cross it."""

    start: int
    tick: int
    reason: str


@dataclass
class ReplayResult:
    ticks: int = 0
    checks: int = 0
    inputs: int = 0
    last_logged_tick: int = -1
    warnings: list[str] = field(default_factory=list)
    torn_tail: tuple[Path, int] | None = None
    damaged: Path | None = None  # a gzip chunk whose damage ended the readable log
    last_check_tick: int = -1  # the last tick whose logged state hash was verified
    snapshots_checked: int = 0  # snapshots compared with the replayed state at their tick
    last_snapshot_tick: int = -1
    problems: list[str] = field(default_factory=list)  # lines the reader could not use
    notes: list[str] = field(default_factory=list)  # the reader's other remarks
    torn: list[tuple[Path, int]] = field(default_factory=list)
    later_files: list[Path] = field(default_factory=list)  # after ``damaged``: unusable
    gap: Gap | None = None  # the gap marker the replay stopped at


class _Records:
    """Log records grouped by tick, with one record of look-ahead."""

    def __init__(self, reader: LogReader) -> None:
        self._it: Iterator[dict[str, Any]] = iter(reader)
        self._next: dict[str, Any] | None = next(self._it, None)

    def exhausted(self) -> bool:
        return self._next is None

    def gap_ahead(self) -> Gap | None:
        """The gap marker that comes next, if one does."""
        rec = self._next
        if rec is None or rec.get("kind") != "marker" or rec.get("type") != "gap":
            return None
        start = rec.get("from")
        return Gap(start if isinstance(start, int) else rec["tick"], rec["tick"],
                   str(rec.get("reason", "")))

    def take(self, tick: int) -> tuple[list[Input], str | None]:
        """Inputs and the state hash logged for ``tick`` (records for earlier ticks, which a
        resumed run can leave behind, are passed over)."""
        inputs: list[Input] = []
        check = None
        while self._next is not None and self._next["tick"] <= tick:
            rec = self._next
            self._next = next(self._it, None)
            if rec["tick"] < tick:
                continue
            kind = rec.get("kind")
            if kind == "input":
                inputs.append(Input.from_dict(rec))
            elif kind == "check":
                check = rec.get("hash")
        inputs.sort(key=lambda i: i.seq)
        return inputs, check


def describe_difference(expected: Any, actual: Any, path: str = "") -> str | None:
    """The first place two states differ, named by entity, component and field."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected.keys() | actual.keys():
            if key not in actual:
                return f"{path}{key}: only in the saved state"
            if key not in expected:
                return f"{path}{key}: only in the replayed state"
        # Entities first: "which entity, which component, which field" is the useful answer.
        for key in sorted(expected, key=lambda k: k != "entities"):
            found = describe_difference(expected[key], actual[key], f"{path}{key}.")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if path == "entities.":
            return _entities_difference(expected, actual)
        if len(expected) != len(actual):
            return f"{path.rstrip('.')}: {len(expected)} entries saved, {len(actual)} replayed"
        for i, (a, b) in enumerate(zip(expected, actual, strict=True)):
            found = describe_difference(a, b, f"{path}{i}.")
            if found:
                return found
        return None
    if expected != actual:
        return f"{path.rstrip('.')}: saved {expected!r}, replayed {actual!r}"
    return None


def _entities_difference(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> str:
    saved = {row["id"]: row for row in expected}
    replayed = {row["id"]: row for row in actual}
    for eid in sorted(saved.keys() | replayed.keys()):
        if eid not in replayed:
            return f"entity #{eid}: exists in the saved state only"
        if eid not in saved:
            return f"entity #{eid}: exists in the replayed state only"
        a, b = saved[eid], replayed[eid]
        who = a.get("Agent", {}).get("name") or a.get("Item", {}).get("kind") or ""
        label = f"entity #{eid}{f' ({who})' if who else ''}"
        for comp in a.keys() | b.keys():
            if comp not in b or comp not in a:
                return f"{label}: component {comp} is missing on one side"
        for comp in a:
            if comp == "id":
                continue
            found = describe_difference(a[comp], b[comp], "")
            if found:
                return f"{label} component {comp} field {found}"
    return "entities: same content, different order"


def _explain(folder: SaveFolder, world: World, tick: int) -> str:
    """Name what differs: replay on to the next saved snapshot and compare field by field."""
    candidates = [(t, p) for t, p in folder.history() if t >= tick]
    if folder.state_path.exists():
        candidates.append((10**18, folder.state_path))  # its tick is inside the file
    for _t, path in candidates:
        try:
            saved = load_snapshot_file(path, world.config)
        except SaveError:
            continue  # a damaged snapshot cannot explain anything; try the next one
        try:
            if saved.tick < tick:
                continue
            if saved.tick > world.tick:
                replay(world, folder, until=saved.tick, verify=False)
            if world.tick != saved.tick:
                continue
            found = describe_difference(orjson.loads(saved.world.state_bytes()),
                                        orjson.loads(world.state_bytes()))
            where = "" if saved.tick == tick else f" (compared at snapshot tick {saved.tick})"
            return f"first difference{where}: {found}"
        finally:
            saved.world.close()
    return ("no snapshot was saved at or after that tick to compare fields against; the "
            "divergence happened after the previous state check")


def _snapshot_files(folder: SaveFolder, after: int, until: int | None) -> dict[int, Path]:
    """Snapshot files by tick, for ticks after ``after`` (and up to ``until``)."""
    found = {t: p for t, p in folder.history() if t > after and (until is None or t <= until)}
    tick = state_file_tick(folder)
    if tick is not None and tick > after and (until is None or tick <= until):
        found.setdefault(tick, folder.state_path)
    return found


def _whole_snapshot_hash(path: Path) -> str | None:
    """The hash a snapshot file records, if its state bytes still match it (else None: a
    damaged file proves nothing)."""
    try:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if path.suffix == ".gz" else raw
    except (OSError, EOFError, zlib.error):
        return None
    head = SNAPSHOT_HEAD.match(data)
    if head is None or not data.endswith(b"}"):
        return None
    digest = head.group(2).decode("ascii")
    return digest if hash_state_bytes(data[head.end():-1]) == digest else None


class LogStepper:
    """Steps a world one tick at a time with the inputs its log recorded, verifying each
    logged state hash (unless ``verify`` is off): ``replay`` runs it to an end, a served
    replay runs it at the pace its viewer asks for.

    ``end``: when the log reads to its end without damage, step on (without inputs: a tick
    with none leaves no line) through this tick, the last one the folder says the world
    reached."""

    def __init__(self, world: World, folder: SaveFolder, *, verify: bool = True,
                 end: int | None = None) -> None:
        self.world = world
        self.folder = folder
        self.verify = verify
        self.end = end
        self.reader = LogReader(folder, from_tick=world.tick + 1)
        self._records = _Records(self.reader)
        self.ticks = 0
        self.inputs = 0
        self.checks = 0
        self.last_check_tick = -1
        self.gap: Gap | None = None  # the gap marker ahead, once the world reached it

    def more(self) -> bool:
        """Whether the log (or ``end``) holds another tick this world can step to."""
        world = self.world
        gap = self._records.gap_ahead()
        if gap is not None and world.tick + 1 >= gap.start:
            self.gap = gap
            return False
        if not self._records.exhausted():
            return True
        return self.end is not None and world.tick < self.end and \
            self.reader.stopped_at is None

    def step(self) -> TickReport:
        """The next tick with its logged inputs. Raises DivergenceError if the logged
        state hash of the tick differs from the world's."""
        world = self.world
        tick = world.tick + 1
        inputs, check = self._records.take(tick)
        report = world.step(inputs)
        self.ticks += 1
        self.inputs += len(inputs)
        if check is not None and self.verify:
            actual = world.state_hash()
            if actual != check:
                exc = DivergenceError(tick, check, actual, _explain(self.folder, world, tick))
                exc.report = report
                raise exc
            self.checks += 1
            self.last_check_tick = tick
        return report


def replay(
    world: World,
    folder: SaveFolder,
    *,
    until: int | None = None,
    on_tick: Callable[[TickReport], None] | None = None,
    verify: bool = True,
    check_snapshots: bool = False,
    end: int | None = None,
) -> ReplayResult:
    """Step ``world`` forward with the logged inputs after its tick, verifying every logged
    state hash (unless ``verify`` is off), up to ``until``, the end of the log or a gap
    marker. With ``check_snapshots`` every whole snapshot passed on the way is compared too.
    ``end`` as for ``LogStepper``.

    Raises DivergenceError at the first hash that differs."""
    result = ReplayResult()
    stepper = LogStepper(world, folder, verify=verify, end=end)
    snapshots = _snapshot_files(folder, world.tick, until) if verify and check_snapshots \
        else {}
    while (until is None or world.tick < until) and stepper.more():
        report = stepper.step()
        if on_tick is not None:
            on_tick(report)
        if world.tick in snapshots:
            _check_snapshot(folder, world, snapshots[world.tick], result)
    reader = stepper.reader
    result.ticks, result.inputs, result.checks = stepper.ticks, stepper.inputs, stepper.checks
    result.last_check_tick, result.gap = stepper.last_check_tick, stepper.gap
    result.last_logged_tick = reader.last_tick
    result.warnings.extend(reader.warnings)
    result.problems.extend(reader.problems)
    result.notes.extend(reader.notes)
    result.torn = list(reader.torn)
    result.torn_tail = reader.torn_tail
    result.damaged = reader.stopped_at
    result.later_files = list(reader.later_files)
    return result


def _check_snapshot(folder: SaveFolder, world: World, path: Path,
                    result: ReplayResult) -> None:
    recorded = _whole_snapshot_hash(path)
    if recorded is None:
        result.notes.append(f"{path.name} (tick {world.tick}) is damaged; not compared")
        return
    actual = world.state_hash()
    if actual != recorded:
        raise SnapshotMismatch(world.tick, recorded, actual,
                               _explain(folder, world, world.tick), path)
    result.snapshots_checked += 1
    result.last_snapshot_tick = world.tick
