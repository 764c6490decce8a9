"""A child process that dies with its parent, and a process group that is stopped as one.

A run's episodes work in processes of their own. When the process that started them ends,
however it ends (``kill -9`` included), they must end too: an orphaned episode runs on for
hours and writes into a run nobody watches. ``die_with_parent`` asks the kernel for that
(``prctl(PR_SET_PDEATHSIG)`` on Linux); elsewhere a watchdog thread checks
``os.getppid()`` and ends the process once its parent is gone. ``stop_group`` is the other
half, for an orderly stop: SIGTERM to a process group, then SIGKILL to whatever is left.

On Linux the parent-death signal follows the *thread* that started the child: a child
whose starting thread ends gets it too. So it is for children started by a thread that
outlives them (an evaluation's pool is made, used and shut down by one thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable

__all__ = ["die_with_parent", "group_alive", "stop_group"]

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_EVERY_S = 0.5  # how often the portable watchdog looks at its parent


def _prctl_pdeathsig(sig: int) -> bool:
    """Ask Linux to send ``sig`` when the parent ends; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return False
    return int(libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_EVERY_S)
    os._exit(1)


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` (the pid that started it) ends: at once if it has
    ended already, by SIGKILL from the kernel on Linux, else by a watchdog thread."""
    armed = _prctl_pdeathsig(signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the signal was armed
        os._exit(1)
    if not armed:
        threading.Thread(target=_watch, args=(parent,), name="lifeline", daemon=True).start()


def group_alive(pgid: int) -> bool:
    """Whether any process of the group ``pgid`` is left (zombies aside: they are dead but
    not yet waited for)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(_in_group(pid, pgid) for pid in _pids())


def _pids() -> Iterable[int]:
    if not os.path.isdir("/proc"):
        return [0]  # no /proc: killpg(0) said the group is there
    return (int(name) for name in os.listdir("/proc") if name.isdigit())


def _in_group(pid: int, pgid: int) -> bool:
    if pid == 0:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] != b"Z" and int(fields[2]) == pgid


def _signal(leader: int, sig: int) -> None:
    """``sig`` to the group ``leader`` leads, and to ``leader`` itself (a child still
    starting may not lead its group yet)."""
    for send in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            send(leader, sig)


def stop_group(leaders: Iterable[int], grace_s: float) -> None:
    """SIGTERM every process group led by one of ``leaders`` (and each leader), wait up to
    ``grace_s`` for them to end, then SIGKILL what is left. Groups already gone are
    skipped."""
    groups = list(leaders)
    for pgid in groups:
        _signal(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(group_alive(g) or _running(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pgid in groups:
        _signal(pgid, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether ``pid`` is alive and not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not os.path.isdir("/proc") or _not_zombie(pid)


def _not_zombie(pid: int) -> bool:
    """From /proc: ``pid`` is there and is not a zombie (ended, not yet waited for)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
