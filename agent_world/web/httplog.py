"""What aiohttp says about bad requests, counted instead of printed.

aiohttp logs every request it cannot parse with a traceback (``Error handling request``), on
the root logger's last-resort handler: stderr, the operator's terminal, unrotated. 2,000
malformed requests were 2,000 tracebacks. The server gives aiohttp a logger of its own whose
handler counts what it is told and says it in one world-log line at most once per
``web.report_interval_s``: how many, of which kind, from where, and the last one's words.
A handler's own bug (a 500) is said the same way, with its exception, so it is not lost.
The accept loop's "out of files" errors (asyncio's, not aiohttp's) come here too.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

__all__ = ["Tally", "server_logger"]


class Tally:
    """Counts of one kind of trouble, said at most once per interval."""

    def __init__(self, what: str, *, interval_s: float, clock: Callable[[], float],
                 say: Callable[[str], None]) -> None:
        self.what = what
        self.interval_s = interval_s
        self.clock = clock
        self.say = say
        self.total = 0
        self._pending: Counter[str] = Counter()
        self._last = ""
        self._said_at: float | None = None

    def add(self, kind: str, detail: str) -> None:
        self.total += 1
        self._pending[kind] += 1
        self._last = detail
        now = self.clock()
        if self._said_at is None or now - self._said_at >= self.interval_s:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        """Say what was counted since the last line (nothing if nothing was)."""
        if not self._pending:
            return
        count = sum(self._pending.values())
        kinds = ", ".join(f"{n} {kind}" for kind, n in self._pending.most_common(4))
        first = self._said_at is None
        self._said_at = self.clock() if now is None else now
        self._pending.clear()
        later = (f"; more are counted and said at most every {self.interval_s:g} s"
                 if first else "")
        self.say(f"web: {count} {self.what} ({kinds}); the last: {self._last[:200]}{later}")


class _Counting(logging.Handler):
    def __init__(self, malformed: Tally, failed: Tally) -> None:
        super().__init__(logging.DEBUG)
        self.malformed = malformed
        self.failed = failed

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return  # aiohttp's debug chatter (disconnections): nothing the operator needs
        kind = type(exc).__name__
        text = " ".join(str(exc).split()) or kind
        # aiohttp's parse errors all derive from HttpProcessingError (code 400 and kin).
        if any(cls.__name__ == "HttpProcessingError" for cls in type(exc).__mro__):
            self.malformed.add(kind, f"{kind}: {text}")
        else:
            self.failed.add(kind, f"{record.getMessage()}: {kind}: {text}")


def server_logger(name: str, malformed: Tally, failed: Tally) -> logging.Logger:
    """A logger of its own for one server (not in logging's registry, so no two servers and
    no other library share it), whose only handler counts."""
    logger = logging.Logger(name, logging.DEBUG)
    logger.addHandler(_Counting(malformed, failed))
    logger.propagate = False
    return logger
