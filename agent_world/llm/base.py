"""The part every HTTP provider shares: one aiohttp session (a keep-alive connection pool
sized to the transport's concurrency) per endpoint, on the loop that calls it, explicit
timeouts, one overall limit per attempt, and transport failures turned into
``ProviderError`` kinds the retry policy understands."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson

from agent_world.llm.http import client_timeout, read_json
from agent_world.llm.redact import Redactor
from agent_world.types import JSON, LLMRequest, LLMResponse, ProviderError

__all__ = ["KEEPALIVE_S", "HTTPProvider"]

KEEPALIVE_S = 30.0  # an idle connection kept this long for the next request


class HTTPProvider:
    """Subclasses say where to post (``url``), what (``body``, ``headers``) and how to read
    the answer (``parse``). The key lives in a private attribute that no repr shows."""

    name = "http"

    def __init__(self, *, base_url: str, model: str, api_key: str | None,
                 connect_timeout_s: float, read_timeout_s: float, max_response_bytes: int,
                 structured: str, redactor: Redactor | None = None,
                 max_connections: int = 100) -> None:
        """``max_connections``: the session's pool (open connections to the endpoint at
        once); the transport passes ``llm.max_concurrent``, so it never waits on the pool."""
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {max_connections}")
        self.max_connections = max_connections
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.structured = structured
        self._key = api_key
        self._timeout = client_timeout(connect_timeout_s, read_timeout_s)
        self._limit = max_response_bytes
        self.redact = redactor or Redactor([api_key])
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    def identity(self) -> Mapping[str, JSON]:
        return {"provider": self.name, "base_url": self.base_url, "model": self.model,
                "structured": self.structured}

    # -- for subclasses ----------------------------------------------------------------------

    def url(self) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def body(self, request: LLMRequest) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, doc: dict[str, Any], request: LLMRequest, latency_s: float) -> LLMResponse:
        raise NotImplementedError

    # -- calling -----------------------------------------------------------------------------

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections,
                                             limit_per_host=self.max_connections,
                                             keepalive_timeout=KEEPALIVE_S)
            self._session = aiohttp.ClientSession(timeout=self._timeout, connector=connector)
        return self._session

    async def complete(self, *, request: LLMRequest, timeout_s: float) -> LLMResponse:
        session = await self._client()
        data = orjson.dumps(self.body(request))
        headers = {"Content-Type": "application/json", **self.headers()}
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout_s):
                async with session.post(self.url(), data=data, headers=headers) as response:
                    doc = await read_json(response, self._limit, self.redact)
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as exc:
            # No connection: the request never left, so another endpoint may take it.
            raise ProviderError("connect", f"{type(exc).__name__}: "
                                f"{self.redact(str(exc))[:200]}", sent=False) from None
        except TimeoutError:
            raise ProviderError("timeout", f"no complete answer within {timeout_s:.3g} s "
                                f"from {self.base_url}") from None
        except aiohttp.ClientPayloadError as exc:
            raise ProviderError("connect", f"connection broke while reading the answer: "
                                f"{self.redact(type(exc).__name__)}") from None
        except aiohttp.ClientError as exc:
            # str() of these names host and port, never headers; redacted all the same.
            raise ProviderError("connect", f"{type(exc).__name__}: "
                                f"{self.redact(str(exc))[:200]}") from None
        return self.parse(doc, request, time.perf_counter() - started)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
