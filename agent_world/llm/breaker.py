"""The circuit breaker: after repeated failures the endpoint gets a rest instead of a
stream of doomed calls, and agents use their built-in brains meanwhile."""

from __future__ import annotations

import threading

from agent_world.types import Clock

__all__ = ["CircuitBreaker"]

MAX_COOLDOWN_S = 600.0


class CircuitBreaker:
    """closed → (``failures`` in a row) → open → (cooldown over) → half_open: one probe call;
    its success closes the breaker, its failure reopens it with twice the cooldown (at most
    ten minutes). ``stop`` (bad key, no credit) keeps it open until the program restarts."""

    def __init__(self, *, failures: int, cooldown_s: float, clock: Clock) -> None:
        if failures < 1:
            raise ValueError(f"failures must be >= 1, got {failures}")
        self.threshold = failures
        self.base_cooldown = cooldown_s
        self.clock = clock
        self._lock = threading.Lock()
        self.state = "closed"
        self.failures = 0
        self.cooldown = cooldown_s
        self.reopen_at = 0.0
        self.opened = 0
        self.reason = ""
        self._probe_out = False

    def allow(self) -> bool:
        """May a call go out now? (In half_open, only the one probe.)"""
        with self._lock:
            if self.state == "closed":
                return True
            if self.state == "open" and self.clock.now() >= self.reopen_at:
                self.state = "half_open"
                self._probe_out = False
            if self.state == "half_open" and not self._probe_out:
                self._probe_out = True
                return True
            return False

    def would_allow(self) -> bool:
        """Whether calls may go out now or soon, without claiming the probe (for the main
        thread's planning: in half_open the workers' ``allow`` lets only the probe pass)."""
        with self._lock:
            if self.state == "closed":
                return True
            if self.state == "stopped":
                return False
            if self.state == "half_open":
                return True  # a probe is (or may go) out; its result settles the state
            return self.clock.now() >= self.reopen_at

    def success(self) -> None:
        with self._lock:
            if self.state == "stopped":
                return
            self.state = "closed"
            self.failures = 0
            self.cooldown = self.base_cooldown
            self._probe_out = False
            self.reason = ""

    def failure(self, reason: str) -> None:
        with self._lock:
            if self.state == "stopped":
                return
            self.failures += 1
            if self.state == "half_open":
                self.cooldown = min(self.cooldown * 2, MAX_COOLDOWN_S)
                self._open(reason)
            elif self.state == "closed" and self.failures >= self.threshold:
                self._open(reason)

    def release(self) -> None:
        """A call let through was abandoned before it said anything of the endpoint (the
        decision was given up or withdrawn): in half_open the probe may go again."""
        with self._lock:
            if self.state == "half_open":
                self._probe_out = False

    def stop(self, reason: str) -> None:
        with self._lock:
            self.state = "stopped"
            self.reason = reason

    def _open(self, reason: str) -> None:
        self.state = "open"
        self.reopen_at = self.clock.now() + self.cooldown
        self.opened += 1
        self.reason = reason
        self._probe_out = False

    def seconds_left(self) -> float:
        with self._lock:
            return max(0.0, self.reopen_at - self.clock.now()) if self.state == "open" else 0.0

    def describe(self) -> str:
        with self._lock:
            if self.state == "open":
                left = max(0.0, self.reopen_at - self.clock.now())
                return f"open ({left:.0f} s left)"
            return self.state
