"""The configured LLM as a user's brain sees it (``Brain.llm``): a prompt in, text out.

A user's ``LLMBrain`` calls it from a brain worker thread, inside ``decide`` or
``reflect``. The call goes through the LLM agents' transport (``ProviderTextModel``): it
runs on the transport's loop thread while the worker waits, and passes the same gates
(hourly budget, circuit breaker, cost, figures), so brains of your own cannot spend past
the limits the configuration sets, and their tokens count in ``/stats`` like any other.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from agent_world.config import LLMConfig
from agent_world.contract.memory import NoEmbeddings
from agent_world.llm.embeddings import Embedder
from agent_world.llm.gates import LLMUnavailable
from agent_world.llm.textmodel import ProviderTextModel
from agent_world.llm.transport import Transport
from agent_world.types import LLMRequest, ProviderError

__all__ = ["BrainLLM", "LLMUnavailable"]


class BrainLLM:
    def __init__(self, cfg: LLMConfig, transport: Transport, *,
                 rules: Callable[[], str]) -> None:
        """``rules`` gives the system prompt LLM agents get now (the world's rules, the
        actions and the abilities)."""
        self.cfg = cfg
        self.rules = rules
        self._model = ProviderTextModel(cfg, transport)
        self._lock = threading.Lock()
        self.calls = 0
        self.failures = 0
        self.embedder: Embedder | None = None  # minds.embeddings (the session sets it)

    def complete(self, prompt: str, *, system: str = "", max_tokens: int | None = None,
                 temperature: float | None = None) -> str:
        """The model's answer to ``prompt`` after ``system``. ``LLMUnavailable`` when no
        call can be made now; ``ProviderError`` when the call failed (after retries)."""
        request = LLMRequest(
            system=system, prompt=prompt,
            temperature=self.cfg.temperature if temperature is None else temperature,
            max_tokens=max_tokens or self.cfg.max_tokens, seed=self.cfg.seed or None)
        try:
            response = self._model.ask(request)
        except LLMUnavailable:
            raise
        except ProviderError:
            with self._lock:
                self.failures += 1
            raise
        with self._lock:
            self.calls += 1
        return response.text

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The embedding vectors of ``texts`` from ``minds.embeddings``' endpoint, within
        ``minds.recall_deadline_ms`` (``NoEmbeddings`` when none is configured;
        ``ProviderError`` when the call fails, is late or its breaker is open)."""
        if self.embedder is None:
            raise NoEmbeddings("no embedding endpoint is configured (minds.embeddings)")
        return self.embedder.embed(texts)

    def close_thread(self) -> None:
        """Nothing of a worker thread's to release: the transport's loop holds the
        connections (kept for brain workers, which call it as they end)."""
