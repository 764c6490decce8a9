"""The configured LLM as a user's brain sees it (``Brain.llm``): a prompt in, text out.

A user's ``LLMBrain`` calls it from a brain worker thread, inside ``decide`` or
``reflect``. Each worker thread gets its own provider and event loop (a
``ProviderTextModel``), made on first use and closed when the thread ends. Calls pass the
LLM agents' gates (hourly budget, circuit breaker, cost, figures), so brains of your own
cannot spend past the limits the configuration sets, and their tokens count in ``/stats``
like any other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from agent_world.config import LLMConfig
from agent_world.llm.gates import Gates, LLMUnavailable
from agent_world.llm.textmodel import ProviderTextModel
from agent_world.types import LLMProvider, LLMRequest, ProviderError

__all__ = ["BrainLLM", "LLMUnavailable"]


class BrainLLM:
    def __init__(self, cfg: LLMConfig, factory: Callable[[], LLMProvider], *, gates: Gates,
                 rules: Callable[[], str]) -> None:
        """``rules`` gives the system prompt LLM agents get now (the world's rules, the
        actions and the abilities)."""
        self.cfg = cfg
        self.rules = rules
        self._factory = factory
        self._gates = gates
        # Each thread's model, kept here and not in a threading.local: a fork (the state
        # hash's child) clears other threads' locals in the child, and a connection freed
        # there unregisters its socket from the epoll instance the child shares with this
        # process, so the worker would never hear its answer.
        self._models: dict[threading.Thread, ProviderTextModel] = {}
        self._lock = threading.Lock()
        self.calls = 0
        self.failures = 0

    def complete(self, prompt: str, *, system: str = "", max_tokens: int | None = None,
                 temperature: float | None = None) -> str:
        """The model's answer to ``prompt`` after ``system``. ``LLMUnavailable`` when no
        call can be made now; ``ProviderError`` when the call failed (after retries)."""
        me = threading.current_thread()
        with self._lock:
            model = self._models.get(me)
            if model is None:
                model = self._models[me] = ProviderTextModel(self.cfg, self._factory,
                                                             gates=self._gates)
        request = LLMRequest(
            system=system, prompt=prompt,
            temperature=self.cfg.temperature if temperature is None else temperature,
            max_tokens=max_tokens or self.cfg.max_tokens, seed=self.cfg.seed or None)
        try:
            response = model.ask(request)
        except LLMUnavailable:
            raise
        except ProviderError:
            with self._lock:
                self.failures += 1
            raise
        with self._lock:
            self.calls += 1
        return response.text

    def close_thread(self) -> None:
        """Release this thread's provider (a brain worker calls it as it ends)."""
        with self._lock:
            model = self._models.pop(threading.current_thread(), None)
        if model is not None:
            model.close()
