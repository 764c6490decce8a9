"""A token bucket: how many messages a client may send, on average and in a burst.

One small class shared by the WebSocket endpoints (the live feed and ``/agents``): a client
may send ``rate`` messages a second on average, and up to ``burst`` at once after a quiet
spell. The clock is injected (the event loop's time in the server, a fake one in tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    def __init__(self, rate: float, *, burst: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be a number of messages per second > 0, got {rate!r}")
        self.rate = rate
        self.burst = max(1.0, 2 * rate) if burst is None else burst
        if self.burst < 1:
            raise ValueError(f"burst must be at least 1 message, got {self.burst!r}; raise "
                             "the rate or the burst")
        self.clock = clock
        self.allowance = self.burst
        self.checked_at = clock()

    def take(self) -> bool:
        """Take one message from the allowance; False once it is spent."""
        now = self.clock()
        self.allowance = min(self.burst, self.allowance + (now - self.checked_at) * self.rate)
        self.checked_at = now
        if self.allowance < 1:
            return False
        self.allowance -= 1
        return True
