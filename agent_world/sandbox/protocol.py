"""Frames between the host and a worker: a 4-byte big-endian length, then JSON (orjson).

Both sides refuse frames over ``MAX_FRAME`` bytes before reading them, so neither can be
made to buffer without bound.
"""

from __future__ import annotations

import os
import select
import time
from typing import Any

import orjson

__all__ = ["MAX_FRAME", "FrameError", "TimedOut", "decode", "encode", "read_frame",
           "write_all"]

MAX_FRAME = 4 * 1024 * 1024


class FrameError(Exception):
    """The other side closed the pipe or sent something that is not a frame."""


class TimedOut(Exception):
    """The deadline passed before the frame was complete."""


def encode(obj: Any) -> bytes:
    data = orjson.dumps(obj)
    if len(data) > MAX_FRAME:
        raise FrameError(f"frame of {len(data)} bytes exceeds {MAX_FRAME}")
    return len(data).to_bytes(4, "big") + data


def decode(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"not JSON: {exc}") from None


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    left = n
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimedOut
            ready, _w, _x = select.select([fd], [], [], remaining)
            if not ready:
                raise TimedOut
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            raise FrameError("the pipe closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, deadline: float | None = None) -> Any:
    """One frame from ``fd``; TimedOut at ``deadline`` (time.monotonic) if given."""
    size = int.from_bytes(_read_exact(fd, 4, deadline), "big")
    if size > MAX_FRAME:
        raise FrameError(f"announced frame of {size} bytes exceeds {MAX_FRAME}")
    return decode(_read_exact(fd, size, deadline))


def write_all(fd: int, data: bytes, deadline: float | None = None) -> None:
    """Write everything; with a deadline the fd must be non-blocking."""
    view = memoryview(data)
    while view:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimedOut
            _r, ready, _x = select.select([], [fd], [], remaining)
            if not ready:
                raise TimedOut
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            continue
        except (BrokenPipeError, OSError) as exc:
            raise FrameError(f"the pipe closed ({exc})") from None
        view = view[written:]
