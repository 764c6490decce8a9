"""The event log: JSON lines in one file per tick range.

Every line is an object with ``tick``, ``seq``, ``kind`` (input | event | check | marker) and
``type``. The writer appends to the current range's plain file and gzips a range once the
ticks have moved past it; the reader streams lines back, skipping (and reporting) a torn last
line and stopping at a damaged gzip file.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from agent_world.persistence.files import fsync_dir, gzip_file
from agent_world.persistence.folder import Chunk, SaveFolder

__all__ = ["ChunkWriter", "LogReader", "salvage_damaged"]


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


class ChunkWriter:
    """Appends lines to the right chunk file. Used by one thread only (the writer)."""

    def __init__(self, folder: SaveFolder, chunk_ticks: int) -> None:
        self.folder = folder
        self.chunk_ticks = chunk_ticks
        self._fd: int | None = None
        self._start = -1
        self._good_size = 0  # bytes known to hold only whole lines
        self.bytes_written = 0

    def _range(self, tick: int) -> tuple[int, int]:
        start = tick // self.chunk_ticks * self.chunk_ticks
        return start, start + self.chunk_ticks - 1

    def _open(self, tick: int) -> None:
        start, end = self._range(tick)
        if self._fd is not None:
            self.close()
        path = self.folder.events_dir / self.folder.chunk_name(start, end)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self._fd, self._start = fd, start
        self._good_size = _cut_unfinished_line(fd)
        self.compress_finished()

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
        crash interrupted: the plain file is the authority until its .gz is complete)."""
        for chunk in self.folder.chunks():
            if chunk.plain is None or chunk.start >= self._start:
                continue
            target = chunk.plain.with_name(chunk.plain.name + ".gz")
            gzip_file(chunk.plain, target)
            chunk.plain.unlink()
            fsync_dir(chunk.plain.parent)


def salvage_damaged(folder: SaveFolder, damaged: Path) -> list[str]:
    """After a damaged gzip chunk stopped a resume: keep its readable lines as the plain
    chunk the run continues, keep the damaged file as ``.damaged``, and set later chunks
    aside as ``.orphaned`` (the ticks between are missing, so they can never be replayed).
    Nothing is deleted."""
    notes = []
    good = bytearray()
    try:
        with gzip.open(damaged, "rb") as f:
            for raw in f:
                if raw.endswith(b"\n"):
                    good += raw
    except (EOFError, zlib.error, gzip.BadGzipFile, OSError):
        pass  # everything readable is in ``good``; the rest is what the damage destroyed
    plain = damaged.with_name(damaged.name.removesuffix(".gz"))
    plain.write_bytes(bytes(good))
    os.replace(damaged, damaged.with_name(damaged.name + ".damaged"))
    notes.append(f"kept {len(good)} readable bytes of {damaged.name} as {plain.name}; the "
                 f"damaged file is kept as {damaged.name}.damaged")
    start = int(plain.name.split("-")[0])
    for chunk in folder.chunks():
        if chunk.start > start:
            for path in (chunk.plain, chunk.gz):
                if path is not None:
                    os.replace(path, path.with_name(path.name + ".orphaned"))
                    notes.append(f"set {path.name} aside as {path.name}.orphaned: it follows "
                                 "the damaged part and cannot be replayed")
    fsync_dir(folder.events_dir)
    return notes


class LogReader:
    """Streams log records in order from ``from_tick`` on, noting damage in ``warnings``.

    After iteration: ``last_tick`` is the last tick seen; ``torn_tail`` is (file, size of its
    whole lines) when the final line was cut short; ``stopped_at`` is the file where a
    damaged gzip ended the readable log early (None when it reads to the end)."""

    def __init__(self, folder: SaveFolder, from_tick: int = 0) -> None:
        self.folder = folder
        self.from_tick = from_tick
        self.warnings: list[str] = []
        self.last_tick = -1
        self.torn_tail: tuple[Path, int] | None = None
        self.stopped_at: Path | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        chunks = self.folder.chunks()
        for i, chunk in enumerate(chunks):
            if chunk.end < self.from_tick:
                continue
            last = i == len(chunks) - 1
            yield from self._read_chunk(chunk, last)
            if self.stopped_at is not None:
                later = len(chunks) - i - 1
                if later:
                    self.warnings.append(
                        f"{later} later event-log file(s) after {self.stopped_at.name} cannot "
                        "be used: the ticks between are missing")
                return

    def _read_chunk(self, chunk: Chunk, last: bool) -> Iterator[dict[str, Any]]:
        path = chunk.plain or chunk.gz
        assert path is not None
        gz = path.suffix == ".gz"
        offset = 0
        line_no = 0
        try:
            with (gzip.open(path, "rb") if gz else path.open("rb")) as f:
                stream: BinaryIO = f  # type: ignore[assignment]
                for raw in stream:
                    line_no += 1
                    whole = raw.endswith(b"\n")
                    try:
                        record = orjson.loads(raw) if whole else None
                    except orjson.JSONDecodeError:
                        record = None
                    if record is None or not isinstance(record, dict):
                        if not whole and last and not gz:
                            self.torn_tail = (path, offset)
                            self.warnings.append(
                                f"skipped a torn last line in {path.name} (line {line_no}, "
                                f"{len(raw)} bytes): the process stopped while writing it")
                        else:
                            self.warnings.append(
                                f"skipped an unreadable line in {path.name} (line {line_no})")
                        offset += len(raw)
                        continue
                    offset += len(raw)
                    tick = record.get("tick")
                    if not isinstance(tick, int):
                        self.warnings.append(f"skipped a line without a tick in {path.name} "
                                             f"(line {line_no})")
                        continue
                    if tick >= self.from_tick:
                        self.last_tick = max(self.last_tick, tick)
                        yield record
        except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as exc:
            self.stopped_at = path
            self.warnings.append(f"{path.name} is damaged after line {line_no} "
                                 f"({type(exc).__name__}: {exc}); the log is read up to "
                                 f"tick {self.last_tick}")
