"""The console without a terminal: commands read line by line from a pipe or a file.

A daemon thread blocks on ``os.read`` (raw reads hold no Python-level lock, so a thread still
blocked at exit cannot hang interpreter shutdown) and hands each line to the event loop with
``call_soon_threadsafe``; the tick loop never waits for input. Replies go to stdout, one line
each, flushed at once.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from typing import TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    from agent_world.console.commands import Console

__all__ = ["ReplyWriter", "StdinKind", "StdinLines", "run_pipe", "stdin_kind"]

StdinKind = Literal["tty", "pipe", "none"]
CHUNK = 65536
MAX_LINE_BYTES = 65536


def stdin_kind(stdin: TextIO | None, stdout: TextIO | None) -> StdinKind:
    """``tty`` for a terminal (both ways), ``pipe`` for a pipe, file or socket to read
    commands from, ``none`` for /dev/null, a closed stdin or a terminal we must not read
    (stdout is redirected: no prompt can be drawn)."""
    if stdin is None:
        return "none"
    try:
        fd = stdin.fileno()
        info = os.fstat(fd)
    except (OSError, ValueError):  # closed, or not backed by a file descriptor
        return "none"
    if os.isatty(fd):
        try:
            return "tty" if stdout is not None and os.isatty(stdout.fileno()) else "none"
        except (OSError, ValueError):
            return "none"
    if stat.S_ISCHR(info.st_mode) and info.st_rdev == os.stat(os.devnull).st_rdev:
        return "none"
    return "pipe"


class StdinLines:
    """Reads lines from ``fd`` on a daemon thread into ``queue`` (``None`` marks the end)."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop,
                 queue: asyncio.Queue[str | None]) -> None:
        self.fd = fd
        self.loop = loop
        self.queue = queue
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="console-stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _hand(self, item: str | None) -> bool:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the event loop is closed: the program is ending
            return False
        return True

    def _run(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self.fd, CHUNK)
            except OSError as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                chunk = b""
            if not chunk:
                if pending:
                    self._hand(pending.decode("utf-8", "replace"))
                self._hand(None)
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if len(pending) > MAX_LINE_BYTES:  # no newline in sight: let the parser refuse it
                lines.append(pending)
                pending = b""
            for raw in lines:
                if not self._hand(raw.rstrip(b"\r").decode("utf-8", "replace")):
                    return


class ReplyWriter:
    """Writes reply lines to a stream; if the reader goes away, says so once and stops."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def __call__(self, line: str) -> None:
        if self.broken:
            return
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError) as exc:  # a closed pipe or stream
            self.broken = True
            print(f"console: cannot write replies any more ({type(exc).__name__}: {exc}); "
                  "the world runs on", file=sys.stderr)


async def run_pipe(console: Console, *, exit_on_eof: bool, fd: int = 0,
                   out: TextIO | None = None) -> None:
    """Run commands from ``fd`` until /quit or the end of input. At the end of input the
    world stops only with ``exit_on_eof``; otherwise it runs on without a console."""
    write = ReplyWriter(out if out is not None else sys.stdout)
    console.notify = write
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    reader = StdinLines(fd, asyncio.get_running_loop(), queue)
    reader.start()
    while True:
        line = await queue.get()
        if line is None:
            why = f"stdin failed ({reader.error})" if reader.error else "end of stdin"
            if exit_on_eof:
                print(f"console: {why}; stopping (--exit-on-eof)", file=sys.stderr)
                console.loop.stop()
            else:
                print(f"console: {why}; the world runs on (Ctrl-C or SIGTERM stops it)",
                      file=sys.stderr)
            return
        for reply in await console.execute(line):
            write(reply)
        if console.quit_requested:
            return
