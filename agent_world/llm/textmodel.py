"""One thread's view of the configured LLM: a request in, the model's response out.

The angel, the trainer's generator and each users' brain worker ask from a thread of their
own, one request at a time, so this adapter owns one provider and one event loop, both
created on first use on the calling thread, and calls with the same retry policy and
deadline as agent decisions, through the given ``Gates`` (budget, breaker, cost, figures).
The provider and the loop belong to that thread:
``close`` must run there too (the angel closes its generator when its thread ends), never on
a thread whose own event loop is running, such as the main thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import threading
from typing import TYPE_CHECKING

from agent_world.config import LLMConfig
from agent_world.llm.gates import Gates
from agent_world.llm.retry import ProviderPause, RetryPolicy, call_with_retries
from agent_world.types import LLMProvider, LLMRequest, LLMResponse, MonotonicClock, ProviderError

if TYPE_CHECKING:
    from agent_world.llm.answerer import ProviderFactory

__all__ = ["ProviderTextModel"]

SYSTEM = ("You write ability source files for a simulated world, following the contract and "
          "the examples you are given exactly. Answer with the Python source file only.")


class ProviderTextModel:
    def __init__(self, cfg: LLMConfig, factory: ProviderFactory, *, gates: Gates,
                 max_tokens: int = 1200) -> None:
        """``gates.redact`` takes secrets out of every answer before the caller sees it, so
        a source that echoes a key is checked, hashed and saved without it."""
        self.cfg = cfg
        self.gates = gates
        self._factory = factory
        self._max_tokens = max_tokens
        self._loop: asyncio.AbstractEventLoop | None = None
        self._provider: LLMProvider | None = None
        self._clock = MonotonicClock()
        self._policy = RetryPolicy(max_retries=cfg.max_retries,
                                   retry_after_cap_s=cfg.retry_after_cap_s)
        self._pause = ProviderPause()
        self._rng = random.Random()  # backoff jitter only; nothing in the world depends on it
        # The thread that made the loop and the provider (an object: idents are reused).
        self._owner: threading.Thread | None = None

    def _check_thread(self, what: str) -> None:
        if self._owner is not None and threading.current_thread() is not self._owner:
            raise RuntimeError(f"{what} ran on thread {threading.current_thread().name!r}; "
                               "this model belongs to the thread that first used it (the "
                               "angel's), where its event loop lives")

    def complete(self, prompt: str) -> str:
        """The model's answer; raises ProviderError when the call finally fails."""
        request = LLMRequest(system=SYSTEM, prompt=prompt, temperature=0.2,
                             max_tokens=self._max_tokens, seed=self.cfg.seed or None)
        return self.ask(request).text

    def ask(self, request: LLMRequest) -> LLMResponse:
        """The model's response (text redacted) to any request; ``LLMUnavailable`` (a
        ProviderError) when the gates let no call out, ProviderError when the call finally
        fails."""
        self._check_thread("ask()")
        gates = self.gates
        gates.admit()
        if self._loop is None:
            self._owner = threading.current_thread()
            self._loop = asyncio.new_event_loop()
        deadline = self._clock.now() + self.cfg.request_timeout_s

        def on_retry(exc: ProviderError, _wait: float) -> None:
            gates.metrics.retry(exc.kind)
            gates.metrics.call()

        gates.metrics.call()
        try:
            if self._provider is None:
                self._provider = self._factory()
            response = self._loop.run_until_complete(call_with_retries(
                self._provider, request, deadline=deadline, clock=self._clock,
                policy=self._policy, rng=self._rng, pause=self._pause, on_retry=on_retry))
        except ProviderError as exc:
            gates.failed(exc)
            raise
        response = gates.answered(response)
        gates.succeeded()
        return dataclasses.replace(response, text=gates.redact(response.text))

    def close(self) -> None:
        """Release the provider's connections, on the thread that used the model."""
        if self._loop is None:
            return
        self._check_thread("close()")
        if self._provider is not None:
            self._loop.run_until_complete(self._provider.aclose())
            self._provider = None
        self._loop.close()
        self._loop = None
