"""Embeddings for memory by meaning: an OpenAI-compatible ``/embeddings`` endpoint.

``minds.embeddings`` names the model profile (``llm.models``, or ``default``) whose endpoint,
model, key, timeouts, budget and breaker are used. Brains call ``Embedder.embed`` from their
worker threads (``LLMBrain``'s ``EmbeddingMemory``, at recall time); the request runs on the
embedder's own event-loop thread, never on the main thread, and is bounded by
``minds.recall_deadline_ms`` as a whole. No retries: a recall that cannot have its vectors
in time ranks by BM25 instead (``EmbeddingMemory``), which is what a retry would cost the
decision waiting on it. Failures count toward the profile's own circuit breaker; while it
is open, no call is made (``LLMUnavailable``) and recall stays lexical.

Replay never calls it: decisions are logged inputs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Sequence
from typing import Any, NoReturn

import aiohttp
import orjson

from agent_world.config import LLMConfig
from agent_world.llm.gates import Gates
from agent_world.llm.http import client_timeout, estimate_tokens, read_json
from agent_world.llm.redact import Redactor
from agent_world.llm.transport import LoopThread, TransportClosed
from agent_world.types import LLMUsage, ProviderError

__all__ = ["MAX_EMBED_BYTES", "Embedder"]

MAX_EMBED_BYTES = 64_000_000  # vectors are long: 64 texts of 3,072 floats are ~4 MB of JSON
CLOSE_S = 2.0


class Embedder:
    """One embedding model, reached over HTTP on a loop thread of its own."""

    def __init__(self, cfg: LLMConfig, gates: Gates, *, deadline_s: float,
                 redactor: Redactor | None = None, profile: str = "") -> None:
        if deadline_s <= 0:
            raise ValueError(f"deadline_s must be > 0, got {deadline_s}")
        self.cfg = cfg
        self.gates = gates
        self.deadline_s = deadline_s
        self.profile = profile or "default"
        self.redact = redactor or gates.redact
        key = cfg.api_key()
        if key:
            self.redact.add(key)
        self._key = key
        self.url = f"{cfg.endpoint}/embeddings"
        self._thread = LoopThread(f"embed-loop-{self.profile}")
        self._session: aiohttp.ClientSession | None = None  # on the loop thread only
        self._lock = threading.Lock()
        self.calls = 0
        self.failures = 0
        self.texts = 0
        self.last_error = ""

    def __repr__(self) -> str:
        return f"Embedder({self.url}, model={self.cfg.model!r})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order, within ``deadline_s``. From a worker thread:
        ``RuntimeError`` on the main thread (a tick never waits on the network);
        ``LLMUnavailable`` when the budget or the breaker says no; ``ProviderError`` when
        the call fails or is late."""
        if threading.current_thread() is threading.main_thread():
            raise RuntimeError("embeddings are asked for on a brain's worker thread, never "
                               "on the main thread")
        if not texts:
            return []
        self.gates.admit()
        started = time.perf_counter()
        try:
            future = self._thread.submit(self._post(list(texts)))
        except TransportClosed as exc:
            raise ProviderError("connect", str(exc), sent=False) from None
        try:
            vectors, usage = future.result(timeout=self.deadline_s + 0.25)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self._failed(ProviderError("timeout", f"no embeddings within "
                                       f"{self.deadline_s * 1000:.0f} ms "
                                       "(minds.recall_deadline_ms)"))
        except ProviderError as exc:
            self._failed(exc)
        except concurrent.futures.CancelledError:
            self._failed(ProviderError("connect", "the embedding call was cancelled (the "
                                       "world is stopping)"))
        self.gates.succeeded()
        self.gates.budget.charge(usage)
        self.gates.metrics.answered(time.perf_counter() - started, usage)
        with self._lock:
            self.calls += 1
            self.texts += len(texts)
        return vectors

    def _failed(self, exc: ProviderError) -> NoReturn:
        message = self.gates.failed(exc)
        with self._lock:
            self.failures += 1
            self.last_error = f"{exc.kind}: {message}"
        raise exc

    async def _post(self, texts: list[str]) -> tuple[list[list[float]], LLMUsage]:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=client_timeout(
                self.cfg.connect_timeout_s, self.cfg.read_timeout_s))
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        data = orjson.dumps({"model": self.cfg.model, "input": texts})
        try:
            async with asyncio.timeout(self.deadline_s):
                async with self._session.post(self.url, data=data,
                                              headers=headers) as response:
                    doc = await read_json(response, MAX_EMBED_BYTES, self.redact)
        except TimeoutError:
            raise ProviderError("timeout", f"no embeddings within "
                                f"{self.deadline_s * 1000:.0f} ms from {self.url} "
                                "(minds.recall_deadline_ms)") from None
        except aiohttp.ClientError as exc:
            raise ProviderError("connect", f"{type(exc).__name__}: "
                                f"{self.redact(str(exc))[:200]}") from None
        return _vectors(doc, len(texts)), _usage(doc, texts)

    def stats(self) -> dict[str, Any]:
        return {"profile": self.profile, "url": self.url, "model": self.cfg.model,
                "calls": self.calls, "texts": self.texts, "failures": self.failures,
                "breaker": self.gates.breaker.describe(),
                **({"last error": self.last_error} if self.last_error else {})}

    def close(self) -> None:
        self._thread.stop(self._aclose(), CLOSE_S)

    async def _aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def _vectors(doc: dict[str, Any], count: int) -> list[list[float]]:
    """``data[i].embedding`` in ``index`` order; ProviderError ``malformed`` otherwise."""
    data = doc.get("data")
    if not isinstance(data, list) or len(data) != count:
        held = len(data) if isinstance(data, list) else "no"
        raise ProviderError("malformed", f"the answer holds {held} embeddings for {count} "
                            "texts", status=200)
    ordered: list[list[float]] = [[] for _ in range(count)]
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if (not isinstance(index, int) or not 0 <= index < count or ordered[index]
                or not isinstance(vector, list) or not vector
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                           for x in vector)):
            raise ProviderError("malformed", f"data[{position}] is not an embedding "
                                "(index, embedding: [numbers])", status=200)
        ordered[index] = [float(x) for x in vector]
    return ordered


def _usage(doc: dict[str, Any], texts: list[str]) -> LLMUsage:
    usage = doc.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        return LLMUsage(prompt_tokens=tokens, completion_tokens=0)
    return LLMUsage(prompt_tokens=sum(estimate_tokens(t) for t in texts), completion_tokens=0,
                    estimated=True)
