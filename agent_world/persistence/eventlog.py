"""The event log: JSON lines in one file per tick range.

Every line is an object with ``tick``, ``seq``, ``kind`` (input | event | check | marker) and
``type``. The writer appends to the current range's plain file and gzips a range once the
ticks have moved past it; the reader streams lines back, skipping (and reporting) a torn last
line and stopping at a damaged gzip file.

No step of the writer's ever leaves a range without a complete copy of its lines:

- compressing a finished range: gzip to ``.NAME.gz.tmp``, fsync, rename it to ``NAME.gz``,
  remove ``NAME``;
- reopening a finished range (a resume continues inside it): copy its lines to
  ``.NAME.tmp``, fsync, rename it to ``NAME``, remove ``NAME.gz``;
- a range with both files (either step interrupted, or left by older versions, which could
  write a new plain file beside a finished range): it holds every line of both, in tick
  order. The reader merges them in memory without touching the folder; the writer settles
  them into the plain file (the same copy-then-rename) before it writes there.

Temporary files are never read: until the rename, the file they were to become (or
replace) is the authority.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_world.persistence.files import fsync_dir, gzip_file, write_atomic_lines
from agent_world.persistence.folder import Chunk, SaveFolder

__all__ = ["ChunkWriter", "GzipDamage", "LogReader", "RangeRead", "Salvage", "Settled",
           "final_tick", "gzip_pieces", "read_range", "salvage_damaged", "settle_range"]

PIECE = 1 << 16  # compressed bytes fed to zlib at a time
_GZIP_MAGIC = b"\x1f\x8b"

Line = tuple[bytes, dict[str, Any] | None]  # the raw line and its record (None: unreadable)


# -- reading gzip files that may be damaged ---------------------------------------------------


class GzipDamage(Exception):
    """A gzip file that cannot be decoded to its end; the message says why."""


def _decode_slowly(decoder: Any, piece: bytes) -> Iterator[bytes]:
    """Feed ``piece`` one byte at a time, so everything decodable before a bad byte comes
    out (a whole piece that fails returns nothing)."""
    for i in range(len(piece)):
        try:
            out = decoder.decompress(piece[i:i + 1])
        except zlib.error:
            return
        if out:
            yield out
        if decoder.eof:
            return


def gzip_pieces(path: Path) -> Iterator[bytes]:
    """The decompressed bytes of a gzip file, decoded incrementally in small pieces. Where
    the data is damaged, every byte decodable before the damage is yielded first, then
    GzipDamage is raised."""
    with path.open("rb") as f:
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        seen = False
        while piece := f.read(PIECE):
            seen = True
            while piece:
                if decoder.eof:  # after a whole member: zero padding or another member
                    if not piece.strip(b"\0"):
                        break
                    if not piece.startswith(_GZIP_MAGIC):
                        raise GzipDamage("unexpected bytes after the end of its compressed "
                                         "data")
                    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
                backup = decoder.copy()
                try:
                    out = decoder.decompress(piece)
                except zlib.error as exc:
                    yield from _decode_slowly(backup, piece)
                    raise GzipDamage(f"undecodable data: {exc}") from None
                if out:
                    yield out
                piece = decoder.unused_data if decoder.eof else b""
        if not seen:
            raise GzipDamage("the file is empty")
        if not decoder.eof:
            raise GzipDamage("cut short: it ends before its compressed data does")


def _split(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """Lines (with their newline) from byte pieces; a final piece without one comes last."""
    rest = b""
    for piece in pieces:
        lines = (rest + piece).split(b"\n") if rest else piece.split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield line + b"\n"
    if rest:
        yield rest


def _parse(raw: bytes) -> dict[str, Any] | None:
    if not raw.endswith(b"\n"):
        return None
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


# -- one tick range: its authoritative lines ------------------------------------------------


@dataclass
class RangeRead:
    """What reading one range found, filled in as its lines are read."""

    torn: tuple[Path, int, int] | None = None  # plain file, bytes of whole lines, torn bytes
    damage: str | None = None  # why the gzip file could not be read to its end
    trusted: int = 0  # lines of the gzip file read before its damage
    merged: bool = False  # both files exist and each holds lines the other lacks
    unfinished_gz_line: bool = False  # the gzip file ends with a line without a newline


def _plain_items(path: Path, info: RangeRead) -> Iterator[Line]:
    offset = 0
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                info.torn = (path, offset, len(raw))
                return
            offset += len(raw)
            yield raw, _parse(raw)


def _gz_items(path: Path, info: RangeRead) -> Iterator[Line]:
    """A gzip file's lines. In a damaged file nothing from the first line that is not a
    JSON object, or whose tick goes back, on is trusted (damage can decode to garbage before
    zlib notices, and garbage can copy an earlier line whole: deflate refers back to what it
    wrote), so lines after such a one wait until the file proves to end cleanly."""
    held: list[Line] | None = None
    tick = -1
    try:
        for raw in _split(gzip_pieces(path)):
            if not raw.endswith(b"\n"):
                info.unfinished_gz_line = True
                break
            record = _parse(raw)
            if held is not None:
                held.append((raw, record))
                continue
            at = record.get("tick") if record is not None else None
            if record is None or (isinstance(at, int) and at < tick):
                held = [(raw, record)]
                continue
            if isinstance(at, int):
                tick = at
            info.trusted += 1
            yield raw, record
    except GzipDamage as exc:
        info.damage = str(exc)
        return
    except OSError as exc:
        info.damage = f"{type(exc).__name__}: {exc}"
        return
    if held:
        yield from held


class _Ticked:
    """A stream of lines with the tick each belongs to (an unreadable line belongs with the
    line before it)."""

    def __init__(self, items: Iterator[Line], head: Line) -> None:
        self._items = items
        self._tick = -1
        self.head: Line | None = head
        self.tick = self._tick_of(head)

    def _tick_of(self, line: Line) -> int:
        record = line[1]
        if record is not None and isinstance(record.get("tick"), int):
            self._tick = record["tick"]
        return self._tick

    def take(self, tick: int) -> list[Line]:
        taken = []
        while self.head is not None and self.tick <= tick:
            taken.append(self.head)
            self.head = next(self._items, None)
            if self.head is not None:
                self.tick = self._tick_of(self.head)
        return taken


def _merge(gz: Iterator[Line], plain: Iterator[Line], info: RangeRead) -> Iterator[Line]:
    """Every line of both files once, in tick order: the common beginning, then tick by
    tick the gzip file's lines (the older copy) followed by the plain file's others."""
    g, p = next(gz, None), next(plain, None)
    while g is not None and p is not None and g[0] == p[0]:
        yield g
        g, p = next(gz, None), next(plain, None)
    if g is None or p is None:  # one is a prefix of the other: the longer one is it
        rest, tail = (gz, g) if p is None else (plain, p)
        if tail is not None:
            yield tail
            yield from rest
        return
    info.merged = True
    older, newer = _Ticked(gz, g), _Ticked(plain, p)
    while older.head is not None or newer.head is not None:
        tick = min(s.tick for s in (older, newer) if s.head is not None)
        first = older.take(tick)
        seen = {raw for raw, _ in first}
        yield from first
        yield from (line for line in newer.take(tick) if line[0] not in seen)


def read_range(chunk: Chunk, info: RangeRead) -> Iterator[Line]:
    """The whole lines a range holds, whichever of its files exist (reads only)."""
    if chunk.gz is None:
        assert chunk.plain is not None
        yield from _plain_items(chunk.plain, info)
    elif chunk.plain is None:
        yield from _gz_items(chunk.gz, info)
    else:
        yield from _merge(_gz_items(chunk.gz, info), _plain_items(chunk.plain, info), info)


def _chunk_name(chunk: Chunk) -> str:
    path = chunk.plain or chunk.gz
    assert path is not None
    return path.name.removesuffix(".gz")


class _Counted:
    """Passes lines through, counting them and noting the last tick."""

    def __init__(self) -> None:
        self.lines = 0
        self.bytes = 0
        self.last_tick = -1

    def through(self, items: Iterator[Line]) -> Iterator[bytes]:
        for raw, record in items:
            self.lines += 1
            self.bytes += len(raw)
            if record is not None and isinstance(record.get("tick"), int):
                self.last_tick = max(self.last_tick, record["tick"])
            yield raw


def _set_aside(path: Path, suffix: str) -> Path:
    """Rename ``path`` to ``path + suffix`` (numbered if taken); nothing is deleted."""
    target = path.with_name(path.name + suffix)
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.{n}{suffix}")
    os.replace(path, target)
    return target


# -- repairs (the caller holds the world's lock) ---------------------------------------------


@dataclass
class Settled:
    """A finished range turned back into its plain file (``settle_range``)."""

    notes: list[str]
    damaged: bool  # its gzip file was damaged: lines after the damage are gone
    start: int
    last_tick: int  # the last tick among the lines kept (-1: none)


def settle_range(folder: SaveFolder, chunk: Chunk) -> Settled:
    """Make a range that has a gzip file a single plain file holding every line it has (the
    plain file is written whole, fsynced and renamed before the gzip file goes, so every
    moment in between reads the same). A damaged gzip file is kept as ``*.damaged``."""
    assert chunk.gz is not None
    plain = chunk.plain or chunk.gz.with_name(chunk.gz.name.removesuffix(".gz"))
    info = RangeRead()
    kept = _Counted()
    write_atomic_lines(plain, kept.through(read_range(chunk, info)))
    notes = []
    if info.damage is not None:
        aside = _set_aside(chunk.gz, ".damaged")
        notes.append(f"{chunk.gz.name} is damaged after line {info.trusted} ({info.damage}); "
                     f"its readable lines are kept in {plain.name}, the damaged file as "
                     f"{aside.name}")
    else:
        chunk.gz.unlink()
    fsync_dir(plain.parent)
    if chunk.plain is None:
        notes.append(f"reopened the finished range {plain.name} to log on inside it: its "
                     f"{kept.lines} lines were copied out of {chunk.gz.name}")
    elif info.merged:
        notes.append(f"{plain.name} and {chunk.gz.name} both existed with different lines; "
                     f"{plain.name} now holds every line of both ({kept.lines}), in tick "
                     "order")
    else:
        notes.append(f"{plain.name} and {chunk.gz.name} both existed (an interrupted "
                     f"compression or reopening); kept the complete copy, {kept.lines} lines")
    if info.torn is not None:
        notes.append(f"cut a torn line ({info.torn[2]} bytes) off the end of {plain.name}")
    return Settled(notes, info.damage is not None, chunk.start, kept.last_tick)


@dataclass
class Salvage:
    notes: list[str] = field(default_factory=list)
    start: int = 0  # the damaged range's first tick
    last_tick: int = -1  # the last tick among the lines kept (-1: none)


def salvage_damaged(folder: SaveFolder, damaged: Path) -> Salvage:
    """After a damaged gzip chunk stopped a resume: keep its readable lines (every whole line
    decoded before the damage, up to the first that is not a JSON object) as the plain chunk
    the run continues, keep the damaged file as ``.damaged``, and set later chunks aside as
    ``.orphaned`` (the ticks between are missing, so they can never be replayed). Nothing
    is deleted."""
    chunks = folder.chunks()
    chunk = next(c for c in chunks if c.gz == damaged)
    settled = settle_range(folder, chunk)
    salvage = Salvage(list(settled.notes), chunk.start, settled.last_tick)
    for later in chunks:
        if later.start > chunk.start:
            for path in (later.plain, later.gz):
                if path is not None:
                    aside = _set_aside(path, ".orphaned")
                    salvage.notes.append(f"set {path.name} aside as {aside.name}: it follows "
                                         "the damaged part and cannot be replayed")
    fsync_dir(folder.events_dir)
    return salvage


def _cut_unfinished_line(fd: int) -> int:
    """Cut a file back to its last newline (a failed or interrupted write may have left part
    of a line); returns the new size."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            keep = start + newline + 1
            break
        end = start
    else:
        keep = 0
    if keep != size:
        os.ftruncate(fd, keep)
    return keep


