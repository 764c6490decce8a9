"""Durable file operations: atomic replace, directory fsync, gzip to a temporary name, and
one-line explanations of what a refused write means."""

from __future__ import annotations

import errno
import gzip
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["disk_problem", "folder_bytes", "fsync_dir", "gzip_file", "human_size",
           "is_temporary", "temporary_path", "write_atomic", "write_atomic_lines"]


def temporary_path(path: Path) -> Path:
    """Where a new version of ``path`` is written before it is renamed over it."""
    return path.with_name(f".{path.name}.tmp")


def is_temporary(name: str) -> bool:
    """A file name ``temporary_path`` makes: never authoritative (the rename that would have
    made it so did not happen)."""
    return name.startswith(".") and name.endswith(".tmp")


def fsync_dir(path: Path) -> None:
    """Make a rename or unlink in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file, whole:
    write a temporary file, fsync it, rename it over, fsync the folder."""
    write_atomic_lines(path, (data,))


def write_atomic_lines(path: Path, pieces: Iterable[bytes]) -> None:
    """``write_atomic`` for content produced piece by piece (never all in memory). If making
    the pieces or writing them fails, the temporary file is removed and ``path`` is
    untouched."""
    tmp = temporary_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            for data in pieces:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None:
            exc.filename = str(path)  # a refused write(): name the file it was for
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    fsync_dir(path.parent)


def gzip_file(source: Path, target: Path, level: int = 6) -> None:
    """Write a gzipped copy of ``source`` to ``target`` atomically (``source`` is kept)."""
    tmp = temporary_path(target)
    try:
        with source.open("rb") as src, gzip.open(tmp, "wb", compresslevel=level) as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, target)
    fsync_dir(target.parent)


_FULL = (errno.ENOSPC, errno.EDQUOT)
_DENIED = (errno.EACCES, errno.EPERM)


def disk_problem(exc: OSError, folder: Path) -> str:
    """What a failed write in ``folder`` means and how to fix it, in one sentence:
    ``"<what happened> (<errno text>); <fix>"``."""
    where = exc.filename or folder
    text = exc.strerror or str(exc)
    if exc.errno in _FULL:
        return (f"the disk holding {folder} is full ({text} writing {where}); free some space "
                "there (df -h shows how much is left) or set paths.saves to a folder on "
                "another disk")
    if exc.errno == errno.EFBIG:
        return (f"the file size limit refused a write ({text} writing {where}); raise the "
                "limit (ulimit -f) or set paths.saves to a folder on another disk")
    if exc.errno == errno.EROFS:
        return (f"{folder} is on a read-only file system ({text} writing {where}); set "
                "paths.saves to a folder on a writable disk")
    if exc.errno in _DENIED:
        return (f"{folder} is not writable ({text} writing {where}); make it writable "
                f"(chmod -R u+w {folder}) or set paths.saves to a folder you can write")
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return (f"a part of {folder} is a file, not a folder ({text}: {where}); set "
                "paths.saves to a folder (it is created if missing)")
    return (f"{type(exc).__name__} writing {where}: {text}; check that {folder} is on a "
            "working, writable disk")


def folder_bytes(root: Path) -> int:
    """Bytes in the files under ``root`` (links not followed; a file removed while counting
    is skipped)."""
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            try:
                info = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            total += info.st_size
    return total


def human_size(size: float) -> str:
    """Bytes in decimal units, as the byte counts of the settings are written."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")
