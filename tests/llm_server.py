"""A real local HTTP server for LLM tests: it speaks OpenAI-compatible chat completions and
Anthropic Messages, and can be told to misbehave (slow, hang, drop, 429, 500, 529, malformed
JSON, schema-breaking JSON, huge bodies, 401 echoing the key).

It runs on its own thread and event loop on 127.0.0.1 and records every request."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import re
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

import orjson
from aiohttp import web

GOOD_PLAN = {"thought": "testing the world",
             "plan": [{"action": "idle", "args": {"ticks": 5}},
                      {"action": "wander", "args": {"ticks": 20}}]}
BAD_PLAN = {"thought": "no such thing", "plan": [{"action": "fly", "args": {"to": "moon"}}]}


# Words that mean the same to the fake embedding model: each group shares a dimension, so
# that recall by meaning finds what shares no word with the query.
SYNONYMS = ({"water", "river", "lake", "stream", "drink"},
            {"danger", "attack", "attacked", "hit", "wolf", "enemy"},
            {"food", "apple", "apples", "berries", "bread", "meat", "eat", "hungry"})
EMBED_DIMENSIONS = 32


def fake_embedding(text: str) -> list[float]:
    """A deterministic embedding: a hashed bag of words, synonyms sharing a dimension."""
    vector = [0.0] * EMBED_DIMENSIONS
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        group = next((min(g) for g in SYNONYMS if word in g), word)
        index = int.from_bytes(hashlib.blake2b(group.encode(), digest_size=4).digest(),
                               "big") % (EMBED_DIMENSIONS - 1)
        vector[index] += 1.0
    vector[-1] = 0.01  # never the zero vector
    return vector


class FakeLLMServer:
    """``mode`` is what every request gets unless ``script`` (a queue of modes) has one."""

    def __init__(self, port: int = 0) -> None:
        """``port``: 0 lets the OS choose; a given one brings an endpoint back where one
        was down."""
        self.mode = "ok"
        self.script: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        # Requests kept in ``requests`` (None: all); ``received`` counts them all. A soak
        # of hours keeps only the newest, or its prompts fill this process's memory.
        self.keep: int | None = None
        self.received = 0
        self.answer: dict[str, Any] = GOOD_PLAN
        self.text: str | None = None  # answered verbatim instead of ``answer`` when set
        # Answered verbatim to a prompt containing the key (before anything else).
        self.when: dict[str, str] = {}
        self.embed_mode = "ok"  # what /v1/embeddings requests get (a mode, as ``mode``)
        self.texts: deque[str] = deque()  # answered verbatim, one per request, before text
        # Answered to the angel (a system prompt about ability source files) when set.
        self.ability_text: str | None = None
        # "fixed": every call reports the same usage; "prefix": usage counted from the
        # request, with the cached prefix an OpenAI-like server would report (the longest
        # prefix seen before, from 1,024 tokens up, in steps of 128; 4 characters a token).
        self.usage_mode = "fixed"
        self._prefixes: set[int] = set()
        self._latency = random.Random(7)
        self.delay_s = 0.05
        self.retry_after = "0.01"
        self.port = port
        # Requests being answered now, and the most at once (mode "held" keeps them open
        # until ``open_gate``).
        self.active = 0
        self.peak = 0
        self._gate = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._release = asyncio.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-llm", daemon=True)

    # -- control -----------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        loop.call_soon_threadsafe(self._release.set)
        loop.call_soon_threadsafe(self._gate.set)
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        with contextlib.suppress(Exception):
            future.result(10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        self._loop = None

    def open_gate(self) -> None:
        """Let every request held (mode ``held``) be answered, now and from now on."""
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._gate.set)

    def count(self, path_end: str = "") -> int:
        return sum(1 for r in self.requests if r["path"].endswith(path_end))

    # -- serving -----------------------------------------------------------------------------

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._release = asyncio.Event()
        self._gate = asyncio.Event()
        app = web.Application(client_max_size=10_000_000)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app)
        loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=2048,
                           reuse_address=True)
        loop.run_until_complete(site.start())
        self.port = int(self._runner.addresses[0][1])  # the port the OS chose
        self._ready.set()
        loop.run_forever()
        loop.close()

    async def _shutdown(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _next_mode(self) -> str:
        return self.script.popleft() if self.script else self.mode

    async def _misbehave(self, request: web.Request, mode: str) -> web.StreamResponse | None:
        if mode == "latency":  # a realistic model: 1 to 3 seconds per answer
            await asyncio.sleep(self._latency.uniform(1.0, 3.0))
        if mode == "slow":
            await asyncio.sleep(self.delay_s)
            return None
        if mode == "hang":
            await self._release.wait()
            return web.Response(status=503)
        if mode == "held":  # answered normally once the gate opens
            await self._gate.wait()
            return None
        if mode == "drop":
            transport = request.transport
            assert transport is not None
            transport.close()
            return web.Response(status=500)
        if mode == "429":
            return web.json_response({"error": {"type": "rate_limit_error",
                                                "message": "slow down"}},
                                     status=429, headers={"Retry-After": self.retry_after})
        if mode == "413":
            return web.json_response({"error": {"message": "This model's maximum context "
                                                "length is 512 tokens"}}, status=400)
        if mode in ("500", "529", "400", "404", "402"):
            return web.json_response({"type": "error", "error": {"type": f"e{mode}",
                                                                 "message": "nope"}},
                                     status=int(mode))
        if mode == "html502":
            return web.Response(status=502, text="<html><body>Bad gateway</body></html>",
                                content_type="text/html")
        if mode == "auth":  # a 401 whose body quotes the key
            key = request.headers.get("Authorization", request.headers.get("x-api-key", ""))
            return web.json_response({"error": {"message": f"Incorrect API key provided: "
                                                f"{key.removeprefix('Bearer ')}"}},
                                     status=401)
        if mode == "malformed":
            return web.Response(status=200, text='{"choices": [ {"message": oops',
                                content_type="application/json")
        if mode == "error200":
            return web.json_response({"error": {"code": 502, "message": "upstream died"}})
        if mode == "huge":
            return web.Response(status=200, body=b'{"x": "' + b"a" * 2_000_000 + b'"}',
                                content_type="application/json")
        return None

    async def _record(self, request: web.Request) -> dict[str, Any]:
        body = await request.json()
        self.requests.append({"path": request.path, "headers": dict(request.headers),
                              "body": body})
        self.received += 1
        if self.keep is not None and len(self.requests) > 2 * self.keep:
            del self.requests[:-self.keep]
        return dict(body)

    def _content(self, mode: str, body: dict[str, Any], key: str) -> str:
        """The answer text; with mode ``echo_key`` the caller's key is put into the thought
        and a spoken line, and ``{KEY}`` in a scripted text becomes the key."""
        system = body.get("system") or next(
            (m.get("content", "") for m in body.get("messages", [])
             if m.get("role") == "system"), "")
        if self.ability_text is not None and "ability source" in str(system):
            return self.ability_text.replace("{KEY}", key)
        prompt = str(body.get("messages", [{}])[-1].get("content", ""))
        for needle, reply in self.when.items():
            if needle in prompt:
                return reply
        if self.texts:
            return self.texts.popleft()
        if self.text is not None:
            return self.text.replace("{KEY}", key)
        if mode == "echo_key":
            return orjson.dumps({"thought": f"my key is {key}", "plan": [
                {"action": "say", "args": {"text": f"psst: {key}"}}]}).decode()
        if mode == "schema":
            return orjson.dumps(BAD_PLAN).decode()
        if mode == "prose":
            return ("Sure! Here is my decision:\n```json\n"
                    + orjson.dumps(self.answer).decode() + "\n```\nHope that helps.")
        return orjson.dumps(self.answer).decode()

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        """OpenAI's /v1/embeddings: ``{"model", "input": [texts]}`` -> one vector each."""
        body = await self._record(request)
        bad = await self._misbehave(request, self.embed_mode)
        if bad is not None:
            return bad
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return web.json_response({"error": {"message": "input must be text"}}, status=400)
        return web.json_response({
            "object": "list", "model": body.get("model", "?"),
            "data": [{"object": "embedding", "index": i, "embedding": fake_embedding(t)}
                     for i, t in enumerate(texts)],
            "usage": {"prompt_tokens": sum(len(t) // 4 + 1 for t in texts),
                      "total_tokens": sum(len(t) // 4 + 1 for t in texts)}})

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            return await self._openai_answer(request)
        finally:
            self.active -= 1

    async def _openai_answer(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        mode = self._next_mode()
        bad = await self._misbehave(request, mode)
        if bad is not None:
            return bad
        finish = "length" if mode == "length" else "stop"
        key = _key(request)
        content = self._content(mode, body, key)
        if mode == "length":
            content = content[:30]
        usage: dict[str, Any] = ({"prompt_tokens": 300, "completion_tokens": 40,
                                  "total_tokens": 340, "cost": 0.0001,
                                  "prompt_tokens_details": {"cached_tokens": 100}}
                                 if self.usage_mode == "fixed" else
                                 self._counted_usage(body, content))
        return web.json_response({
            "id": "x", "object": "chat.completion",
            "model": key if mode == "echo_key" else body.get("model", "?"),
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content}}],
            **({} if mode == "nousage" else {"usage": usage}),
        })

    def _counted_usage(self, body: dict[str, Any], answer: str) -> dict[str, Any]:
        """Usage as an OpenAI-like server with automatic prefix caching reports it."""
        text = "".join(str(m.get("content", "")) for m in body.get("messages", []))
        prompt = max(1, (len(text) + 3) // 4)
        cached = 0
        step, first = 128 * 4, 1024 * 4  # in characters
        for end in range(first, len(text) + 1, step):
            key = hash(text[:end])
            if key in self._prefixes:
                cached = end // 4
            self._prefixes.add(key)
        completion = max(1, (len(answer) + 3) // 4)
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached}}

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        mode = self._next_mode()
        bad = await self._misbehave(request, mode)
        if bad is not None:
            return bad
        answer = BAD_PLAN if mode == "schema" else self.answer
        key = _key(request)
        content: list[dict[str, Any]]
        if body.get("tools"):
            if mode == "echo_key":
                answer = orjson.loads(self._content(mode, body, key))
            content = [{"type": "tool_use", "id": "t1", "name": body["tools"][0]["name"],
                        "input": answer}]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": self._content(mode, body, key)}]
            stop = "end_turn"
        return web.json_response({
            "id": "msg", "type": "message", "role": "assistant",
            "model": key if mode == "echo_key" else body.get("model", "?"),
            "content": content, "stop_reason": stop,
            "usage": {"input_tokens": 200, "output_tokens": 30,
                      "cache_read_input_tokens": 100},
        })


def _key(request: web.Request) -> str:
    """The API key the caller sent (OpenAI's Authorization header or Anthropic's)."""
    return request.headers.get("Authorization", request.headers.get("x-api-key", "")
                               ).removeprefix("Bearer ")


@contextlib.contextmanager
def fake_llm_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()
