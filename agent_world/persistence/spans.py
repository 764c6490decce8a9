"""Verifying a recording on several cores: the log split at saved states into spans that
replay side by side, one process each.

A seek point or snapshot loads only when its bytes match the hash it records, so a replay
started from one begins from the very state a replay from the first snapshot holds at that
tick, provided that replay reaches the same hash there. The spans therefore chain: each one
is verified from its own starting state, and each must end on the hash of the state the next
one started from. The first divergence of the chain is the first divergence of the log, and
the counts add up to those of a replay from the start.

Only a regular recording is verified in spans. When a span before the last finds anything a
replay from the start would report on the way (a gap, damage, unreadable lines, a note),
stops short, or does not end on its successor's hash, or a span's process dies,
``verify_in_spans`` returns the reason, and the caller replays from the start on one core,
so that the verdict is exactly the one-core verdict. The last span may end in damage or a
torn line: nothing comes after it.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from agent_world.config import Config
from agent_world.persistence.folder import SaveError, SaveFolder
from agent_world.persistence.replay import (
    DivergenceError,
    ReplayResult,
    SnapshotMismatch,
    replay,
)
from agent_world.persistence.snapshots import (
    claimed_tick,
    first_tick,
    load_first_snapshot,
    load_snapshot_file,
)
from agent_world.persistence.worlds import Setup

__all__ = ["MIN_SPAN_TICKS", "SPLIT_BYTE_TICKS", "SetupFactory", "Span", "SpanVerdict",
           "plan_spans", "verify_in_spans"]

MIN_SPAN_TICKS = 200
"""No span is shorter than this."""

SPLIT_BYTE_TICKS = 300_000_000
"""A log is split only when replaying it is long enough to dwarf what each process costs
before it replays a tick (0.5-1 s: imports, loading its world, starting its sandbox).
Estimated as the ticks to replay times the size of the world's latest saved state, which
grows with the world as its tick cost does: a 1,000-agent world's seek points are about
0.5 MB and its ticks about 7 ms, so this is about 4 s on one core. The default 20-agent
world replays thousands of ticks a second: splitting it would only slow it down."""

SetupFactory = Callable[[Config], AbstractContextManager[Setup]]
"""Makes what a span's world needs before it steps (the ability sandbox) in the worker
process, and closes it after; a module-level function, so that it reaches the worker."""


@dataclass(frozen=True, slots=True)
class Span:
    """Ticks ``start_tick`` + 1 .. ``until`` of the log, replayed from a saved state."""

    start: Path | None  # the saved state it starts from; None: the first snapshot
    start_tick: int
    until: int | None  # the tick it stops at; None: the end of the log


@dataclass(slots=True)
class _Divergence:
    tick: int
    expected: str
    actual: str
    detail: str
    source: Path | None  # the snapshot that contradicts the log, if it was one

    def error(self) -> DivergenceError:
        if self.source is not None:
            return SnapshotMismatch(self.tick, self.expected, self.actual, self.detail,
                                    self.source)
        return DivergenceError(self.tick, self.expected, self.actual, self.detail)


@dataclass(slots=True)
class _SpanResult:
    start_tick: int
    start_hash: str
    end_tick: int = -1
    end_hash: str = ""
    result: ReplayResult | None = None
    divergence: _Divergence | None = None
    failed: str = ""  # why the span could not be replayed at all
    peak_rss_kb: int = 0  # the worker's peak resident memory


@dataclass(slots=True)
class SpanVerdict:
    """A verified recording: the replay result a replay from the start would have given,
    and the tick it reached. ``spans`` is how many processes shared the work."""

    result: ReplayResult
    reached: int
    reached_hash: str
    spans: int
    peak_rss_kb: int  # the largest worker's peak resident memory (what a process costs)


def plan_spans(folder: SaveFolder, first: int, last: int, workers: int,
               until: int | None = None, *, min_work: int | None = None) -> list[Span]:
    """Up to ``workers`` spans from ``first`` to ``until`` (None: the end of the log), split
    at the saved states nearest to equal shares of ``first``..``last``; one span when there
    is too little to split. ``min_work``: the least ticks x state bytes worth splitting
    (None: ``SPLIT_BYTE_TICKS``, read at the call; a caller whose spans do more than
    replay, such as re-asking decisions, may ask for less)."""
    whole = [Span(None, first, until)]
    length = last - first
    count = min(workers, length // MIN_SPAN_TICKS)
    if count < 2:
        return whole
    states = folder.saved_states(until=last)
    least = SPLIT_BYTE_TICKS if min_work is None else min_work
    if not states or length * _size(states[-1][1]) < least:
        return whole
    saved = [(t, p) for t, p in states
             if first + MIN_SPAN_TICKS <= t <= last - MIN_SPAN_TICKS]
    cuts: list[tuple[int, Path]] = []
    for share in range(1, count):
        aim = first + length * share // count
        later = [(t, p) for t, p in saved
                 if t - (cuts[-1][0] if cuts else first) >= MIN_SPAN_TICKS]
        if not later:
            break
        cuts.append(min(later, key=lambda tp: abs(tp[0] - aim)))
    if not cuts:
        return whole
    spans = [Span(None, first, cuts[0][0])]
    for (tick, path), following in zip(cuts, [*cuts[1:], None], strict=True):
        spans.append(Span(path, tick, following[0] if following else until))
    return spans


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # deleted since it was listed (the budget thins seek points out)
        return 0


def _verify_span(root: Path, config: Config, span: Span, end: int,
                 setup_factory: SetupFactory | None) -> _SpanResult:
    """One span, in a worker process."""
    folder = SaveFolder.open(root)
    try:
        loaded = (load_snapshot_file(span.start, config) if span.start is not None
                  else load_first_snapshot(folder, config))
    except SaveError as exc:
        return _SpanResult(span.start_tick, "", failed=str(exc))
    world = loaded.world
    out = _SpanResult(loaded.tick, loaded.hash)
    try:
        with setup_factory(config) if setup_factory is not None else nullcontext() as setup:
            if setup is not None:
                setup(world)
            try:
                out.result = replay(world, folder, until=span.until, check_snapshots=True,
                                    end=end)
            except DivergenceError as exc:
                source = exc.source if isinstance(exc, SnapshotMismatch) else None
                out.divergence = _Divergence(exc.tick, exc.expected, exc.actual, exc.detail,
                                             source)
                return out
            out.end_tick, out.end_hash = world.tick, world.state_hash()
    finally:
        world.close()
    out.peak_rss_kb = _peak_rss_kb()
    return out


def _peak_rss_kb() -> int:
    try:
        import resource  # noqa: PLC0415 - Unix only
    except ImportError:
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux


def _irregular(result: ReplayResult) -> str:
    """What a span before the last found that a replay from the start would report."""
    if result.gap is not None:
        return f"the log lost ticks {result.gap.start}..{result.gap.tick}"
    if result.damaged is not None:
        return f"{result.damaged.name} is damaged"
    if result.torn or result.problems:
        return "part of the log is unreadable"
    if result.notes or result.warnings:
        return "the log needs a remark"
    return ""


def verify_in_spans(folder: SaveFolder, config: Config, *, workers: int,
                    until: int | None = None, setup_factory: SetupFactory | None = None
                    ) -> SpanVerdict | str | None:
    """Verify the recording from its first snapshot up to ``until`` (None: the end of the
    log, stepping on through the tick the folder says the world reached, as ``replay``'s
    ``end`` does) in up to ``workers`` processes, as ``replay(..., check_snapshots=True)``
    from the first snapshot would.

    Returns the verdict; None when there is too little to split; or a string saying why
    the recording must be replayed from the start on one core instead (it is irregular
    before its last span). Raises DivergenceError (SnapshotMismatch for a snapshot) at the
    first divergence."""
    claimed = claimed_tick(folder)
    end = claimed if until is None else min(until, claimed)
    spans = plan_spans(folder, first_tick(folder), end, workers, until)
    if len(spans) < 2:
        return None
    # Spawned, not forked: the caller may have threads (a sandbox pool's), and a fork would
    # copy them in an unknown state.
    context = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(max_workers=len(spans), mp_context=context) as pool:
            futures = [pool.submit(_verify_span, folder.root, config, span, end,
                                   setup_factory) for span in spans]
            results = [future.result() for future in futures]
    except (BrokenProcessPool, OSError, MemoryError) as exc:
        # A worker killed (out of memory) or not started: one core still gets there, and
        # meets any error that is the log's own.
        return f"a span's process failed ({type(exc).__name__}: {exc})"
    return _combine(spans, results)


def _combine(spans: list[Span], results: list[_SpanResult]) -> SpanVerdict | str:
    merged = ReplayResult()
    last = len(results) - 1
    for i, (span, out) in enumerate(zip(spans, results, strict=True)):
        if out.failed:
            return f"the saved state of tick {span.start_tick} does not load ({out.failed})"
        if i > 0 and results[i - 1].end_hash != out.start_hash:
            return (f"the saved state of tick {span.start_tick} is not the state the replay "
                    f"reaches there ({results[i - 1].end_hash} against {out.start_hash})")
        if out.divergence is not None:
            raise out.divergence.error()
        result = out.result
        assert result is not None
        if i < last:
            problem = _irregular(result)
            if problem:
                return f"{problem} (ticks {span.start_tick + 1}..{span.until})"
            if out.end_tick != span.until:
                return f"the log stops at tick {out.end_tick}, before tick {span.until}"
        merged.ticks += result.ticks
        merged.inputs += result.inputs
        merged.checks += result.checks
        merged.snapshots_checked += result.snapshots_checked
        if result.checks:
            merged.last_check_tick = result.last_check_tick
        if result.snapshots_checked:
            merged.last_snapshot_tick = result.last_snapshot_tick
    tail = results[last].result
    assert tail is not None
    for name in ("last_logged_tick", "warnings", "torn_tail", "damaged", "problems", "notes",
                 "torn", "later_files", "gap"):
        setattr(merged, name, getattr(tail, name))
    return SpanVerdict(merged, results[last].end_tick, results[last].end_hash, len(spans),
                       max(out.peak_rss_kb for out in results))
