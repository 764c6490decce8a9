"""The gates every LLM call passes, whoever makes it: the hourly budget, the circuit breaker,
cost accounting (the price table's cost when the provider reports none) and the figures.

One ``Gates`` per endpoint and process. A world's LLM agents, users' ``LLMBrain`` calls and
the angel share the world's; a training run builds its own from the same settings. Retries
live below the gates (``call_with_retries``, inside one deadline) and redaction in the
provider and the text model, so what the gates see is one finished call: refused before it
goes out, failed after its retries, or answered.
"""

from __future__ import annotations

import dataclasses

from agent_world.config import LLMConfig
from agent_world.decisions.metrics import Metrics
from agent_world.llm.breaker import CircuitBreaker
from agent_world.llm.budget import Budget
from agent_world.llm.prices import Price, configured_price
from agent_world.llm.redact import Redactor
from agent_world.types import Clock, LLMResponse, ProviderError

__all__ = ["ENDPOINT_FAILURES", "Gates", "LLMUnavailable"]

ENDPOINT_FAILURES = frozenset({"connect", "timeout", "rate_limited", "server", "overloaded",
                               "malformed", "empty", "too_large", "bad_request"})
"""Failures that count toward opening the breaker (the endpoint, not the key, is at fault)."""


class LLMUnavailable(ProviderError):
    """No call was made: the hourly budget is spent (``kind`` "budget") or the circuit
    breaker is open (``kind`` "breaker"). A ``ProviderError``, so every caller that falls
    back when the model cannot answer falls back here too."""


class Gates:
    def __init__(self, *, budget: Budget, breaker: CircuitBreaker, metrics: Metrics,
                 redact: Redactor, price: Price | None) -> None:
        self.budget = budget
        self.breaker = breaker
        self.metrics = metrics
        self.redact = redact
        self.price = price

    @classmethod
    def from_config(cls, cfg: LLMConfig, *, clock: Clock, redact: Redactor,
                    metrics: Metrics | None = None) -> Gates:
        """Gates with the limits ``llm`` sets: ``tokens_per_hour``, ``cost_per_hour`` (paced
        by ``budget_burst_minutes``), ``breaker_failures`` and ``breaker_cooldown_s``;
        their figures in ``metrics`` (new ones when not given)."""
        return cls(budget=Budget(tokens_per_hour=cfg.tokens_per_hour,
                                 cost_per_hour=cfg.cost_per_hour, clock=clock,
                                 burst_s=cfg.budget_burst_minutes * 60),
                   breaker=CircuitBreaker(failures=cfg.breaker_failures,
                                          cooldown_s=cfg.breaker_cooldown_s, clock=clock),
                   metrics=metrics or Metrics(clock), redact=redact,
                   price=configured_price(cfg))

    def admit(self) -> None:
        """Raise ``LLMUnavailable`` unless a call may go out now (in half_open, only the
        breaker's one probe is let through)."""
        if self.budget.exhausted():
            self.metrics.count("skipped")
            raise LLMUnavailable("budget", "the hourly LLM budget (llm.tokens_per_hour / "
                                 "llm.cost_per_hour) is spent")
        if not self.breaker.allow():
            self.metrics.count("skipped")
            raise LLMUnavailable("breaker", "the LLM circuit breaker is open "
                                 f"({self.breaker.reason or self.breaker.describe()})")

    def answered(self, response: LLMResponse) -> LLMResponse:
        """Charge an answer to the budget and count it; the response with its cost filled
        in from the price table when the provider reported none (so budgets and figures in
        dollars hold for every provider). The endpoint works, whatever the answer says."""
        if response.usage.cost is None and self.price is not None:
            usage = response.usage
            response = dataclasses.replace(response, usage=dataclasses.replace(
                usage, cost=self.price.cost(usage.prompt_tokens, usage.cached_tokens,
                                            usage.completion_tokens)))
        self.budget.charge(response.usage)
        self.metrics.answered(response.latency_s, response.usage)
        return response

    def succeeded(self) -> None:
        self.breaker.success()

    def failed(self, exc: ProviderError) -> str:
        """Count a call that failed after its retries and tell the breaker: a bad key or no
        credit stops calling until a restart, an endpoint failure counts toward opening it.
        The failure's message, redacted."""
        self.metrics.error(exc.kind)
        message = self.redact(str(exc))
        if exc.kind in ("auth", "credit"):
            self.breaker.stop(f"{exc.kind}: {message}")
        elif exc.kind in ENDPOINT_FAILURES:
            self.breaker.failure(f"{exc.kind}: {message}")
        return message
