"""Persistence: the main thread's share (serialise, hand over) and the writer thread (disk).

The main thread turns inputs and events into JSON lines and the world into state bytes, then
queues them; it never waits on the disk. The writer thread appends lines to the event log,
writes state-hash checks and snapshots, and keeps everything in memory while the disk
refuses (full, read-only, gone), retrying until it succeeds: nothing is dropped.

Ordering is what makes crash recovery exact: the queue is FIFO, inputs are queued before
they are applied, and a snapshot is written only after every line before it is written and
fsynced, so no snapshot ever reflects an input the log does not hold.

Minds (``persistence.minds``): with a source of minds (``keep_minds``), every snapshot
asks it for the minds of its tick, and the writer writes them (``minds/<tick>.jsonl.gz``)
just before that snapshot, once they are all taken or the wait is over; log lines keep being
written meanwhile.
"""

from __future__ import annotations

import gzip
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from agent_world.config import PersistenceConfig
from agent_world.core.world import World, hash_state_bytes
from agent_world.persistence.eventlog import ChunkWriter
from agent_world.persistence.files import write_atomic
from agent_world.persistence.folder import SaveFolder, now_iso
from agent_world.persistence.forked import (
    ChildFailed,
    ForkedState,
    fork_available,
    fork_state,
    read_forked_state,
)
from agent_world.persistence.minds import encode_minds, prune_minds, write_minds
from agent_world.persistence.seekpoints import SeekPoints, SeekSpacing
from agent_world.persistence.snapshots import encode_snapshot
from agent_world.types import Input, TickReport

__all__ = ["Persistence", "Saved"]

RETRY_SECONDS = 1.0
MAX_CHILDREN = 2
MINDS_POLL_S = 0.02  # how often the writer looks whether a snapshot's minds are all taken


