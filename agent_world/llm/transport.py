"""The LLM transport: many requests in flight on one event-loop thread.

A ``Transport`` is one model as the process reaches it: its endpoints (replicas of one
model server), how many requests may be in flight at once (``llm.max_concurrent``), the
retry policy, and the ``Gates`` every call of the model passes (budget, breaker, figures).
Its coroutines run on a ``LoopThread``, a daemon thread running an asyncio loop of its
own; nothing else runs there. Requests are coroutines, so a thousand in flight cost a
thousand sockets and tasks, not a thousand threads.

Each endpoint has its provider (for HTTP: one aiohttp session, a keep-alive pool sized to
the concurrency), made on the loop thread and used only there, its own 429 pause, and,
when there are several, its own circuit breaker. A request goes to the endpoint with the
fewest requests in flight among those whose breaker lets it through (then the fewest sent,
then the first listed); one that could not even connect goes at once to another endpoint,
within the same deadline, without using up a retry. With one endpoint the gates' breaker
is its breaker, so a world with one endpoint behaves as before replicas existed.

Callers: LLM agents' answerer submits a coroutine and is answered by a callback on the
loop thread (``submit``); the angel, users' brains and the trainer call from threads of
their own and wait (``run``). Several transports may live in one process (a model
profile each): they share nothing, and each starts its loop thread on first use.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import random
import threading
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from agent_world.llm.breaker import CircuitBreaker
from agent_world.llm.gates import ENDPOINT_FAILURES, Gates, LLMUnavailable
from agent_world.llm.retry import ProviderPause, RetryPolicy
from agent_world.types import Clock, LLMProvider, LLMRequest, LLMResponse, ProviderError

__all__ = ["EndpointFactory", "EndpointStats", "LoopThread", "Transport", "TransportClosed"]

T = TypeVar("T")

EndpointFactory = Callable[[str], LLMProvider]
"""Makes the provider of one endpoint, given its base URL (on the loop thread's helper,
once per endpoint: a local model loads there, not on the loop)."""

CLOSE_S = 2.0  # the longest a close waits for requests to end and sessions to close


class TransportClosed(RuntimeError):
    """A request was submitted after the transport closed."""


class LoopThread:
    """An asyncio event loop running on a daemon thread of its own, started on first use.

    Not fork-sensitive: a forked child (the state hash's) never touches it and leaves with
    ``os._exit``, so nothing of the parent's sockets is unregistered from the epoll set
    both share."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise TransportClosed(f"{self.name} is closed; no more requests are taken")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(target=self._run, args=(loop, ready),
                                          name=self.name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    def on_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T], *,
               tasks: set[asyncio.Task[Any]] | None = None) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop (from any thread); its future may be cancelled from any
        thread too, which cancels the coroutine there. ``tasks``: its task is in it while
        it runs."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            self.call_soon(lambda: self.start(coro, future, tasks))
        except TransportClosed:
            coro.close()
            raise
        return future

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the loop thread (from any thread), after everything handed to the
        loop before it; ``TransportClosed`` once the loop is closed. Each call wakes the
        loop thread, which then takes the interpreter lock from the caller: a caller with
        much to hand over (the main thread after a tick) does better with one call that
        ``start``s each."""
        loop = self.loop()
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:  # the loop closed since ``loop()`` (the transport is closing)
            raise TransportClosed(f"{self.name} is closed; no more requests are taken"
                                  ) from None

    def start(self, coro: Coroutine[Any, Any, T], future: concurrent.futures.Future[T],
              tasks: set[asyncio.Task[Any]] | None = None) -> None:
        """On the loop thread: run ``coro`` as a task (in ``tasks`` while it runs) whose
        outcome ``future`` gets; cancelling ``future`` (from any thread) cancels the task.
        (What ``asyncio.run_coroutine_threadsafe`` does, in two halves.)"""
        loop = asyncio.get_running_loop()
        if future.cancelled():  # given up before it started
            coro.close()
            return
        try:
            task = loop.create_task(coro)
        except Exception as exc:  # the caller's future says it
            coro.close()
            if future.set_running_or_notify_cancel():
                future.set_exception(exc)
            return

        def settle(done: asyncio.Task[T]) -> None:
            if tasks is not None:
                tasks.discard(done)
            if done.cancelled():
                future.cancel()
                return
            if not future.set_running_or_notify_cancel():
                return  # cancelled meanwhile: nobody waits for it
            exc = done.exception()
            if exc is not None:
                future.set_exception(exc)
            else:
                future.set_result(done.result())

        def cancelled(f: concurrent.futures.Future[T]) -> None:
            if f.cancelled():
                with contextlib.suppress(RuntimeError):  # the loop closed: the task too
                    loop.call_soon_threadsafe(task.cancel)

        if tasks is not None:
            tasks.add(task)
        task.add_done_callback(settle)
        future.add_done_callback(cancelled)

    def stop(self, closing: Coroutine[Any, Any, None] | None, timeout: float) -> None:
        """Run ``closing`` on the loop (bounded by ``timeout``), then stop the loop and its
        thread. From any thread but the loop's own."""
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            if closing is not None:
                closing.close()
            return
        if threading.current_thread() is thread:
            raise RuntimeError(f"{self.name} cannot be stopped from its own thread")
        if closing is not None:
            future = asyncio.run_coroutine_threadsafe(closing, loop)
            try:
                future.result(timeout)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                future.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()


