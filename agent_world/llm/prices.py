"""What models cost, for the start-up estimate and the cost of calls whose provider
reports none: US dollars per million tokens (prompt, cached prompt, answer), list prices.

``price_of(model)`` finds a model by the longest known name its name contains
(``openai/gpt-4o-mini`` is ``gpt-4o-mini``); ``llm.prices`` adds to the table or replaces
its entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agent_world.config import LLMConfig

__all__ = ["PRICES", "Price", "configured_price", "price_of"]


@dataclass(frozen=True, slots=True)
class Price:
    input: float  # $ per million uncached prompt tokens
    cached_input: float  # $ per million prompt tokens read from the provider's cache
    output: float  # $ per million answer tokens

    def describe(self) -> str:
        return (f"${self.input:g} / ${self.cached_input:g} cached / ${self.output:g} out "
                "per million tokens")

    def cost(self, prompt: int, cached: int, completion: int) -> float:
        """Dollars for one call's tokens."""
        return ((prompt - cached) * self.input + cached * self.cached_input
                + completion * self.output) / 1e6


# List prices as published by the providers (OpenAI caches automatically at half price;
# Anthropic reads cached prompts at a tenth).
PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.075, 0.60),
    "gpt-4o": Price(2.50, 1.25, 10.00),
    "gpt-4.1-nano": Price(0.10, 0.025, 0.40),
    "gpt-4.1-mini": Price(0.40, 0.10, 1.60),
    "gpt-4.1": Price(2.00, 0.50, 8.00),
    "claude-haiku-4-5": Price(1.00, 0.10, 5.00),
    "claude-3-5-haiku": Price(0.80, 0.08, 4.00),
    "claude-sonnet-4": Price(3.00, 0.30, 15.00),
    "local": Price(0.0, 0.0, 0.0),
}


def price_of(model: str, provider: str = "",
             table: Mapping[str, Price] = PRICES) -> Price | None:
    """The price of ``model`` in ``table`` (a local model is free); None when unknown."""
    if provider == "local":
        return PRICES["local"]
    name = model.lower()
    known = [key for key in table if key.lower() in name]
    return table[max(known, key=len)] if known else None


def configured_price(cfg: LLMConfig) -> Price | None:
    """The price of ``llm.model``: from ``llm.prices`` over the built-in table; None when
    neither knows it."""
    table = dict(PRICES)
    for model, text in cfg.prices.items():  # checked when the configuration was read
        prompt, cached, answer = (float(part) for part in text.split("/"))
        table[model] = Price(prompt, cached, answer)
    return price_of(cfg.model, cfg.provider, table)
