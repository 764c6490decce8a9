"""Figures for /stats: counters, latency percentiles and hourly spending, and how a kind's
requests fare when the model cannot answer them all at once: time queued and time until
answered by urgency, decisions a second, requests dropped (thread-safe)."""

from __future__ import annotations

import math
import threading
from collections import Counter, deque

from agent_world.types import Clock, LLMUsage

__all__ = ["Metrics", "percentile"]

HISTORY = 1000
HOUR = 3600.0
RATE_WINDOW_S = 60.0  # decisions a second are counted over this much of the clock
LINES = ("urgent", "routine")  # requests.URGENT (0) and requests.NORMAL (1), by index


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
        # Urgent asks (a replacement of a queued request included) by pressing reason.
        self.urgent_reasons: Counter[str] = Counter()
        self.dropped = 0  # requests never sent: withdrawn from the queue, or refused by the
        # budget or the breaker
        self.tokens = 0
        self.cost = 0.0
        self._latencies: deque[float] = deque(maxlen=HISTORY)
        self._prompt_tokens: deque[int] = deque(maxlen=HISTORY)
        self._cached_tokens: deque[int] = deque(maxlen=HISTORY)
        self._answer_tokens: deque[int] = deque(maxlen=HISTORY)
        self._hour: deque[tuple[float, int, float]] = deque()
        # By line (urgent, routine): seconds a request waited in the queue, and from
        # entering it until its answer (or fault) came back.
        self._waits: tuple[deque[float], deque[float]] = (deque(maxlen=HISTORY),
                                                          deque(maxlen=HISTORY))
        self._reactions: tuple[deque[float], deque[float]] = (deque(maxlen=HISTORY),
                                                              deque(maxlen=HISTORY))
        self._taken = [0, 0]  # requests taken from each line, in all
        # Of the urgent line's, the news of danger (requests.DANGER): answered after.
        self._danger_reactions: deque[float] = deque(maxlen=HISTORY)
        self._danger_answered = 0
        self._applied_at: deque[float] = deque(maxlen=100_000)  # clock times
        self._main_ms: deque[float] = deque(maxlen=HISTORY)  # main thread per request sent

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

    def waited(self, line: int, seconds: float) -> None:
        """A request left the queue for its answerer after ``seconds`` in ``line``."""
        with self._lock:
            self._waits[line].append(seconds)
            self._taken[line] += 1

    def reacted(self, line: int, seconds: float, *, danger: bool = False) -> None:
        """A request's answer (or fault) came back ``seconds`` after it entered ``line``
        (``danger``: taken from the urgent line for news of danger)."""
        with self._lock:
            self._reactions[line].append(seconds)
            if danger:
                self._danger_reactions.append(seconds)
                self._danger_answered += 1

    def decided(self) -> None:
        """A decision was applied (counted in ``applied``, and timed for the rate)."""
        now = self.clock.now()
        with self._lock:
            self.applied += 1
            self._applied_at.append(now)

    def main_thread(self, ms: float) -> None:
        """The main thread spent ``ms`` sending one request (observation, prompt, hand-over)."""
        with self._lock:
            self._main_ms.append(ms)

    def mean_latency_s(self) -> float:
        """The mean latency of the answers kept (0.0 before any)."""
        with self._lock:
            latencies = list(self._latencies)
        return sum(latencies) / len(latencies) if latencies else 0.0

    def decisions_per_s(self) -> float:
        """Decisions applied a second over the last ``RATE_WINDOW_S`` of the clock (or since
        the first one, when that is shorter, from at least one second)."""
        now = self.clock.now()
        with self._lock:
            times = [t for t in self._applied_at if t > now - RATE_WINDOW_S]
        if not times:
            return 0.0
        return len(times) / max(1.0, min(RATE_WINDOW_S, now - times[0]))

    def attention(self) -> dict[str, float]:
        """Requests taken from each line, in all, and their queue waits and time until
        answered, p50 and p95 in ms (the last ``HISTORY`` of each); the main thread's ms per
        request sent (mean, p95)."""
        with self._lock:
            waits = [list(d) for d in self._waits]
            reactions = [list(d) for d in self._reactions]
            danger = list(self._danger_reactions)
            danger_answered = self._danger_answered
            main = list(self._main_ms)
            taken = list(self._taken)
        out: dict[str, float] = {}
        for i, line in enumerate(LINES):
            out[f"{line}_requests"] = taken[i]
            out[f"{line}_wait_p50_ms"] = round(percentile(waits[i], 0.5) * 1000, 1)
            out[f"{line}_wait_p95_ms"] = round(percentile(waits[i], 0.95) * 1000, 1)
            out[f"{line}_answered_p50_ms"] = round(percentile(reactions[i], 0.5) * 1000, 1)
            out[f"{line}_answered_p95_ms"] = round(percentile(reactions[i], 0.95) * 1000, 1)
        out["danger_answered"] = danger_answered
        out["danger_answered_p50_ms"] = round(percentile(danger, 0.5) * 1000, 1)
        out["danger_answered_p95_ms"] = round(percentile(danger, 0.95) * 1000, 1)
        out["main_ms_per_request"] = round(sum(main) / len(main), 3) if main else 0.0
        out["main_ms_per_request_p95"] = round(percentile(main, 0.95), 3)
        return out

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
