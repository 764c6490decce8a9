"""Figures for /stats: counters, latency percentiles and hourly spending (thread-safe)."""

from __future__ import annotations

import math
import threading
from collections import deque

from agent_world.types import Clock, LLMUsage

__all__ = ["Metrics", "percentile"]

HISTORY = 1000
HOUR = 3600.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class Metrics:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self.requests = 0  # decisions asked of the model (cache hits included)
        self.calls = 0  # calls that reached the provider (each retry is one more)
        self.retries = 0
        self.timeouts = 0
        self.errors: dict[str, int] = {}
        self.applied = 0
        self.invalid = 0
        self.fallbacks = 0  # decisions not made by the LLM (error, breaker, budget)
        self.skipped = 0  # requests not sent: breaker open or budget spent
        self.coalesced = 0  # queued requests replaced by a newer observation
        self.deferred = 0  # asks put off because a full round of work was already queued
        self.paced = 0  # unprompted asks put off by the pace (per agent or for all)
        self.tokens = 0
        self.cost = 0.0
        self._latencies: deque[float] = deque(maxlen=HISTORY)
        self._prompt_tokens: deque[int] = deque(maxlen=HISTORY)
        self._cached_tokens: deque[int] = deque(maxlen=HISTORY)
        self._answer_tokens: deque[int] = deque(maxlen=HISTORY)
        self._hour: deque[tuple[float, int, float]] = deque()

    def request(self) -> None:
        with self._lock:
            self.requests += 1

    def call(self) -> None:
        with self._lock:
            self.calls += 1

    def retry(self, kind: str) -> None:
        with self._lock:
            self.retries += 1
            self.errors[kind] = self.errors.get(kind, 0) + 1
            if kind == "timeout":
                self.timeouts += 1

    def error(self, kind: str) -> None:
        with self._lock:
            self.errors[kind] = self.errors.get(kind, 0) + 1
            if kind == "timeout":
                self.timeouts += 1
            if kind in ("schema", "length"):
                self.invalid += 1

    def answered(self, latency_s: float, usage: LLMUsage | None = None) -> None:
        now = self.clock.now()
        with self._lock:
            self._latencies.append(latency_s)
            if usage is None:  # a brain that spends no tokens
                return
            self._prompt_tokens.append(usage.prompt_tokens)
            self._cached_tokens.append(usage.cached_tokens)
            self._answer_tokens.append(usage.completion_tokens)
            self.tokens += usage.total
            self.cost += usage.cost or 0.0
            self._hour.append((now, usage.total, usage.cost or 0.0))
            while self._hour and self._hour[0][0] <= now - HOUR:
                self._hour.popleft()

    def count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def figures(self) -> dict[str, float | int]:
        now = self.clock.now()
        with self._lock:
            latencies = list(self._latencies)
            prompts = list(self._prompt_tokens)
            cached = list(self._cached_tokens)
            answers = list(self._answer_tokens)
            hour = [(t, n, c) for t, n, c in self._hour if t > now - HOUR]
        return {
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
            "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
            "tokens_per_hour": sum(n for _t, n, _c in hour),
            "cost_per_hour": round(sum(c for _t, _n, c in hour), 4),
            "prompt_tokens_per_decision": round(sum(prompts) / len(prompts)) if prompts else 0,
            "cached_tokens_per_decision": round(sum(cached) / len(cached)) if cached else 0,
            "answer_tokens_per_decision": round(sum(answers) / len(answers)) if answers else 0,
            "calls_last_hour": len(hour),
        }
