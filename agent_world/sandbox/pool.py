"""Worker processes on the host side: start them ahead of need, talk to them, kill them.

A pool keeps one worker in use and ``spare`` more started and idle, so that a worker killed
mid-tick is replaced by one that is already up (a new spare starts in the background).
Workers get a fresh, minimal environment, only stdin/stdout/stderr (stderr is /dev/null),
and a session of their own.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import agent_world
from agent_world.sandbox.protocol import (
    MAX_FRAME,
    FrameError,
    TimedOut,
    decode,
    encode,
    write_all,
)

__all__ = ["Worker", "WorkerDied", "WorkerPool"]

PACKAGE_ROOT = Path(agent_world.__file__).resolve().parent.parent
SEND_TIMEOUT_S = 2.0


class WorkerDied(Exception):
    """The worker process is gone or broke the protocol."""


def _environment() -> dict[str, str]:
    return {
        "PATH": os.defpath,
        "PYTHONPATH": str(PACKAGE_ROOT),
        "PYTHONHASHSEED": "0",  # set iteration order must not differ between workers
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "LC_ALL": "C.UTF-8",
    }


class Worker:
    """One worker process and its two pipes."""

    def __init__(self, memory_mb: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-s", "-m", "agent_world.sandbox.worker", str(memory_mb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            close_fds=True, env=_environment(), cwd=str(PACKAGE_ROOT),
            start_new_session=True, bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self.ready = False
        self.known: set[str] = set()  # digests whose source this worker has compiled
        self.pid = self.proc.pid
        self._buffer = bytearray()  # bytes read but not yet a whole frame

    def alive(self) -> bool:
        return self.proc.poll() is None

    def describe_exit(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"

    def wait_ready(self, deadline: float) -> bool:
        """True once the worker has said it is ready; False if not by ``deadline``."""
        if self.ready:
            return True
        try:
            hello = self._frame(deadline)
        except TimedOut:
            return False
        except WorkerDied as exc:
            raise WorkerDied(f"the worker did not start: {exc}") from None
        if not isinstance(hello, dict) or hello.get("op") != "ready":
            raise WorkerDied("the worker greeted with something else than 'ready'")
        self.ready = True
        return True

    def send(self, message: dict[str, Any], timeout: float = SEND_TIMEOUT_S) -> None:
        try:
            write_all(self._in, encode(message), time.monotonic() + timeout)
        except (TimedOut, FrameError) as exc:
            raise WorkerDied(f"the worker does not take requests ({exc or 'timed out'})") \
                from None

    def recv(self, deadline: float) -> Any:
        """The next frame; TimedOut at the deadline, WorkerDied if the pipe broke."""
        return self._frame(deadline)

    def _frame(self, deadline: float) -> Any:
        """The next whole frame. Bytes read before a timeout stay buffered, so waiting in
        slices (a few milliseconds per tick) never loses the stream's place."""
        buffer = self._buffer
        while True:
            if len(buffer) >= 4:
                size = int.from_bytes(buffer[:4], "big")
                if size > MAX_FRAME:
                    raise WorkerDied(f"announced frame of {size} bytes exceeds {MAX_FRAME}")
                if len(buffer) >= 4 + size:
                    data = bytes(buffer[4:4 + size])
                    del buffer[:4 + size]
                    try:
                        return decode(data)
                    except FrameError as exc:
                        raise WorkerDied(str(exc)) from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimedOut
            ready, _w, _x = select.select([self._out], [], [], remaining)
            if not ready:
                raise TimedOut
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=0.2)  # let the exit status arrive, to name it
                raise WorkerDied(f"the pipe closed ({self.describe_exit()})")
            buffer += chunk

    def kill(self) -> None:
        """SIGKILL and reap (the process cannot refuse)."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self._close_pipes()

    def close(self) -> None:
        """Let it finish (end of input), then make sure it is gone."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class WorkerPool:
    """One worker in use plus ``spare`` started ones."""

    def __init__(self, memory_mb: int, spare: int = 1) -> None:
        self.memory_mb = memory_mb
        self.size = 1 + spare
        self.workers: deque[Worker] = deque(Worker(memory_mb) for _ in range(self.size))
        self.started = self.size
        self.replaced = 0
        self.closed = False

    def wait_ready(self, timeout: float = 15.0) -> None:
        """Block until every worker has started (used once, at start-up)."""
        deadline = time.monotonic() + timeout
        for worker in list(self.workers):
            try:
                if not worker.wait_ready(deadline):
                    raise WorkerDied(f"a sandbox worker did not start within {timeout:g} s")
            except WorkerDied:
                self.discard(worker)
                raise

    def current(self, deadline: float) -> Worker | None:
        """The worker to use, ready; None if none is ready by ``deadline``."""
        while not self.closed:
            if len(self.workers) < self.size:
                self._start()
            worker = self.workers[0]
            try:
                if not worker.alive():
                    raise WorkerDied(worker.describe_exit())
                if worker.wait_ready(deadline):
                    return worker
                return None
            except WorkerDied:
                self.discard(worker)
        return None

    def _start(self) -> None:
        self.workers.append(Worker(self.memory_mb))
        self.started += 1

    def discard(self, worker: Worker) -> None:
        """Kill a worker and start a replacement (it becomes the last spare)."""
        worker.kill()
        with contextlib.suppress(ValueError):
            self.workers.remove(worker)
        self.replaced += 1
        if not self.closed:
            self._start()

    def pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    def close(self) -> None:
        self.closed = True
        while self.workers:
            self.workers.popleft().close()
