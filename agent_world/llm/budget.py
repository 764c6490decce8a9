"""The hourly budget: tokens (and dollars, where the provider reports cost) spent over the
last rolling hour. When it is spent, agents use their built-in brains until old spending
drops out of the window."""

from __future__ import annotations

import threading
from collections import deque

from agent_world.types import Clock, LLMUsage

__all__ = ["HOUR", "Budget"]

HOUR = 3600.0


class Budget:
    """``tokens_per_hour`` / ``cost_per_hour`` of 0 mean no limit. Calls are charged when
    they return, so concurrent calls can overshoot by what is in flight."""

    def __init__(self, *, tokens_per_hour: int, cost_per_hour: float, clock: Clock) -> None:
        self.tokens_per_hour = tokens_per_hour
        self.cost_per_hour = cost_per_hour
        self.clock = clock
        self._lock = threading.Lock()
        self._spent: deque[tuple[float, int, float]] = deque()
        self._tokens = 0
        self._cost = 0.0

    def _expire(self) -> None:
        horizon = self.clock.now() - HOUR
        while self._spent and self._spent[0][0] <= horizon:
            _t, tokens, cost = self._spent.popleft()
            self._tokens -= tokens
            self._cost -= cost

    def charge(self, usage: LLMUsage) -> None:
        with self._lock:
            cost = usage.cost or 0.0
            self._spent.append((self.clock.now(), usage.total, cost))
            self._tokens += usage.total
            self._cost += cost
            self._expire()

    def spent(self) -> tuple[int, float]:
        """Tokens and dollars over the last hour."""
        with self._lock:
            self._expire()
            return self._tokens, max(0.0, self._cost)

    def exhausted(self) -> bool:
        tokens, cost = self.spent()
        return ((self.tokens_per_hour > 0 and tokens >= self.tokens_per_hour)
                or (self.cost_per_hour > 0 and cost >= self.cost_per_hour))

    def left(self) -> dict[str, float | int | None]:
        tokens, cost = self.spent()
        return {
            "tokens": max(0, self.tokens_per_hour - tokens) if self.tokens_per_hour else None,
            "cost": round(max(0.0, self.cost_per_hour - cost), 4) if self.cost_per_hour
            else None,
        }

    def refills_in(self) -> float:
        """Seconds until the oldest spending leaves the window."""
        with self._lock:
            if not self._spent:
                return 0.0
            return max(0.0, self._spent[0][0] + HOUR - self.clock.now())
