"""The console without a terminal: commands read line by line from a pipe or a file.

A daemon thread blocks on ``os.read`` (raw reads hold no Python-level lock, so a thread still
blocked at exit cannot hang interpreter shutdown) and hands each line to the event loop; the
tick loop never waits for input. The hand-over is bounded: when ``QUEUED_LINES`` lines wait,
the thread stops reading until the console catches up, so a flood of input costs a fixed
amount of memory and the pipe's writer blocks instead. A line longer than
``MAX_LINE_BYTES`` is discarded whole (its end is read and dropped too, so nothing after the
cut can run as a command of its own) and answered with one error.

Replies go to stdout, flushed at once. Plain replies: the first line of a reply stands alone
and any further lines of the same reply (the table of /list, the sections of /stats) are
indented by two spaces, so a script can tell where one reply ends; notices about earlier
commands (an input the world rejected at the tick it applied it) begin with ``notice:``.
With ``json`` every reply is exactly one line, a JSON object (see ``ReplyWriter``).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TextIO

import orjson

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["MAX_LINE_BYTES", "OverlongLine", "ReplyWriter", "StdinKind", "StdinLines",
           "run_pipe", "stdin_kind"]

StdinKind = Literal["tty", "pipe", "none"]
CHUNK = 65536
MAX_LINE_BYTES = 65536
QUEUED_LINES = 256
HAND_OVER_POLL_S = 0.5  # how often a blocked reader checks that the event loop still runs


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


@dataclass(frozen=True, slots=True)
class OverlongLine:
    """A line that was discarded whole because it ran past ``MAX_LINE_BYTES``."""

    size: int  # bytes read before its newline (or the end of input)

    def reply(self) -> str:
        return (f"error: a line of {self.size:,} bytes was discarded whole (the limit is "
                f"{MAX_LINE_BYTES:,} bytes); send one command per line")


Line = str | OverlongLine | None  # None: the end of input


class StdinLines:
    """Reads lines from ``fd`` on a daemon thread into ``queue`` (``None`` marks the end).

    At most ``QUEUED_LINES`` lines are handed over and not yet ``taken``: past that the
    thread waits, and so does whoever writes into the pipe."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop,
                 queue: asyncio.Queue[Line]) -> None:
        self.fd = fd
        self.loop = loop
        self.queue = queue
        self.error: str | None = None
        self._slots = threading.Semaphore(QUEUED_LINES)
        self._thread = threading.Thread(target=self._run, name="console-stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def taken(self) -> None:
        """The console took a line off the queue: room for one more."""
        self._slots.release()

    def _hand(self, item: Line) -> bool:
        """Put ``item`` on the queue once there is room; False once the event loop is gone
        (the program is ending)."""
        while not self._slots.acquire(timeout=HAND_OVER_POLL_S):
            if self.loop.is_closed() or not self.loop.is_running():
                return False
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the event loop is closed
            return False
        return True

    def _run(self) -> None:
        pending = bytearray()
        dropping = 0  # bytes of an over-long line discarded so far (0: not dropping)
        while True:
            try:
                chunk = os.read(self.fd, CHUNK)
            except OSError as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                chunk = b""
            if not chunk:
                if dropping:
                    self._hand(OverlongLine(dropping + len(pending)))
                elif pending:
                    self._hand(pending.decode("utf-8", "replace"))
                self._hand(None)
                return
            start = 0
            while True:
                newline = chunk.find(b"\n", start)
                if newline < 0:
                    break
                piece = chunk[start:newline]
                start = newline + 1
                if dropping:
                    item: Line = OverlongLine(dropping + len(piece))
                    dropping = 0
                elif len(pending) + len(piece) > MAX_LINE_BYTES:
                    item = OverlongLine(len(pending) + len(piece))
                else:
                    pending += piece
                    item = pending.rstrip(b"\r").decode("utf-8", "replace")
                pending.clear()
                if not self._hand(item):
                    return
            rest = chunk[start:]
            if dropping:
                dropping += len(rest)
            elif len(pending) + len(rest) > MAX_LINE_BYTES:
                dropping = len(pending) + len(rest)  # no newline in sight: drop to the next
                pending.clear()
            else:
                pending += rest


class ReplyWriter:
    """Writes replies to a stream; if the reader goes away, says so once and stops.

    ``reply(command, lines, ok)``: plain, the first line and the rest indented by two
    spaces; json, one object ``{"command": ..., "ok": ..., "reply": [lines]}``.
    ``notice(text)``: plain, ``notice: text``; json, ``{"notice": text}``. Calling the
    writer with one string writes it as a line of its own (start-up messages)."""

    def __init__(self, stream: TextIO, *, json: bool = False) -> None:
        self.stream = stream
        self.json = json
        self.broken = False

    def reply(self, command: str, lines: list[str], ok: bool) -> None:
        if self.json:
            self._write(orjson.dumps({"command": command, "ok": ok, "reply": lines}).decode())
        elif lines:
            self._write("\n".join([lines[0], *(f"  {line}" for line in lines[1:])]))

    def notice(self, text: str) -> None:
        self._write(orjson.dumps({"notice": text}).decode() if self.json
                    else f"notice: {text}")

    def __call__(self, line: str) -> None:
        self._write(line)

    def _write(self, text: str) -> None:
        if self.broken:
            return
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError) as exc:  # a closed pipe or stream
            self.broken = True
            print(f"console: cannot write replies any more ({type(exc).__name__}: {exc}); "
                  "the world runs on", file=sys.stderr)


async def run_pipe(console: Console, *, exit_on_eof: bool, fd: int = 0,
                   out: TextIO | None = None, json: bool = False) -> None:
    """Run commands from ``fd`` until /quit or the end of input. At the end of input the
    world stops only with ``exit_on_eof``; otherwise it runs on without a console."""
    write = ReplyWriter(out if out is not None else sys.stdout, json=json)
    console.notify = write.notice
    queue: asyncio.Queue[Line] = asyncio.Queue()  # bounded by the reader's slots
    reader = StdinLines(fd, asyncio.get_running_loop(), queue)
    reader.start()
    while True:
        line = await queue.get()
        reader.taken()
        if line is None:
            why = f"stdin failed ({reader.error})" if reader.error else "end of stdin"
            if exit_on_eof:
                print(f"console: {why}; stopping (--exit-on-eof)", file=sys.stderr)
                console.loop.stop()
            else:
                print(f"console: {why}; the world runs on (Ctrl-C or SIGTERM stops it)",
                      file=sys.stderr)
            return
        if isinstance(line, OverlongLine):
            console.errors += 1
            write.reply(f"<{line.size} bytes>", [line.reply()], False)
            continue
        lines = await console.execute(line)
        if lines:
            write.reply(line.strip(), lines, console.last_ok)
        if console.quit_requested:
            return
        # Let the tick loop (and signal handlers) run between commands: a flood of input
        # must not starve the world or delay /quit and SIGTERM behind it.
        await asyncio.sleep(0)