# -- writing --------------------------------------------------------------------------------


class ChunkWriter:
    """Appends lines to the right chunk file. Used by one thread only (the writer), in a
    process that holds the world's lock."""

    def __init__(self, folder: SaveFolder, chunk_ticks: int, *,
                 report: Callable[[str], None] | None = None) -> None:
        self.folder = folder
        self.chunk_ticks = chunk_ticks
        self._report = report
        self._fd: int | None = None
        self._start = -1
        self._good_size = 0  # bytes known to hold only whole lines
        self.bytes_written = 0
        self.notes: list[str] = []  # what settling and compressing ranges found

    def _note(self, notes: list[str]) -> None:
        self.notes.extend(notes)
        if self._report is not None:
            for note in notes:
                self._report(note)

    def _range(self, tick: int) -> tuple[int, int]:
        start = tick // self.chunk_ticks * self.chunk_ticks
        return start, start + self.chunk_ticks - 1

    def prepare(self, tick: int) -> Settled | None:
        """Open the range ``tick`` belongs to for writing, reopening it first if it was
        finished (resume does this before the run starts, so what it finds is reported
        with the other notes); returns what reopening found."""
        return self._open(tick)

    def _open(self, tick: int) -> Settled | None:
        start, end = self._range(tick)
        if self._fd is not None:
            self.close()
        settled = None
        for chunk in self.folder.chunks():
            if (chunk.start, chunk.end) == (start, end) and chunk.gz is not None:
                settled = settle_range(self.folder, chunk)  # never write into a .gz
                self._note(settled.notes)
        path = self.folder.events_dir / self.folder.chunk_name(start, end)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self._fd, self._start = fd, start
        self._good_size = _cut_unfinished_line(fd)
        self.compress_finished()
        return settled

    def write(self, tick: int, data: bytes) -> None:
        """Append whole lines for ``tick``; on failure the file is cut back to whole lines
        and OSError propagates (the caller keeps the data and retries)."""
        if self._fd is None or self._range(tick)[0] != self._start:
            self._open(tick)
        assert self._fd is not None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            self._rollback()
            raise
        self._good_size += len(data)
        self.bytes_written += len(data)

    def _rollback(self) -> None:
        """Cut the file back to whole lines after a failed write; if even that fails, let
        go of it (the next write reopens it and cuts it there)."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._good_size)
        except OSError:
            fd, self._fd = self._fd, None
            os.close(fd)

    def fsync(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.fsync(fd)
            os.close(fd)

    def compress_finished(self) -> None:
        """Gzip every plain chunk before the current one (also finishing a compression a
        crash interrupted: the plain file is the authority until its .gz is complete). A
        range that also has a .gz is settled into its plain file first: no .gz is ever
        written over."""
        for chunk in self.folder.chunks():
            if chunk.plain is None or chunk.start >= self._start:
                continue
            if chunk.gz is not None:
                self._note(settle_range(self.folder, chunk).notes)
            fd = os.open(chunk.plain, os.O_RDWR)
            try:
                size = os.fstat(fd).st_size
                cut = size - _cut_unfinished_line(fd)
                os.fsync(fd)
            finally:
                os.close(fd)
            if cut:
                self._note([f"cut a torn line ({cut} bytes) off the end of "
                            f"{chunk.plain.name} before compressing it"])
            target = chunk.plain.with_name(chunk.plain.name + ".gz")
            gzip_file(chunk.plain, target)
            chunk.plain.unlink()
            fsync_dir(chunk.plain.parent)


# -- reading ----------------------------------------------------------------------------------


class LogReader:
    """Streams log records in order from ``from_tick`` on, without changing the folder.

    After iteration: ``last_tick`` is the last tick seen; ``torn`` lists the plain files
    whose last line was cut short, with the size of their whole lines (``torn_tail`` is the
    last of them); ``stopped_at`` is the gzip file whose damage ended the readable log early
    (None when it reads to the end) and ``later_files`` the files after it. ``warnings``
    holds every remark; ``problems`` those about lines that could not be read (a replay did
    not verify them) and ``notes`` the others."""

    def __init__(self, folder: SaveFolder, from_tick: int = 0) -> None:
        self.folder = folder
        self.from_tick = from_tick
        self.warnings: list[str] = []
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.last_tick = -1
        self.torn: list[tuple[Path, int]] = []
        self.stopped_at: Path | None = None
        self.later_files: list[Path] = []

    @property
    def torn_tail(self) -> tuple[Path, int] | None:
        return self.torn[-1] if self.torn else None

    def _problem(self, text: str) -> None:
        self.problems.append(text)
        self.warnings.append(text)

    def _note(self, text: str) -> None:
        self.notes.append(text)
        self.warnings.append(text)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        chunks = self.folder.chunks()
        for i, chunk in enumerate(chunks):
            if chunk.end < self.from_tick:
                continue
            yield from self._read_chunk(chunk)
            if self.stopped_at is not None:
                self.later_files = [p for c in chunks[i + 1:] for p in (c.plain, c.gz)
                                    if p is not None]
                if self.later_files:
                    self._problem(
                        f"{len(self.later_files)} later event-log file(s) after "
                        f"{self.stopped_at.name} cannot be used: the ticks between are "
                        "missing")
                return

    def _read_chunk(self, chunk: Chunk) -> Iterator[dict[str, Any]]:
        info = RangeRead()
        name = _chunk_name(chunk)
        line_no = 0
        readable_to = -1
        for _raw, record in read_range(chunk, info):
            line_no += 1
            if record is None:
                self._problem(f"skipped an unreadable line in {name} (line {line_no})")
                continue
            tick = record.get("tick")
            if not isinstance(tick, int):
                self._problem(f"skipped a line without a tick in {name} (line {line_no})")
                continue
            readable_to = max(readable_to, tick)
            if tick >= self.from_tick:
                self.last_tick = max(self.last_tick, tick)
                yield record
        if info.merged:
            self._note(f"{name} and {name}.gz both exist with different lines (left by an "
                       "older version); read every line of both in tick order")
        if info.torn is not None:
            path, size, torn = info.torn
            self.torn.append((path, size))
            self._problem(f"skipped a torn last line in {path.name} ({torn} bytes): the "
                          "process stopped while writing it")
        if info.unfinished_gz_line:
            self._problem(f"skipped an unfinished last line in {name}.gz")
        if info.damage is not None:
            gz = chunk.gz
            assert gz is not None
            if chunk.plain is None:
                self.stopped_at = gz
                self._problem(f"{gz.name} is damaged after line {info.trusted} "
                              f"({info.damage}); the log is read up to tick {readable_to}")
            else:
                self._problem(f"{gz.name} is damaged after line {info.trusted} "
                              f"({info.damage}); its readable lines were read with "
                              f"{chunk.plain.name}'s, but what the damaged part held is "
                              "unknown")


def final_tick(folder: SaveFolder) -> int:
    """The last tick any event-log file holds a readable line for (-1: none); reads only."""
    for chunk in reversed(folder.chunks()):
        last = -1
        for _raw, record in read_range(chunk, RangeRead()):
            if record is not None and isinstance(record.get("tick"), int):
                last = max(last, record["tick"])
        if last >= 0:
            return last
    return -1