class Endpoint:
    """One replica: its provider, breaker (None: the gates' is its own), 429 pause and
    figures. Read and written on the loop thread only (figures are read anywhere)."""

    def __init__(self, url: str, index: int, breaker: CircuitBreaker | None) -> None:
        self.url = url
        self.index = index
        self.breaker = breaker
        self.pause = ProviderPause()
        self.provider: LLMProvider | None = None
        self.making: asyncio.Lock | None = None
        self.in_flight = 0
        self.requests = 0
        self.failures = 0
        self.unsent = 0  # requests that never reached it (sent on to another endpoint)

    def allow(self) -> bool:
        return True if self.breaker is None else self.breaker.allow()


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointStats:
    """One endpoint's figures: requests in flight now, sent in all, failed (after the
    endpoint was tried, each attempt), never sent (no connection), and its breaker."""

    url: str
    in_flight: int
    requests: int
    failures: int
    unsent: int
    breaker: str

    def describe(self) -> str:
        return (f"{self.in_flight} in flight, {self.requests} requests, {self.failures} "
                f"failed ({self.unsent} not sent), breaker {self.breaker}")


class Transport:
    """One model's way out: endpoints, concurrency, retries, on one loop thread."""

    def __init__(self, *, endpoints: Sequence[str], factory: EndpointFactory, gates: Gates,
                 max_concurrent: int, policy: RetryPolicy, clock: Clock,
                 breaker_failures: int = 5, breaker_cooldown_s: float = 30.0,
                 name: str = "llm-loop") -> None:
        """``endpoints``: base URLs of replicas of one model (at least one, no duplicate);
        ``factory`` makes each one's provider; ``max_concurrent``: requests in flight at
        once, over all endpoints; ``breaker_*``: each endpoint's own breaker, when there
        are several."""
        if not endpoints:
            raise ValueError("endpoints must name at least one base URL")
        if len(set(endpoints)) != len(endpoints):
            raise ValueError(f"endpoints must not repeat a URL, got {list(endpoints)!r}")
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, got {max_concurrent}")
        self.gates = gates
        self.policy = policy
        self.clock = clock
        self.max_concurrent = max_concurrent
        self._factory = factory
        several = len(endpoints) > 1
        self.endpoints = [
            Endpoint(url, i, CircuitBreaker(failures=breaker_failures,
                                            cooldown_s=breaker_cooldown_s, clock=clock)
                     if several else None)
            for i, url in enumerate(endpoints)]
        self._slots = asyncio.Semaphore(max_concurrent)  # bound to the loop at first use
        self._rng = random.Random()  # backoff jitter only: never reaches the world
        self._thread = LoopThread(name)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.waiting = 0  # requests waiting for a slot

    def __repr__(self) -> str:
        return (f"Transport({', '.join(e.url for e in self.endpoints)}, "
                f"max_concurrent={self.max_concurrent})")

    # -- from other threads ------------------------------------------------------------------

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` (a caller's work around ``complete``) on the loop thread; cancelling
        the future cancels it there and frees its slot and its connection."""
        return self._thread.submit(coro, tasks=self._tasks)

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the loop thread, in order with everything handed over before it
        (``TransportClosed`` once closed). For work that must see the loop thread's state
        as the caller left it: the LLM agents' memories live there."""
        self._thread.call_soon(fn)

    def start(self, coro: Coroutine[Any, Any, T],
              future: concurrent.futures.Future[T]) -> None:
        """On the loop thread: ``submit``'s second half, for a future made beforehand (a
        caller that hands many over with one ``call_soon``)."""
        self._thread.start(coro, future, self._tasks)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop thread and wait for it, from a thread of the caller's
        own (never the loop's); the caller's coroutine carries its deadline."""
        if self._thread.on_thread():
            coro.close()
            raise RuntimeError("Transport.run() was called on its own loop thread; await "
                               "complete() there instead")
        return self.submit(coro).result()

    def close(self, timeout: float = CLOSE_S) -> None:
        """Cancel what is in flight, close every endpoint's connections, stop the thread,
        and release what the provider factory shares (a local model)."""
        self._thread.stop(self._aclose(), timeout)
        close = getattr(self._factory, "close", None)
        if callable(close):
            close()

    async def _aclose(self) -> None:
        me = asyncio.current_task()
        tasks = [t for t in self._tasks if t is not me]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for endpoint in self.endpoints:
            if endpoint.provider is not None:
                provider, endpoint.provider = endpoint.provider, None
                await provider.aclose()

    # -- on the loop thread ------------------------------------------------------------------

    async def complete(self, request: LLMRequest, *, deadline: float,
                       on_retry: Callable[[ProviderError, float], None] = lambda _e, _w: None,
                       ) -> LLMResponse:
        """The model's answer to ``request``, retried (``policy``) on the least busy endpoint
        that may take it, until it answers, a failure is final or ``deadline`` (a ``clock``
        time) passes. ``LLMUnavailable`` when every endpoint's breaker is open."""
        attempt = 0
        unsent: set[int] = set()  # endpoints this request could not reach
        while True:
            remaining = deadline - self.clock.now()
            if remaining <= 0:
                raise ProviderError("timeout", "the decision's deadline passed "
                                    "(llm.request_timeout_s)")
            endpoint, error = await self._attempt(request, deadline, remaining, unsent)
            if error is None:
                assert isinstance(endpoint, LLMResponse)
                return endpoint
            assert isinstance(endpoint, Endpoint)
            if not error.sent:
                if self._another(unsent):
                    on_retry(error, 0.0)  # not sent: the next endpoint takes it at once
                    continue
                unsent.clear()  # none could be reached: all of them again, after a wait
            wait = self.policy.delay(attempt, error, self._rng)
            if error.kind == "rate_limited":  # a 429 pauses its endpoint, not the others
                asked = error.retry_after if error.retry_after is not None else wait
                if asked is not None:
                    endpoint.pause.extend(self.clock.now() + asked)
            if wait is None:
                raise error
            attempt += 1
            if len(self.endpoints) > 1 and self._free_elsewhere(endpoint):
                on_retry(error, 0.0)  # another replica may take it now
                continue
            if self.clock.now() + wait >= deadline:
                raise error
            on_retry(error, wait)
            await self.clock.sleep_until(self.clock.now() + wait)

    async def _attempt(self, request: LLMRequest, deadline: float, remaining: float,
                       unsent: set[int]) -> tuple[Endpoint | LLMResponse,
                                                  ProviderError | None]:
        """One try: a slot, an endpoint, the call. (The response, None) or (the endpoint
        tried, its error)."""
        self.waiting += 1
        try:
            async with asyncio.timeout(remaining):
                await self._slots.acquire()
        except TimeoutError:
            raise ProviderError("timeout", f"no free slot of llm.max_concurrent "
                                f"({self.max_concurrent}) before the deadline") from None
        finally:
            self.waiting -= 1
        try:
            endpoint = self._choose(unsent)
            # Counted before any wait, so the next request's choice already sees this one.
            endpoint.in_flight += 1
            endpoint.requests += 1
            try:
                if endpoint.pause.until > self.clock.now():
                    if endpoint.pause.until >= deadline:
                        raise ProviderError("rate_limited", "the endpoint is paused after a "
                                            "429 past this decision's deadline")
                    await self.clock.sleep_until(endpoint.pause.until)
                provider = await self._provider(endpoint)
                response = await provider.complete(
                    request=request, timeout_s=max(0.001, deadline - self.clock.now()))
            except ProviderError as exc:
                self._failed(endpoint, exc, unsent)
                return endpoint, exc
            except asyncio.CancelledError:  # given up: says nothing of the endpoint
                if endpoint.breaker is not None:
                    endpoint.breaker.release()
                raise
            finally:
                endpoint.in_flight -= 1
            if endpoint.breaker is not None:
                endpoint.breaker.success()
            return response, None
        finally:
            self._slots.release()

    def _choose(self, unsent: set[int]) -> Endpoint:
        """The endpoint with the fewest in flight (then fewest sent, then first listed)
        whose breaker lets a call through, preferring one not paused by a 429."""
        now = self.clock.now()
        order = sorted(
            (e for e in self.endpoints if e.index not in unsent),
            key=lambda e: (e.pause.until > now, e.in_flight, e.requests, e.index))
        for endpoint in order:
            if endpoint.allow():
                return endpoint
        reasons = "; ".join(f"{e.url}: {e.breaker.describe()}" for e in self.endpoints
                            if e.breaker is not None)
        # Every endpoint refused: the model as a whole is failing, and the overall breaker
        # hears it (its probe, if this was one, counts as failed).
        self.gates.breaker.failure(f"every endpoint is failing ({reasons})")
        raise LLMUnavailable("breaker", f"every endpoint of the model is failing, their "
                             f"circuit breakers open ({reasons})")

    def _another(self, unsent: set[int]) -> bool:
        return any(e.index not in unsent and (e.breaker is None or e.breaker.would_allow())
                   for e in self.endpoints)

    def _free_elsewhere(self, tried: Endpoint) -> bool:
        now = self.clock.now()
        return any(e is not tried and e.pause.until <= now
                   and (e.breaker is None or e.breaker.would_allow()) for e in self.endpoints)

    def _failed(self, endpoint: Endpoint, exc: ProviderError, unsent: set[int]) -> None:
        endpoint.failures += 1
        if not exc.sent:
            endpoint.unsent += 1
            unsent.add(endpoint.index)
        if endpoint.breaker is not None and exc.kind in ENDPOINT_FAILURES:
            endpoint.breaker.failure(f"{exc.kind}: {self.gates.redact(str(exc))}")

    async def _provider(self, endpoint: Endpoint) -> LLMProvider:
        if endpoint.provider is not None:
            return endpoint.provider
        if endpoint.making is None:
            endpoint.making = asyncio.Lock()
        async with endpoint.making:
            if endpoint.provider is None:
                try:
                    # Off the loop: a local model loads for seconds.
                    endpoint.provider = await asyncio.to_thread(self._factory, endpoint.url)
                except ProviderError as exc:  # it cannot be made: no call can succeed
                    self.gates.breaker.stop(f"{exc.kind}: {self.gates.redact(str(exc))}")
                    raise
            return endpoint.provider

    # -- figures (any thread) ----------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return sum(e.in_flight for e in self.endpoints)

    @property
    def running(self) -> bool:
        """Whether its loop thread is up (it starts on the first call, stops on close)."""
        return self._thread.alive

    def endpoint_stats(self) -> list[EndpointStats]:
        return [EndpointStats(url=e.url, in_flight=e.in_flight, requests=e.requests,
                              failures=e.failures, unsent=e.unsent,
                              breaker=(e.breaker or self.gates.breaker).describe())
                for e in self.endpoints]

    def unavailable(self) -> str:
        """Why no request can go out now, when every endpoint's breaker is open ('' if one
        may take a request, or when the gates' breaker governs: one endpoint)."""
        if all(e.breaker is not None and not e.breaker.would_allow() for e in self.endpoints):
            left = min(e.breaker.seconds_left() for e in self.endpoints
                       if e.breaker is not None)
            return (f"every LLM endpoint is failing, circuit breakers open; next try in "
                    f"{left:.0f} s")
        return ""
