"""Serialising the world in a forked child, so the tick loop pays for a fork, not for JSON.

The child gets a copy-on-write image of the process as it is between two ticks, writes the
state bytes to a pipe and exits; the writer thread reads them. The child runs only
``World.state_bytes`` (pure Python and orjson) and leaves with ``os._exit``, so no lock
another thread might have held at the fork is ever needed in it.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass

from agent_world.core.world import World

__all__ = ["ChildFailed", "ForkedState", "fork_available", "fork_state", "read_forked_state"]


def fork_available() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


class ChildFailed(OSError):
    """The serialising child died or wrote nothing."""


@dataclass(frozen=True, slots=True)
class ForkedState:
    pid: int
    fd: int


def fork_state(world: World, *, close_in_child: tuple[int, ...] = ()) -> ForkedState:
    """Start a child that writes ``world``'s state bytes to a pipe. ``close_in_child`` are
    descriptors the child closes first (the world's lock: a child must never keep it alive
    after the parent dies; closing its copy leaves the parent's lock held)."""
    read_fd, write_fd = os.pipe()
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork() in threaded processes; the child touches no
            # lock.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:  # no process to be had: the pipe must not leak
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # pragma: no cover - runs in the child, which coverage does not follow
        status = 1
        try:
            for fd in close_in_child:
                os.close(fd)
            os.close(read_fd)
            view = memoryview(world.state_bytes())
            while view:
                view = view[os.write(write_fd, view):]
            status = 0
        finally:
            os._exit(status)
    os.close(write_fd)
    return ForkedState(pid, read_fd)


def read_forked_state(child: ForkedState) -> bytes:
    """The child's bytes (blocking until it is done); ChildFailed if it did not finish."""
    chunks = []
    try:
        while chunk := os.read(child.fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(child.fd)
        _pid, status = os.waitpid(child.pid, 0)
    if status != 0 or not chunks:
        raise ChildFailed(f"the serialising child {child.pid} failed (wait status {status})")
    return b"".join(chunks)
