"""What the HTTP providers share: timeouts, bounded body reads, status classification and
Retry-After parsing (see the retry table in the project's provider notes)."""

from __future__ import annotations

import datetime
import email.utils
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson

from agent_world.llm.redact import Redactor
from agent_world.types import ProviderError

__all__ = [
    "classify_status",
    "client_timeout",
    "error_message",
    "estimate_tokens",
    "parse_retry_after",
    "read_body",
    "read_json",
]

_CHUNK = 65_536


def client_timeout(connect_s: float, read_s: float) -> aiohttp.ClientTimeout:
    """No overall total here (each attempt runs under ``asyncio.timeout``), but explicit
    connect and per-read limits, so a slow-drip body cannot hang a worker."""
    return aiohttp.ClientTimeout(total=None, sock_connect=connect_s, sock_read=read_s,
                                 connect=connect_s)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, or ``Retry-After`` as seconds
    or an HTTP date. None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())


async def read_body(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, refusing anything over ``limit`` bytes without reading it all."""
    declared = response.content_length
    if declared is not None and declared > limit:
        raise ProviderError("too_large", f"answer of {declared} bytes is over the "
                            f"{limit}-byte limit (llm.max_response_bytes)",
                            status=response.status)
    parts: list[bytes] = []
    size = 0
    while True:
        chunk = await response.content.read(_CHUNK)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > limit:
            raise ProviderError("too_large", f"answer is over the {limit}-byte limit "
                                "(llm.max_response_bytes)", status=response.status)
        parts.append(chunk)


def error_message(body: bytes, redact: Redactor) -> str:
    """A short description of an error body in any of the shapes servers use: OpenAI-style
    ``{"error": {...}}``, flat ``{"object": "error", "message"}``, ``{"error": "text"}``,
    Anthropic's ``{"type": "error", "error": {type, message}}``, or an HTML page."""
    try:
        doc: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body[:200].decode("utf-8", "replace")
        if "<html" in text.lower() or "<!doctype" in text.lower():
            return "an HTML page (a proxy or gateway error)"
        return redact(" ".join(text.split()))[:160] or "an empty body"
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            parts = [str(err.get(k)) for k in ("type", "code", "message") if err.get(k)]
            if parts:
                return redact(": ".join(parts))[:300]
        elif isinstance(err, str):
            return redact(err)[:300]
    return redact(orjson.dumps(doc)[:160].decode("utf-8", "replace"))


def classify_status(status: int, body: bytes, headers: Mapping[str, str],
                    redact: Redactor) -> ProviderError:
    """The error for a non-200 answer, by status first (a proxy's HTML page has only that)."""
    detail = f"HTTP {status}: {error_message(body, redact)}"
    retry_after = parse_retry_after(headers)
    if status in (401, 403):
        kind = "auth"
    elif status == 402:
        kind = "credit"
    elif status == 429:
        kind = "rate_limited"
    elif status == 529:
        kind = "overloaded"
    elif status in (408, 409) or status >= 500:
        kind = "server"
    else:
        kind = "bad_request"
    return ProviderError(kind, detail, status=status, retry_after=retry_after)


async def read_json(response: aiohttp.ClientResponse, limit: int,
                    redact: Redactor) -> dict[str, Any]:
    """A 200 answer's JSON object, or the error for it (any other status, a body that is not
    a JSON object, an oversized body)."""
    body = await read_body(response, limit)
    if response.status != 200:
        raise classify_status(response.status, body, response.headers, redact)
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ProviderError("malformed", f"the answer is not JSON ({len(body)} bytes: "
                            f"{redact(body[:80].decode('utf-8', 'replace'))!r})",
                            status=200) from None
    if not isinstance(doc, dict):
        raise ProviderError("malformed", f"the answer is JSON but not an object "
                            f"({type(doc).__name__})", status=200)
    if doc.get("error"):
        # OpenRouter reports failures after generation started as a 200 with an error.
        raise ProviderError("malformed", f"HTTP 200 carrying an error: "
                            f"{error_message(body, redact)}", status=200)
    return doc


def estimate_tokens(text: str) -> int:
    """About four characters a token: for servers that report no usage."""
    return max(1, (len(text) + 3) // 4)
