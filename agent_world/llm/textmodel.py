"""A thread's view of the configured LLM: a request in, the model's response out.

The angel, the trainer's generator, re-asked decisions and users' brains ask from threads of
their own and wait for the answer. They all go through the model's ``Transport`` (one client,
one set of breakers, one budget with LLM agents): the call runs on the transport's loop
thread with the same retry policy and deadline as agent decisions, through its ``Gates``
(budget, breaker, cost, figures), while the asking thread waits. Any thread but the
transport's own may ask, and close.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from typing import TYPE_CHECKING

from agent_world.config import LLMConfig
from agent_world.llm.gates import Gates
from agent_world.llm.transport import Transport, TransportClosed
from agent_world.types import LLMRequest, LLMResponse, MonotonicClock, ProviderError

if TYPE_CHECKING:
    from agent_world.llm.answerer import ProviderFactory

__all__ = ["ProviderTextModel"]

SYSTEM = ("You write ability source files for a simulated world, following the contract and "
          "the examples you are given exactly. Answer with the Python source file only.")


class ProviderTextModel:
    def __init__(self, cfg: LLMConfig, transport: Transport, *, max_tokens: int = 1200,
                 owns_transport: bool = False) -> None:
        """``transport.gates.redact`` takes secrets out of every answer before the caller
        sees it, so a source that echoes a key is checked, hashed and saved without it.
        ``owns_transport``: ``close`` closes it (otherwise its owner does)."""
        self.cfg = cfg
        self.transport = transport
        self.gates: Gates = transport.gates
        self._max_tokens = max_tokens
        self._owns = owns_transport
        self._clock = MonotonicClock()

    @classmethod
    def alone(cls, cfg: LLMConfig, factory: ProviderFactory, *, gates: Gates,
              max_tokens: int = 1200) -> ProviderTextModel:
        """A model with a transport of its own (a training run, re-asking), closed with it."""
        from agent_world.llm.providers import build_transport  # noqa: PLC0415 - a cycle

        return cls(cfg, build_transport(cfg, gates, factory=factory), max_tokens=max_tokens,
                   owns_transport=True)

    def complete(self, prompt: str) -> str:
        """The model's answer; raises ProviderError when the call finally fails."""
        request = LLMRequest(system=SYSTEM, prompt=prompt, temperature=0.2,
                             max_tokens=self._max_tokens, seed=self.cfg.seed or None)
        return self.ask(request).text

    def ask(self, request: LLMRequest) -> LLMResponse:
        """The model's response (text redacted) to any request; ``LLMUnavailable`` (a
        ProviderError) when the gates let no call out, ProviderError when the call finally
        fails or the transport was closed."""
        gates = self.gates
        gates.admit()
        deadline = self.transport.clock.now() + self.cfg.request_timeout_s

        def on_retry(exc: ProviderError, _wait: float) -> None:
            gates.metrics.retry(exc.kind)
            gates.metrics.call()

        gates.metrics.call()
        try:
            response = self.transport.run(self.transport.complete(
                request, deadline=deadline, on_retry=on_retry))
        except ProviderError as exc:
            gates.failed(exc)
            raise
        except (concurrent.futures.CancelledError, TransportClosed):
            gates.breaker.release()
            raise ProviderError("connect", "the LLM transport is closed (the program is "
                                "stopping); the call was not made or not finished") from None
        response = gates.answered(response)
        gates.succeeded()
        return dataclasses.replace(response, text=gates.redact(response.text))

    def close(self) -> None:
        """Release the transport if it is this model's own (any thread but its loop's)."""
        if self._owns:
            self.transport.close()
