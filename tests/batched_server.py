"""A fake model server that behaves like a real batched one (issue 32 item 7): a fixed number
of slots decoding at once, latency that grows with prompt and answer tokens, a bounded FIFO
queue in front of the slots and 429 with ``Retry-After`` past it.

It speaks OpenAI-compatible chat completions (``POST /v1/chat/completions`` and
``POST /chat/completions``; ``GET /v1/models``) on 127.0.0.1, on a thread and event loop of
its own, and answers a valid decision with ``usage`` counted from the request. It measures
itself (``statistics()``) and says what it could serve at most (``capacity_per_s()``), so a
benchmark can compare the decisions per second a world reaches with what the server allows.

The model of serving, a simplified vLLM (continuous batching): a request that finds a free
slot decodes at once; otherwise it waits in the queue, first come first served, and takes
the next slot that frees; a request that finds the queue full gets 429. A request decodes for
``ServingProfile.service_s(prompt_tokens, completion_tokens, busy)``: a fixed cost, a cost per
prompt token (prefill) and one per answer token (decode), stretched by ``batch_slowdown`` for
every other slot busy when it starts (a larger batch makes each step slower for everyone).
Service times are computed, not measured, so tests compare them exactly.

Not modelled: prefix caching (every prompt token costs; lower ``per_prompt_token_s`` to mimic
it), streaming, and a batch that changes speed while a request decodes.

It lives among the test helpers, as ``tests/llm_server.py`` does: the benchmark imports both
(``from tests.batched_server import BatchedModelServer``, run from the repository root) and
the core imports neither. It is written to pass ``mypy --strict``, which checks it when a
benchmark module imports it. ``python -m tests.batched_server --slots 64 ...`` runs one in a
process of its own (prints its base URL, stops when stdin closes), so that a benchmark's
server does not compete with the world for one interpreter lock.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson
from aiohttp import web

__all__ = [
    "DEFAULT_ANSWER",
    "BatchedModelServer",
    "BatchedStatistics",
    "ServedRequest",
    "ServingProfile",
    "batched_server",
    "estimate_tokens",
    "long_plan",
]

# A decision the world accepts (agent_world/contract/answer.py's parse_decision): a short
# thought and a plan of actions, each {"action": NAME, "args": {...}}. About 40 tokens.
DEFAULT_ANSWER: Mapping[str, Any] = {
    "thought": "Nothing needs me right now: walk about and see what turns up.",
    "plan": [{"action": "wander", "args": {"ticks": 50}}],
    "ask_again_s": 30,
}
INJECTABLE = (500, 502, 503, 504)
# What the world accepts of a decision (the benchmark checks them against the core's in
# tests/test_batched_server.py; this module imports nothing of the project): the most ticks
# one wander takes (agent_world/core/actions.py), the most actions in a plan by default
# (llm.plan_actions) and the bounds of ask_again_s (agent_world/contract/answer.py).
WANDER_MAX_TICKS = 300
PLAN_MAX_ACTIONS = 5
ASK_AGAIN_BOUNDS = (5, 600)
TICK_RATE = 10.0  # the world's default ticks a second: a plan of N ticks lasts N / 10 s


def long_plan(ticks: int, ask_again_s: int | None = None, *,
              eat: bool = False) -> dict[str, Any]:
    """A decision whose plan keeps the agent wandering ``ticks`` ticks (wanders of at most
    ``WANDER_MAX_TICKS`` chained, so 1..1500 ticks in five actions), asking to be asked
    again in ``ask_again_s`` seconds (by default the plan's length at 10 Hz, within the
    bounds the world takes). A shorter ``ask_again_s`` than the plan lasts makes the agent
    ask again while still on its plan: routine work that queues without the agent falling
    back to its built-in brain meanwhile. Each further wander adds about 10 answer
    tokens (and so decode time). With ``eat``, an ``eat`` goes between the wanders (so at
    most three wanders, 900 ticks): agents that carry food do not starve on their walk."""
    most = WANDER_MAX_TICKS * (PLAN_MAX_ACTIONS + 1 if eat else PLAN_MAX_ACTIONS * 2) // 2
    if isinstance(ticks, bool) or not isinstance(ticks, int) or not 1 <= ticks <= most:
        raise ValueError(f"plan ticks must be a whole number in 1..{most} (wanders of at "
                         f"most {WANDER_MAX_TICKS} ticks{' with an eat between' if eat else ''}"
                         f" in {PLAN_MAX_ACTIONS} actions), got {ticks!r}")
    low, high = ASK_AGAIN_BOUNDS
    if ask_again_s is None:
        ask_again_s = min(high, max(low, round(ticks / TICK_RATE)))
    elif isinstance(ask_again_s, bool) or not isinstance(ask_again_s, int) \
            or not low <= ask_again_s <= high:
        raise ValueError(f"ask_again_s must be a whole number in {low}..{high}, got "
                         f"{ask_again_s!r}")
    plan: list[dict[str, Any]] = []
    for done in range(0, ticks, WANDER_MAX_TICKS):
        if eat and plan:
            plan.append({"action": "eat", "args": {}})
        plan.append({"action": "wander",
                     "args": {"ticks": min(WANDER_MAX_TICKS, ticks - done)}})
    return {"thought": "Nothing needs me: a long walk.", "plan": plan,
            "ask_again_s": ask_again_s}


def estimate_tokens(text: str) -> int:
    """About four characters a token, as the project's client estimates them."""
    return max(1, (len(text) + 3) // 4)


def _percentile(values: list[float], q: float) -> float:
    """Nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# -- the model of serving ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingProfile:
    """How fast and how wide the fake model serves. The defaults resemble a small local vLLM:
    an 8B model on one 24 GB GPU, with our decision prompts (about 1,550 prompt tokens and
    40 answer tokens, bench/RESULTS.md "What LLM agents cost").

    - ``slots`` 32: sequences decoded at once. vLLM's ``max_num_seqs`` allows more, but the
      KV cache of one such GPU holds a few dozen prompts of this length.
    - ``queue`` 64: requests waiting for a slot before the server answers 429 (vLLM itself
      queues without bound; a gateway in front of it, or a hosted endpoint, refuses).
    - ``base_s`` 0.05: scheduling, the HTTP round trip and the first step.
    - ``per_prompt_token_s`` 0.0002: prefill at about 5,000 tokens a second.
    - ``per_output_token_s`` 0.02: one sequence decodes about 50 tokens a second.
    - ``batch_slowdown`` 0.01: each other busy slot makes a request 1% slower (32 busy:
      1.31 times as long), while the batch as a whole serves about 24 times as much.
    - ``retry_after_s`` 1.0: what a 429 asks the client to wait.
    - ``typical_prompt_tokens``, ``typical_completion_tokens``: the request
      ``capacity_per_s`` assumes before any has been served.
    """

    slots: int = 32
    queue: int = 64
    base_s: float = 0.05
    per_prompt_token_s: float = 0.0002
    per_output_token_s: float = 0.02
    batch_slowdown: float = 0.01
    retry_after_s: float = 1.0
    typical_prompt_tokens: int = 1550
    typical_completion_tokens: int = 40

    def __post_init__(self) -> None:
        for name in ("slots", "typical_prompt_tokens", "typical_completion_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        if not isinstance(self.queue, int) or isinstance(self.queue, bool) or self.queue < 0:
            raise ValueError(f"queue must be a whole number >= 0 (0: no waiting, 429 once "
                             f"every slot is busy), got {self.queue!r}")
        for name in ("base_s", "per_prompt_token_s", "per_output_token_s", "batch_slowdown",
                     "retry_after_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.base_s + self.per_prompt_token_s + self.per_output_token_s <= 0:
            raise ValueError("a request must take some time: set base_s, per_prompt_token_s "
                             "or per_output_token_s above 0")

    def service_s(self, prompt_tokens: int, completion_tokens: int, busy: int = 1) -> float:
        """Seconds one request decodes when ``busy`` slots (itself included) are decoding as
        it starts."""
        if not 1 <= busy <= self.slots:
            raise ValueError(f"busy must be in 1..slots ({self.slots}), got {busy}")
        alone = (self.base_s + prompt_tokens * self.per_prompt_token_s
                 + completion_tokens * self.per_output_token_s)
        return alone * (1.0 + self.batch_slowdown * (busy - 1))

    def capacity_per_s(self, prompt_tokens: int | None = None,
                       completion_tokens: int | None = None) -> float:
        """Requests a second the server serves at most: every slot busy, each decoding a
        request of this size (the typical one by default) for its full-batch service time."""
        prompt = self.typical_prompt_tokens if prompt_tokens is None else prompt_tokens
        completion = (self.typical_completion_tokens if completion_tokens is None
                      else completion_tokens)
        return self.slots / self.service_s(prompt, completion, busy=self.slots)


# -- what it measures --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ServedRequest:
    """One request answered 200: its tokens, the slots busy as it started (itself
    included), the computed decode time and, measured by the server's monotonic clock, when
    it arrived, how long it queued and when it was answered."""

    model: str  # the model the request named
    prompt_tokens: int
    completion_tokens: int
    busy: int
    service_s: float
    queued_s: float
    arrived: float
    finished: float

    @property
    def latency_s(self) -> float:
        """Arrival to answer, as the server measured it."""
        return self.finished - self.arrived


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchedStatistics:
    """The server's figures since it started (or since ``reset_statistics()``). Latencies
    and rates are over the requests still kept (``records_kept``, the most recent)."""

    requests: int  # every chat request received
    served: int  # answered 200
    rejected: int  # answered 429: the queue was full
    failed: int  # answered with an injected failure (5xx or a dropped connection)
    invalid: int  # answered 400 or 404 (a malformed body, another model)
    decoding: int  # decoding now
    queued: int  # waiting for a slot now
    peak_decoding: int
    peak_queued: int
    prompt_tokens: int  # over every request served
    completion_tokens: int
    latency_p50_s: float  # arrival to answer
    latency_p95_s: float
    service_p50_s: float  # computed decode time
    service_p95_s: float
    queued_p95_s: float
    window_s: float
    served_per_s: float  # over the last window_s seconds
    capacity_per_s: float  # ServingProfile.capacity_per_s at the mean size served
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class _Counts:
    requests: int = 0
    served: int = 0
    rejected: int = 0
    failed: int = 0
    invalid: int = 0
    peak_decoding: int = 0
    peak_queued: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    since: float = field(default_factory=time.monotonic)


# -- the server --------------------------------------------------------------------------------


class BatchedModelServer:
    """A fake batched model server on 127.0.0.1 (see the module doc). ``port`` 0 lets the OS
    choose; ``base_url`` says where it listens once started.

    ``model`` names the model: answers carry it, ``GET /v1/models`` lists it and, with
    ``require_model``, a request naming another model gets 404 as vLLM answers it.
    ``answer`` is the decision every request gets (a JSON object, or verbatim text).
    ``records_kept`` bounds the served requests remembered for latencies and rates.
    The other keyword arguments are ``ServingProfile``'s.

    Control from any thread: ``pause()``/``resume()`` (while paused, requests take slots and
    queue as usual but none finishes: the way to fill slots and queue deterministically),
    ``fail_next(n, status=503)`` (the next n requests fail with that status, or with
    ``status="drop"`` lose their connection), ``refuse_connections()`` and
    ``accept_connections()``.
    """

    def __init__(self, *, model: str = "fake-batched", port: int = 0,
                 answer: Mapping[str, Any] | str = DEFAULT_ANSWER, require_model: bool = False,
                 records_kept: int = 100_000, slots: int = 32, queue: int = 64,
                 base_s: float = 0.05, per_prompt_token_s: float = 0.0002,
                 per_output_token_s: float = 0.02, batch_slowdown: float = 0.01,
                 retry_after_s: float = 1.0, typical_prompt_tokens: int = 1550,
                 typical_completion_tokens: int = 40) -> None:
        self.profile = ServingProfile(
            slots=slots, queue=queue, base_s=base_s, per_prompt_token_s=per_prompt_token_s,
            per_output_token_s=per_output_token_s, batch_slowdown=batch_slowdown,
            retry_after_s=retry_after_s, typical_prompt_tokens=typical_prompt_tokens,
            typical_completion_tokens=typical_completion_tokens)
        if not model:
            raise ValueError("model must be a non-empty name, like 'fake-batched'")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535 (0: the OS chooses), got {port}")
        if records_kept < 1:
            raise ValueError(f"records_kept must be >= 1, got {records_kept}")
        self.model = model
        self.port = port
        self.require_model = require_model
        self._answer = (answer if isinstance(answer, str)
                        else orjson.dumps(dict(answer)).decode())
        self._lock = threading.Lock()  # counts, records and failures, read from any thread
        self._counts = _Counts()
        self._records: deque[ServedRequest] = deque(maxlen=records_kept)
        self._failures: deque[int | str] = deque()
        self._decoding = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._handlers: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running: asyncio.Event | None = None  # cleared while paused
        self._stopping: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.leftover_tasks = 0  # tasks still running when the loop stopped (should be 0)

    def __repr__(self) -> str:
        return (f"BatchedModelServer(model={self.model!r}, port={self.port}, "
                f"slots={self.profile.slots}, queue={self.profile.queue})")

    # -- life ------------------------------------------------------------------------------

    def start(self) -> BatchedModelServer:
        """Listen (returns once the port is bound); raises what stopped it from starting."""
        if self._thread is not None:
            raise RuntimeError(f"{self!r} was already started; make a new server instead")
        self._thread = threading.Thread(target=self._serve, name=f"fake-{self.model}",
                                        daemon=True)
        with self._lock:
            self._counts.since = time.monotonic()
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError(f"{self!r} did not start listening within 30 s")
        if self._error is not None:
            self._thread.join(10)
            raise RuntimeError(f"{self!r} could not start: {self._error}") from self._error
        return self

    def stop(self) -> None:
        """Cancel every request in flight, close every socket, end the thread. Idempotent."""
        loop, stopping, thread = self._loop, self._stopping, self._thread
        if loop is None or stopping is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop already closed
            loop.call_soon_threadsafe(stopping.set)
        thread.join(30)
        if thread.is_alive():
            raise RuntimeError(f"{self!r} did not stop within 30 s")
        self._loop = None

    def __enter__(self) -> BatchedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- control (any thread) --------------------------------------------------------------

    def pause(self) -> None:
        """Requests keep taking slots and queueing, but none finishes until ``resume()``."""
        self._on_loop(self._pause)

    def resume(self) -> None:
        self._on_loop(self._resume)

    def fail_next(self, count: int, *, status: int | str = 503) -> None:
        """The next ``count`` requests fail at once with HTTP ``status`` (500, 502, 503 or
        504), or with ``"drop"`` have their connection closed without an answer."""
        if status != "drop" and status not in INJECTABLE:
            raise ValueError(f"status must be one of {INJECTABLE!r} or 'drop', got {status!r}")
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        with self._lock:
            self._failures.extend([status] * count)

    def refuse_connections(self) -> None:
        """Stop listening (connecting fails at once) and close idle kept-alive connections;
        requests in flight still finish. ``accept_connections()`` listens again."""
        self._on_loop(self._stop_listening())

    def accept_connections(self) -> None:
        self._on_loop(self._listen())

    def reset_statistics(self) -> None:
        """Start the figures afresh (after a warm-up, say); requests in flight still count
        when they finish."""
        with self._lock:
            self._counts = _Counts()
            self._records.clear()

    # -- figures (any thread) --------------------------------------------------------------

    def records(self) -> list[ServedRequest]:
        """The served requests kept, oldest first."""
        with self._lock:
            return list(self._records)

    def served_per_s(self, window_s: float = 10.0) -> float:
        """Requests answered 200 per second over the last ``window_s`` seconds (or since the
        figures started, if that is shorter)."""
        if window_s <= 0:
            raise ValueError(f"window_s must be > 0, got {window_s}")
        now = time.monotonic()
        with self._lock:
            since = self._counts.since
            done = sum(1 for r in self._records if r.finished > now - window_s)
        span = min(window_s, now - since)
        return done / span if span > 0 else 0.0

    def capacity_per_s(self, prompt_tokens: int | None = None,
                       completion_tokens: int | None = None) -> float:
        """Requests a second this server serves at most, every slot busy: slots divided by
        the full-batch service time of a request of the given size; by default the mean
        size of the requests served so far, or the profile's typical one before any."""
        if prompt_tokens is None or completion_tokens is None:
            with self._lock:
                served = self._counts.served
                mean_prompt = round(self._counts.prompt_tokens / served) if served else None
                mean_answer = (round(self._counts.completion_tokens / served) if served
                               else None)
            prompt_tokens = mean_prompt if prompt_tokens is None else prompt_tokens
            completion_tokens = mean_answer if completion_tokens is None else completion_tokens
        return self.profile.capacity_per_s(prompt_tokens, completion_tokens)

    def statistics(self, window_s: float = 10.0) -> BatchedStatistics:
        rate = self.served_per_s(window_s)
        capacity = self.capacity_per_s()
        with self._lock:
            c = self._counts
            records = list(self._records)
            decoding, queued = self._decoding, len(self._waiting)
        latencies = [r.latency_s for r in records]
        services = [r.service_s for r in records]
        queued_s = [r.queued_s for r in records]
        return BatchedStatistics(
            requests=c.requests, served=c.served, rejected=c.rejected, failed=c.failed,
            invalid=c.invalid, decoding=decoding, queued=queued,
            peak_decoding=c.peak_decoding, peak_queued=c.peak_queued,
            prompt_tokens=c.prompt_tokens, completion_tokens=c.completion_tokens,
            latency_p50_s=_percentile(latencies, 0.5),
            latency_p95_s=_percentile(latencies, 0.95),
            service_p50_s=_percentile(services, 0.5), service_p95_s=_percentile(services, 0.95),
            queued_p95_s=_percentile(queued_s, 0.95), window_s=window_s, served_per_s=rate,
            capacity_per_s=capacity, elapsed_s=time.monotonic() - c.since)

    # -- the loop thread -------------------------------------------------------------------

    def _on_loop(self, work: Callable[[], None] | Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (a coroutine, or a plain function) on the server's loop and wait."""
        loop = self._loop
        if loop is None:
            if isinstance(work, Coroutine):
                work.close()
            raise RuntimeError(f"{self!r} is not running: start() it first")

        async def call() -> None:
            if isinstance(work, Coroutine):
                await work
            else:
                work()

        asyncio.run_coroutine_threadsafe(call(), loop).result(30)

    def _serve(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported by start(), or it would vanish with the thread
            self._error = exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._running = asyncio.Event()
        self._running.set()
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=16_000_000)
        for path in ("/v1/chat/completions", "/chat/completions"):
            app.router.add_post(path, self._chat)
        for path in ("/v1/models", "/models"):
            app.router.add_get(path, self._models)
        # Handlers still running when the server stops are cancelled first (below), so the
        # runner's wait for them is short.
        self._runner = web.AppRunner(app, shutdown_timeout=2.0, access_log=None)
        await self._runner.setup()
        try:
            await self._listen()
            self._ready.set()
            await self._stopping.wait()
        finally:
            for task in list(self._handlers):
                task.cancel()
            await asyncio.gather(*self._handlers, return_exceptions=True)
            await self._runner.cleanup()
            self._site = None
            current = asyncio.current_task()
            self.leftover_tasks = sum(1 for t in asyncio.all_tasks() if t is not current)

    async def _listen(self) -> None:
        if self._site is not None:
            return
        assert self._runner is not None
        self._site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await self._site.start()
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])  # the port the OS chose

    async def _stop_listening(self) -> None:
        if self._site is None:
            return
        await self._site.stop()
        self._site = None
        assert self._runner is not None and self._runner.server is not None
        for connection in list(self._runner.server.connections):
            connection.close()  # closes once its request in flight, if any, is answered

    def _pause(self) -> None:
        assert self._running is not None
        self._running.clear()

    def _resume(self) -> None:
        assert self._running is not None
        self._running.set()

    # -- slots and queue (loop thread only) ------------------------------------------------

    async def _admit(self) -> bool:
        """Take a slot, or wait in the queue for one; False when the queue is full. A free
        slot with requests waiting never lasts: a slot that frees passes to the first."""
        with self._lock:
            if self._decoding < self.profile.slots:
                self._decoding += 1
                self._counts.peak_decoding = max(self._counts.peak_decoding, self._decoding)
                return True
            if len(self._waiting) >= self.profile.queue:
                return False
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append(turn)
            self._counts.peak_queued = max(self._counts.peak_queued, len(self._waiting))
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # handed a slot, then cancelled
                self._release()
            else:
                with self._lock, contextlib.suppress(ValueError):
                    self._waiting.remove(turn)
            raise
        return True

    def _release(self) -> None:
        with self._lock:
            while self._waiting:
                turn = self._waiting.popleft()
                if not turn.done():
                    turn.set_result(None)  # the slot passes on: decoding stays the same
                    return
            self._decoding -= 1

    # -- requests --------------------------------------------------------------------------

    async def _models(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"object": "list", "data": [
            {"id": self.model, "object": "model", "owned_by": "fake"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            return await self._answer_chat(request)
        finally:
            self._handlers.discard(task)

    async def _answer_chat(self, request: web.Request) -> web.StreamResponse:
        arrived = time.monotonic()
        with self._lock:
            self._counts.requests += 1
            failure = self._failures.popleft() if self._failures else None
        if failure is not None:
            with self._lock:
                self._counts.failed += 1
            return self._fail(request, failure)
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            return self._invalid(400, "the body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) \
                or not body["messages"]:
            return self._invalid(400, "the body must be an object with a non-empty "
                                      "'messages' list")
        named = str(body.get("model") or "")
        if self.require_model and named != self.model:
            return self._invalid(404, f"The model `{named}` does not exist.")
        prompt_tokens = estimate_tokens(_prompt_text(body["messages"]))
        content, completion_tokens, finish = self._completion(body)
        if not await self._admit():
            with self._lock:
                self._counts.rejected += 1
            return web.json_response(
                {"error": {"message": f"the server is busy: {self.profile.slots} requests "
                                      f"decoding and {self.profile.queue} waiting",
                           "type": "rate_limit_error", "code": 429}},
                status=429, headers={"Retry-After": f"{self.profile.retry_after_s:g}"})
        queued_s = time.monotonic() - arrived
        try:
            busy = self._decoding
            service_s = self.profile.service_s(prompt_tokens, completion_tokens, busy)
            assert self._running is not None
            await self._running.wait()
            await asyncio.sleep(service_s)
        finally:
            self._release()
        finished = time.monotonic()
        with self._lock:
            self._counts.served += 1
            self._counts.prompt_tokens += prompt_tokens
            self._counts.completion_tokens += completion_tokens
            self._records.append(ServedRequest(
                model=named, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                busy=busy, service_s=service_s, queued_s=queued_s, arrived=arrived,
                finished=finished))
            served = self._counts.served
        return web.json_response({
            "id": f"chatcmpl-{served}", "object": "chat.completion", "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    def _completion(self, body: dict[str, Any]) -> tuple[str, int, str]:
        """The answer, its tokens and its finish reason: cut to ``max_tokens`` (finish
        ``length``) when the request allows fewer tokens than the answer has."""
        tokens = estimate_tokens(self._answer)
        limit = body.get("max_tokens", body.get("max_completion_tokens"))
        if isinstance(limit, int) and not isinstance(limit, bool) and 1 <= limit < tokens:
            return self._answer[:limit * 4], limit, "length"
        return self._answer, tokens, "stop"

    def _invalid(self, status: int, message: str) -> web.StreamResponse:
        with self._lock:
            self._counts.invalid += 1
        return web.json_response({"error": {"message": message, "type": "invalid_request_error",
                                            "code": status}}, status=status)

    def _fail(self, request: web.Request, failure: int | str) -> web.StreamResponse:
        if failure == "drop":
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)  # never reaches the client
        return web.json_response({"error": {"message": "injected failure",
                                            "type": "server_error", "code": failure}},
                                 status=int(failure))


def _prompt_text(messages: list[Any]) -> str:
    """The text of every message: a string content, or the text parts of a list of parts."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "".join(parts)


@contextlib.contextmanager
def batched_server(**settings: Any) -> Iterator[BatchedModelServer]:
    """A started ``BatchedModelServer(**settings)``, stopped on the way out."""
    with BatchedModelServer(**settings) as server:
        yield server


# -- a process of its own ----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.batched_server [--model M] [--slots N] ...``: print the base URL,
    serve until stdin closes, then print the figures as one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m tests.batched_server",
                                     description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--model", default="fake-batched")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--require-model", action="store_true")
    defaults = ServingProfile()
    for name in ("slots", "queue", "typical_prompt_tokens", "typical_completion_tokens"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int,
                            default=getattr(defaults, name))
    for name in ("base_s", "per_prompt_token_s", "per_output_token_s", "batch_slowdown",
                 "retry_after_s"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=float,
                            default=getattr(defaults, name))
    parser.add_argument("--plan-ticks", type=int, metavar="N",
                        help="answer a plan of wanders lasting N ticks (long_plan; 1..1500) "
                             "instead of the default 50-tick wander")
    parser.add_argument("--ask-again-s", type=int, metavar="S",
                        help="with --plan-ticks: the answer's ask_again_s (default N / 10)")
    parser.add_argument("--plan-eat", type=int, choices=(0, 1), default=0,
                        help="with --plan-ticks: 1 puts an eat between the wanders")
    args = vars(parser.parse_args(argv))
    plan_ticks, ask_again_s = args.pop("plan_ticks"), args.pop("ask_again_s")
    eat = bool(args.pop("plan_eat"))
    try:
        if plan_ticks is not None:
            args["answer"] = long_plan(plan_ticks, ask_again_s, eat=eat)
        elif ask_again_s is not None:
            raise ValueError("--ask-again-s goes with --plan-ticks")
        server = BatchedModelServer(**args)
    except ValueError as exc:
        parser.error(str(exc))
    with server:
        print(server.base_url, flush=True)
        sys.stdin.read()
        print(orjson.dumps(server.statistics().to_dict()).decode(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
