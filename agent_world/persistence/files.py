"""Durable file operations: atomic replace, directory fsync, gzip to a temporary name."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

__all__ = ["fsync_dir", "gzip_file", "write_atomic"]


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
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def gzip_file(source: Path, target: Path, level: int = 6) -> None:
    """Write a gzipped copy of ``source`` to ``target`` atomically (``source`` is kept)."""
    tmp = target.with_name(f".{target.name}.tmp")
    with source.open("rb") as src, gzip.open(tmp, "wb", compresslevel=level) as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    fsync_dir(target.parent)
