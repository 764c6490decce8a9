"""One process per world: an advisory lock on ``<world>/.lock``.

The lock is ``flock`` on an open file, held from before the run's first write until its
persistence closes. The kernel drops it whenever the process ends, ``kill -9`` included, so
a lock left by a dead process is simply free: nothing to detect, nothing to clean. The file
holds the holder's process id, for messages only, and is never deleted (removing a lock
file races with a process that has just opened it).

``flock`` belongs to the open file description, which ``fork()`` shares with the child:
the descriptor is opened close-on-exec (programs started with exec never see it), and
the persistence's forked serialising children close their copy first thing (closing a copy
never releases the lock; ``LOCK_UN`` would, so nothing but ``release`` calls it).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
import weakref
from pathlib import Path

from agent_world.persistence.folder import LOCK_NAME, SaveError

__all__ = ["WorldInUse", "WorldLock", "lock_holder"]

# A probe (``lock_holder``) holds a shared lock for microseconds: a starter that meets one
# tries again for this long before it reports the world as in use.
_CONTENDED_S = 0.25


class WorldInUse(SaveError):
    """Another process holds the world's lock."""

    def __init__(self, world: str, path: Path, pid: int) -> None:
        holder = f"process {pid}" if pid else "another process"
        super().__init__(f"world '{world}' is in use by {holder} ({path}); stop that process "
                         "first, or run another world with --world NAME")
        self.world = world
        self.path = path
        self.pid = pid


def _read_pid(path: Path) -> int:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return 0
    return int(text) if text.isdigit() else 0


class WorldLock:
    """The held lock of one world folder; ``release`` (or the process ending) frees it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd
        # An abandoned lock (its opener dropped without release) closes with the object.
        self._close = weakref.finalize(self, os.close, fd)

    @classmethod
    def acquire(cls, root: Path, world: str) -> WorldLock:
        """Take the lock of the world folder ``root`` (which must exist). WorldInUse names
        the holder; OSError if the lock file cannot be made (a read-only folder, ...)."""
        path = Path(root) / LOCK_NAME
        deadline = time.monotonic() + _CONTENDED_S
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                if time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
                raise WorldInUse(world, path, _read_pid(path)) from None
            # The file we locked must still be the one at ``path`` (a deleter may have
            # removed the folder between our open and our lock): else start again.
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            held = os.fstat(fd)
            if current is None or (current.st_dev, current.st_ino) != (held.st_dev,
                                                                        held.st_ino):
                os.close(fd)
                if current is None and not Path(root).is_dir():
                    raise FileNotFoundError(errno.ENOENT, "the world folder was removed",
                                            str(root))
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            except OSError:
                os.close(fd)
                raise
            return cls(path, fd)

    @property
    def held(self) -> bool:
        return self._close.alive

    def release(self) -> None:
        """Free the lock (idempotent). The pid is wiped first: an empty file is free."""
        if not self._close.alive:
            return
        # On a disk that refuses the write the stale pid stays: harmless, since only the
        # flock says whether a world is in use, and it goes with the close either way.
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
        self._close()


def lock_holder(root: Path) -> int | None:
    """The process id holding the world's lock (0: a holder whose id is unknown), or None
    when nobody does. Reads only: it never creates the lock file."""
    path = Path(root) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return None  # unreadable here: it cannot be probed, and guessing would mislead
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            return _read_pid(path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
