"""Retries: which failures are worth another try, how long to wait, and one overall deadline
that every attempt and every wait lives inside."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass

from agent_world.types import Clock, LLMProvider, LLMRequest, LLMResponse, ProviderError

__all__ = ["ProviderPause", "RetryPolicy", "call_with_retries"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """Backoff ``min(base * 2^n, cap)`` with jitter; ``Retry-After`` honoured up to a cap
    (a server asking for longer gets no retry). Only transport failures, 408/409, 429 and
    5xx/529 are retried (``ProviderError.retryable``); never other 4xx."""

    max_retries: int = 2
    base_s: float = 0.5
    cap_s: float = 8.0
    retry_after_cap_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.base_s < 0 or self.cap_s < self.base_s:
            raise ValueError(f"need 0 <= base_s <= cap_s, got {self.base_s}, {self.cap_s}")

    def delay(self, attempt: int, error: ProviderError, rng: random.Random) -> float | None:
        """Seconds to wait before retry ``attempt + 1``, or None: do not retry."""
        if not error.retryable or attempt >= self.max_retries:
            return None
        if error.retry_after is not None:
            after = float(error.retry_after)
            return after if after <= self.retry_after_cap_s else None
        wait = min(self.base_s * 2.0**attempt, self.cap_s)
        if error.kind == "overloaded":  # 529: the provider as a whole is struggling
            wait = min(wait * 2, self.cap_s * 2)
        return wait * (0.5 + 0.5 * rng.random())


class ProviderPause:
    """A 429 pauses the whole provider, not just the request that got it: every worker
    waits until ``until`` (a clock time) before its next call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.until = 0.0

    def extend(self, until: float) -> None:
        with self._lock:
            self.until = max(self.until, until)


async def call_with_retries(
    provider: LLMProvider,
    request: LLMRequest,
    *,
    deadline: float,
    clock: Clock,
    policy: RetryPolicy,
    rng: random.Random,
    pause: ProviderPause,
    on_retry: Callable[[ProviderError, float], None] = lambda _e, _d: None,
) -> LLMResponse:
    """Call ``provider`` until it answers, a failure is final, or ``deadline`` passes."""
    attempt = 0
    while True:
        if pause.until > clock.now():
            if pause.until >= deadline:
                raise ProviderError("rate_limited", "the provider is paused after a 429 past "
                                    "this decision's deadline")
            await clock.sleep_until(pause.until)
        remaining = deadline - clock.now()
        if remaining <= 0:
            raise ProviderError("timeout", "the decision's deadline passed "
                                "(llm.request_timeout_s)")
        try:
            return await provider.complete(request=request, timeout_s=remaining)
        except ProviderError as exc:
            wait = policy.delay(attempt, exc, rng)
            if wait is None or clock.now() + wait >= deadline:
                raise
            if exc.kind == "rate_limited":
                pause.extend(clock.now() + wait)
            on_retry(exc, wait)
            await clock.sleep_until(clock.now() + wait)
            attempt += 1