class Minds(Protocol):
    """The minds of a snapshot's tick as they are being taken (``decisions.keeping``)."""

    def ready(self) -> bool:
        """Whether all are taken, or the wait for them is over."""
        ...

    def take(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The records, and a line for each agent whose mind could not be taken in time."""
        ...


MindsSource = Callable[[int], Minds | None]


@dataclass(slots=True)
class _Lines:
    tick: int
    data: bytes


@dataclass(slots=True)
class _State:
    tick: int
    data: bytes | None  # None while a forked child is still serialising
    check: bool
    snapshot: bool
    seek: bool
    child: ForkedState | None = None
    done: Future[Saved] | None = None  # told once the snapshot is on disk (/save)
    minds: Minds | None = None  # written before the snapshot, once ready
    minds_data: bytes | None = None  # encoded (kept while the disk refuses)


@dataclass(frozen=True, slots=True)
class Saved:
    """A snapshot that reached the disk."""

    tick: int
    path: Path
    size: int  # bytes of world_state.json
    ms: float  # time the writer took


@dataclass(slots=True)
class _Ability:
    name: str
    source: str


class _Stop:
    pass


_Job = _Lines | _State | _Ability | _Stop


def input_line(inp: Input) -> bytes:
    return orjson.dumps({"tick": inp.tick, "seq": inp.seq, "kind": "input", "type": inp.type,
                         "source": inp.source, "data": inp.data}) + b"\n"


class Persistence:
    """Attach to a world (its input observers) and a tick loop (as an observer)."""

    def __init__(self, folder: SaveFolder, cfg: PersistenceConfig, world: World, *,
                 report: Callable[[str], None]) -> None:
        self.folder = folder
        self.cfg = cfg
        self.world = world
        self._report = report
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._state_due: tuple[bool, bool] | None = None  # (hash, snapshot)
        # Main-thread figures.
        self.main_ms_last = 0.0
        self.main_ms_max = 0.0
        self.snapshots_requested = 0
        self.serialized_inline = 0
        self.use_fork = cfg.serialize_in_child and fork_available()
        self._forked = 0  # children started (main thread) vs collected (writer thread)
        self.fork_failures = 0  # forks the system refused (no descriptor, no process)
        self.seek_points_skipped = 0  # seek points let go for want of a fork
        self._fork_refused = False
        self._writer = _Writer(folder, cfg, report, self._queue)
        self._minds_source: MindsSource | None = None
        self.seek_spacing = SeekSpacing(cfg.seek_interval_ticks, cfg.seek_target_ms / 1000,
                                        _replays_start_at(folder, world.tick))
        world.input_observers.append(self.on_inputs)
        self._writer.start()

    # -- main thread -----------------------------------------------------------------------

    def on_inputs(self, inputs: Sequence[Input]) -> None:
        if inputs:
            self._queue.put(_Lines(inputs[0].tick, b"".join(input_line(i) for i in inputs)))

    def on_tick(self, report: TickReport) -> None:
        tick = report.tick
        for inp in report.inputs:
            if inp.type == "ability":
                self._queue_ability(inp.data)
        if report.events and self.cfg.events == "all":
            dumps = orjson.dumps
            lines = [dumps({"tick": tick, "seq": i, "kind": "event", **event})
                     for i, event in enumerate(report.events)]
            self._queue.put(_Lines(tick, b"\n".join(lines) + b"\n"))
        cfg = self.cfg
        check = tick % cfg.hash_interval_ticks == 0
        snapshot = tick % cfg.snapshot_interval_ticks == 0
        if check or snapshot:
            self._state_due = (check, snapshot)

    def between_ticks(self, tick_seconds: float | None = None) -> bool:
        """Hand a due state hash, snapshot or seek point over, after the tick's observers
        and before the next tick: the state is the same as at the end of the tick, and the
        fork (tens of ms at thousands of agents) lands in the loop's idle time instead of in
        a tick. ``tick_seconds``: what the tick just run cost the main thread (the tick
        loop's measure), which spaces the seek points; None when called for another reason
        (a /save, the shutdown). Returns whether a state was handed over."""
        seek = (tick_seconds is not None
                and self.seek_spacing.after_tick(self.world.tick, tick_seconds))
        if self._state_due is None and not seek:
            return False
        check, snapshot = self._state_due or (False, False)
        self._state_due = None
        self._queue_state(check=check, snapshot=snapshot, seek=seek)
        return True

    def keep_minds(self, source: MindsSource, max_bytes_per_agent: int) -> None:
        """Save minds with every snapshot from now on: ``source(tick)`` (main thread) gives
        the minds of that tick being taken; each is written bounded to
        ``max_bytes_per_agent`` (``minds.max_bytes_per_agent``)."""
        self._minds_source = source
        self._writer.minds_max_bytes = max_bytes_per_agent

    def _queue_state(self, *, check: bool, snapshot: bool, seek: bool = False,
                     done: Future[Saved] | None = None) -> None:
        started = time.perf_counter()
        minds = (self._minds_source(self.world.tick)
                 if snapshot and self._minds_source is not None else None)
        # Children still serialising earlier states: past a few, serialise here instead
        # (flat-out runs outpace them; paced runs almost never get there).
        busy = self._forked - self._writer.children_collected >= MAX_CHILDREN
        child = self._fork() if self.use_fork and not busy else None
        if child is None and seek and not check and not snapshot and done is None:
            # Out of file descriptors or processes: a seek point is a convenience, skipped
            # rather than paid for on the main thread. The world runs on.
            self.seek_points_skipped += 1
            return
        if child is not None:
            job = _State(self.world.tick, None, check, snapshot, seek, child, done, minds)
            self._forked += 1
        else:
            job = _State(self.world.tick, self.world.state_bytes(), check, snapshot, seek,
                         done=done, minds=minds)
            self.serialized_inline += 1
        self._queue.put(job)
        elapsed = (time.perf_counter() - started) * 1000
        self.main_ms_last = elapsed
        self.main_ms_max = max(self.main_ms_max, elapsed)

    def _fork(self) -> ForkedState | None:
        """A child serialising the world, or None when the system refuses one (no file
        descriptor left for its pipe, no process): then the state is serialised here, on the
        main thread, and the world keeps running. Said once until a fork works again."""
        lock = self.folder.lock
        # The child must not keep the world's lock alive should this process die.
        close = (lock.fd,) if lock is not None and lock.held else ()
        try:
            child = fork_state(self.world, close_in_child=close)
        except OSError as exc:
            self.fork_failures += 1
            if not self._fork_refused:
                self._fork_refused = True
                self._report(f"persistence: cannot start a child to serialise tick "
                             f"{self.world.tick} ({exc.strerror or exc}); states are "
                             "serialised on the main thread and seek points skipped until "
                             "one starts again (too many open files? ulimit -n, or fewer "
                             "web.max_connections)")
            return None
        if self._fork_refused:
            self._fork_refused = False
            self._report("persistence: children serialise the state again")
        return child

    def _queue_ability(self, data: Any) -> None:
        """Keep the source of an ability the world accepted in abilities/NAME.py (an input
        the world refused, such as a name already taken, writes nothing)."""
        spec = self.world.abilities.generated.get(str(data.get("name")))
        if spec is not None and spec.digest == data.get("sha256"):
            self._queue.put(_Ability(spec.name, spec.source))

    def write_abilities(self) -> None:
        """Queue every generated ability's source (a fork or resume makes sure all are
        there)."""
        for spec in self.world.abilities.generated.values():
            self._queue.put(_Ability(spec.name, spec.source))

    def save(self) -> Future[Saved]:
        """Snapshot the world as it is now (between ticks: the state and the log agree) and
        say when it is on disk: the future's result (/save). While the disk refuses, the
        writer keeps the snapshot and retries, and the future waits."""
        done: Future[Saved] = Future()
        self.between_ticks()
        self._queue_state(check=False, snapshot=True, done=done)
        self.snapshots_requested += 1
        return done

    def snapshot_now(self) -> None:
        """Queue a snapshot of the world as it is (between ticks)."""
        self.between_ticks()
        self._queue_state(check=False, snapshot=True)

    def marker(self, type: str, **fields: Any) -> None:
        """A line marking a session boundary (start, resume, shutdown, fork)."""
        record = {"tick": self.world.tick, "seq": 0, "kind": "marker", "type": type,
                  "at": now_iso(), **fields}
        self._queue.put(_Lines(self.world.tick, orjson.dumps(record) + b"\n"))

    def close(self, *, final_snapshot: bool = True, timeout: float = 60.0,
              keep_lock: bool = False) -> bool:
        """Snapshot, mark the shutdown, wait for the writer to finish, and free the world's
        lock (unless ``keep_lock``: its owner still writes into the folder and releases it
        itself). Returns False if the writer could not finish in time (the disk is refusing
        writes): the lock is then kept until the process ends, since the writer may still
        write."""
        self.between_ticks()
        if final_snapshot:
            self.snapshot_now()
        self.marker("shutdown")
        if self.on_inputs in self.world.input_observers:
            self.world.input_observers.remove(self.on_inputs)
        self._queue.put(_Stop())
        self._writer.join(timeout)
        if self._writer.is_alive():
            self._report(f"persistence: still {self._writer.pending_description()} unwritten "
                         f"after {timeout:g} s at shutdown; {self.folder.root} keeps what "
                         "reached the disk")
            return False
        if self.folder.lock is not None and not keep_lock:
            self.folder.lock.release()
        return True

    def stats(self) -> dict[str, Any]:
        w = self._writer
        return {
            "folder": str(self.folder.root),
            "queue": self._queue.qsize(),
            "pending_lines_bytes": w.pending_bytes,
            "event_bytes_written": w.chunks.bytes_written,
            "lines_written": w.lines_written,
            "snapshots_written": w.snapshots_written,
            "last_snapshot_tick": w.last_snapshot_tick,
            "last_snapshot_bytes": w.last_snapshot_bytes,
            "state_main_ms_last": round(self.main_ms_last, 2),
            "state_main_ms_max": round(self.main_ms_max, 2),
            "serialized_in": "forked child" if self.use_fork else "main thread",
            "serialized_inline": self.serialized_inline,
            "snapshot_write_ms_last": round(w.snapshot_write_ms, 2),
            "seek_points": len(w.seek_points.sizes),
            "seek_points_bytes": w.seek_points.total,
            "seek_points_failed": w.seek_points.failed,
            "seek_points_skipped": self.seek_points_skipped,
            "forks_refused": self.fork_failures,
            "minds_written": w.minds_written,
            "flush": self.cfg.flush,
            "error": w.last_error,
            "errors": w.errors,
        }


def _replays_start_at(folder: SaveFolder, tick: int) -> int:
    """The tick a seek into the ticks after ``tick`` replays from today: the newest seek
    point up to it, else the first snapshot (the others are deleted as the world goes on)."""
    points = [t for t, _path in folder.seek_points() if t <= tick]
    if points:
        return points[-1]
    history = folder.history()
    return history[0][0] if history else tick


class _Writer(threading.Thread):
    def __init__(self, folder: SaveFolder, cfg: PersistenceConfig,
                 report: Callable[[str], None], jobs: queue.SimpleQueue[_Job]) -> None:
        super().__init__(name="persistence", daemon=True)
        self.folder = folder
        self.cfg = cfg
        self.report = report
        self.queue = jobs
        self.chunks = ChunkWriter(folder, cfg.events_chunk_ticks,
                                  report=lambda text: report(f"persistence: {text}"))
        self.seek_points = SeekPoints(folder, cfg.seek_budget_mb * 1_000_000)
        self.children_collected = 0
        self._pending: deque[_Lines] = deque()
        self._snapshots: deque[_State] = deque()
        self._abilities: deque[_Ability] = deque()
        self.pending_bytes = 0
        self.lines_written = 0
        self.snapshots_written = 0
        self.last_snapshot_tick = -1
        self.last_snapshot_bytes = 0
        self.snapshot_write_ms = 0.0
        self.last_error: str | None = None
        self.errors = 0
        self.minds_max_bytes = 0
        self.minds_written = 0
        self._minds_cut: set[int] = set()  # agents whose cut minds were said already
        self._last_write = time.monotonic()
        self._last_fsync = time.monotonic()

    def pending_description(self) -> str:
        waiting = len(self._snapshots)
        return f"{self.pending_bytes} bytes of log lines" + (
            f" and {waiting} snapshot(s)" if waiting else "")

    # -- loop ---------------------------------------------------------------------------------

    def run(self) -> None:
        stopping = False
        while True:
            timeout = RETRY_SECONDS if (self.last_error or self._pending) else None
            if self.cfg.flush == "interval" and self._pending and not self.last_error:
                timeout = max(0.0, self.cfg.flush_interval_s
                              - (time.monotonic() - self._last_write))
            if self._awaiting_minds():
                timeout = MINDS_POLL_S if timeout is None else min(timeout, MINDS_POLL_S)
            try:
                job = self.queue.get(timeout=timeout) if not stopping else None
            except queue.Empty:
                job = None
            while job is not None:
                if isinstance(job, _Stop):
                    stopping = True
                else:
                    self._accept(job)
                try:
                    job = self.queue.get_nowait()
                except queue.Empty:
                    job = None
            if self._work(force=stopping):
                if stopping:
                    self.chunks.close()
                    return
            elif stopping:
                time.sleep(MINDS_POLL_S if self._awaiting_minds() else RETRY_SECONDS)

    def _accept(self, job: _Lines | _State | _Ability) -> None:
        if isinstance(job, _Ability):
            self._abilities.append(job)
            return
        if isinstance(job, _Lines):
            self._pending.append(job)
            self.pending_bytes += len(job.data)
            return
        if job.child is not None:
            try:
                job.data = read_forked_state(job.child)
            except ChildFailed as exc:
                self.errors += 1
                self.report(f"persistence: the state of tick {job.tick} was not saved "
                            f"({exc}); the next snapshot will cover it")
                if job.done is not None:
                    job.done.set_exception(exc)
                return
            finally:
                self.children_collected += 1
        assert job.data is not None
        if job.check:
            line = orjson.dumps({"tick": job.tick, "seq": 0, "kind": "check",
                                 "type": "state_hash", "hash": hash_state_bytes(job.data)})
            self._pending.append(_Lines(job.tick, line + b"\n"))
            self.pending_bytes += len(line) + 1
        if job.seek and not job.snapshot and self.last_error is not None:
            self.seek_points.failed += 1  # the disk refuses: skip it, keep no state for it
        elif job.snapshot or job.seek:
            self._snapshots.append(job)

    def _awaiting_minds(self) -> bool:
        """Whether the next snapshot waits for its minds (and nothing else for the disk)."""
        return (bool(self._snapshots) and self.last_error is None
                and self._snapshots[0].minds is not None
                and self._snapshots[0].minds_data is None
                and not self._snapshots[0].minds.ready())

    def _work(self, *, force: bool) -> bool:
        """Write what is due; True when nothing is left pending."""
        try:
            now = time.monotonic()
            due = (force or self.cfg.flush == "tick" or self._snapshots
                   or now - self._last_write >= self.cfg.flush_interval_s)
            if due:
                self._write_lines()
                self._last_write = now
            ready = bool(self._snapshots) and not self._awaiting_minds()
            if ready or force or (now - self._last_fsync >= self.cfg.fsync_interval_s):
                self.chunks.fsync()  # no snapshot may get ahead of the durable log
                self._last_fsync = now
            while self._snapshots and not self._awaiting_minds():
                self._write_snapshot(self._snapshots[0])
                self._snapshots.popleft()
            while self._abilities:
                job = self._abilities[0]
                self.folder.write_ability(job.name, job.source)
                self._abilities.popleft()
        except OSError as exc:
            self._failed(exc)
            return False
        if self.last_error is not None:
            self.report(f"persistence: writing {self.folder.root} again; nothing was lost")
            self.last_error = None
        return not self._pending and not self._snapshots and not self._abilities

    def _write_lines(self) -> None:
        while self._pending:
            first = self._pending[0]
            # Group consecutive lines of one chunk into a single write.
            span = self.cfg.events_chunk_ticks
            batch = [first]
            for item in list(self._pending)[1:]:
                if item.tick // span != first.tick // span:
                    break
                batch.append(item)
            data = b"".join(item.data for item in batch)
            self.chunks.write(batch[-1].tick, data)
            for _ in batch:
                self._pending.popleft()
            self.pending_bytes -= len(data)
            self.lines_written += data.count(b"\n")
        if self.cfg.fsync_interval_s == 0:
            self.chunks.fsync()

    def _write_snapshot(self, job: _State) -> None:
        """Write the snapshot, the seek point, or both, that ``job`` asks for (a snapshot
        only once the log before it is fsynced, so it never holds an input the log lacks)."""
        assert job.data is not None
        if job.seek:
            job.seek = False  # a convenience: tried once, never kept in memory for a retry
            try:
                self.seek_points.add(job.tick, job.data)
            except OSError:
                self.seek_points.failed += 1
        if not job.snapshot:
            return
        started = time.perf_counter()
        if job.minds is not None:  # the minds of its tick first: no snapshot lacks them
            self._write_minds(job)
        data, _digest = encode_snapshot(job.tick, job.data)
        history = self.folder.history()
        write_atomic(self.folder.snapshot_path(job.tick), gzip.compress(data, 3))
        write_atomic(self.folder.state_path, data)
        self.folder.update_meta(last_tick=job.tick, last_snapshot_tick=job.tick)
        kept = self.cfg.snapshots_kept
        older = [p for t, p in history if t != job.tick][1:]  # the first is kept forever
        for path in older[: max(0, len(older) - kept + 1)]:
            path.unlink(missing_ok=True)
        if job.minds is not None:
            prune_minds(self.folder.minds_dir, kept, newest=job.tick)
        self.snapshots_written += 1
        self.last_snapshot_tick = job.tick
        self.last_snapshot_bytes = len(data)
        self.snapshot_write_ms = (time.perf_counter() - started) * 1000
        if job.done is not None:
            job.done.set_result(Saved(job.tick, self.folder.state_path, len(data),
                                      self.snapshot_write_ms))

    def _write_minds(self, job: _State) -> None:
        """The snapshot's minds, bounded per agent, written whole (kept encoded while the
        disk refuses). An agent whose mind is cut or left out is said once a run."""
        if job.minds_data is None:
            assert job.minds is not None
            records, notes = job.minds.take()
            job.minds_data, cut = encode_minds(job.tick, records, self.minds_max_bytes)
            for line in notes:
                self.report(f"persistence: {line}")
            for agent, name, dropped in cut:
                if agent in self._minds_cut:
                    continue
                self._minds_cut.add(agent)
                who = f"agent {agent}" + (f" ({name})" if name else "")
                self.report(
                    f"persistence: the mind of {who} is not JSON data or does not fit "
                    f"minds.max_bytes_per_agent ({self.minds_max_bytes} bytes) even empty; "
                    "it is not saved" if dropped < 0 else
                    f"persistence: the mind of {who} is over minds.max_bytes_per_agent "
                    f"({self.minds_max_bytes} bytes): its {dropped} oldest memories are left "
                    "out of the save (said once)")
        write_minds(self.folder.minds_dir, job.tick, job.minds_data)
        self.minds_written += 1

    def _failed(self, exc: OSError) -> None:
        message = f"{type(exc).__name__}: {exc}"
        repeated = message == self.last_error
        self.last_error = message
        self.errors += 1
        if not repeated:
            self.report(f"persistence: cannot write {self.folder.root} ({message}); the world "
                        f"keeps running, {self.pending_description()} held in memory, "
                        f"retrying every {RETRY_SECONDS:g} s")
