"""The hourly budget: tokens (and dollars) spent over the last rolling hour. When it is
spent, agents use their built-in brains until old spending drops out of the window.

It is also paced: spending may run at most ``burst_s`` seconds' share of the hourly budget
ahead of an even spread over the hour, so a dozen agents cannot spend the hour's budget in
its first minute and then wait out the other 59."""

from __future__ import annotations

import threading
from collections import deque

from agent_world.types import Clock, LLMUsage

__all__ = ["HOUR", "Budget"]

HOUR = 3600.0


class Budget:
    """``tokens_per_hour`` / ``cost_per_hour`` of 0 mean no limit. Calls are charged when
    they return, so concurrent calls can overshoot by what is in flight."""

    def __init__(self, *, tokens_per_hour: int, cost_per_hour: float, clock: Clock,
                 burst_s: float = 0.0) -> None:
        self.tokens_per_hour = tokens_per_hour
        self.cost_per_hour = cost_per_hour
        self.clock = clock
        self.burst_s = burst_s
        self._lock = threading.Lock()
        self._spent: deque[tuple[float, int, float]] = deque()
        self._tokens = 0
        self._cost = 0.0
        # What may still be spent ahead of the even pace (starts full), and when it was.
        self._ahead = [tokens_per_hour * burst_s / HOUR, cost_per_hour * burst_s / HOUR]
        self._ahead_at = clock.now()

    def _expire(self) -> None:
        horizon = self.clock.now() - HOUR
        while self._spent and self._spent[0][0] <= horizon:
            _t, tokens, cost = self._spent.popleft()
            self._tokens -= tokens
            self._cost -= cost

    def _refill(self) -> None:
        now = self.clock.now()
        elapsed, self._ahead_at = now - self._ahead_at, now
        for i, per_hour in enumerate((self.tokens_per_hour, self.cost_per_hour)):
            self._ahead[i] = min(per_hour * self.burst_s / HOUR,
                                 self._ahead[i] + elapsed * per_hour / HOUR)

    def charge(self, usage: LLMUsage) -> None:
        with self._lock:
            cost = usage.cost or 0.0
            self._spent.append((self.clock.now(), usage.total, cost))
            self._tokens += usage.total
            self._cost += cost
            self._refill()
            self._ahead[0] -= usage.total
            self._ahead[1] -= cost
            self._expire()

    def ahead_of_pace(self) -> bool:
        """Spending has run past its even pace by more than ``burst_s``' share."""
        if not self.burst_s:
            return False
        with self._lock:
            self._refill()
            return ((self.tokens_per_hour > 0 and self._ahead[0] <= 0)
                    or (self.cost_per_hour > 0 and self._ahead[1] <= 0))

    def spent(self) -> tuple[int, float]:
        """Tokens and dollars over the last hour."""
        with self._lock:
            self._expire()
            return self._tokens, max(0.0, self._cost)

    def exhausted(self) -> bool:
        tokens, cost = self.spent()
        return ((self.tokens_per_hour > 0 and tokens >= self.tokens_per_hour)
                or (self.cost_per_hour > 0 and cost >= self.cost_per_hour)
                or self.ahead_of_pace())

    def left(self) -> dict[str, float | int | None]:
        tokens, cost = self.spent()
        return {
            "tokens": max(0, self.tokens_per_hour - tokens) if self.tokens_per_hour else None,
            "cost": round(max(0.0, self.cost_per_hour - cost), 4) if self.cost_per_hour
            else None,
        }

    def refills_in(self) -> float:
        """Seconds until spending may go on: the pace catches up, or the oldest spending
        leaves the window."""
        with self._lock:
            self._refill()
            waits = [0.0]
            for level, per_hour, unit in zip(self._ahead, (self.tokens_per_hour,
                                                           self.cost_per_hour),
                                             (1.0, 1e-6), strict=True):
                if self.burst_s and per_hour > 0 and level <= 0:  # until it is above 0
                    waits.append((unit - level) / (per_hour / HOUR))
            tokens, cost = self._tokens, self._cost
            if self._spent and ((self.tokens_per_hour and tokens >= self.tokens_per_hour)
                                or (self.cost_per_hour and cost >= self.cost_per_hour)):
                waits.append(self._spent[0][0] + HOUR - self.clock.now())
            return max(waits)
