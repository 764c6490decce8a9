"""The response cache: a bounded LRU keyed by a canonical hash of everything that makes two
calls the same (provider, base URL, model, messages, sampling parameters, output format,
prompt-template version) and nothing else: never the key, headers or timeouts."""

from __future__ import annotations

import concurrent.futures
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping

import orjson

from agent_world.types import JSON, LLMRequest, LLMResponse

__all__ = ["ResponseCache", "cache_key"]


_GIL_SAFE_CHUNK = 1024
"""hashlib releases the GIL for inputs of 2 KiB and more; on the main thread that hands the
GIL to busy worker threads and costs milliseconds to get back, so feed it smaller pieces."""


def cache_key(identity: Mapping[str, JSON], request: LLMRequest, template_version: str) -> str:
    doc = {"identity": dict(identity), "request": request.to_dict(),
           "template": template_version}
    data = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    digest = hashlib.sha256()
    for start in range(0, len(data), _GIL_SAFE_CHUNK):
        digest.update(data[start:start + _GIL_SAFE_CHUNK])
    return digest.hexdigest()


class ResponseCache:
    """Thread-safe LRU of valid, schema-passing, fully finished answers. Identical calls in
    flight at the same time collapse into one (``claim`` / ``release``)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[str, LLMResponse] = OrderedDict()
        self._flying: dict[str, concurrent.futures.Future[LLMResponse | None]] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: str) -> LLMResponse | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: str, response: LLMResponse) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = response
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def claim(self, key: str) -> concurrent.futures.Future[LLMResponse | None] | None:
        """None: the caller makes the call (and must ``release``). Otherwise a future for
        the same call already in flight: its answer, or None if it failed."""
        with self._lock:
            flying = self._flying.get(key)
            if flying is not None:
                return flying
            self._flying[key] = concurrent.futures.Future()
            return None

    def release(self, key: str, response: LLMResponse | None) -> None:
        with self._lock:
            future = self._flying.pop(key, None)
        if future is not None and not future.done():
            future.set_result(response)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0
