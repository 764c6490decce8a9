"""The LLM transport (issue 32 items 1 and 3) against real local HTTP servers: a thousand
requests in flight on one loop thread, cancellation that frees the slot and drops the
answer, several endpoints sharing the load by fewest in flight, one endpoint down or
rate-limited without a request lost, and the settings that describe endpoints."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_world.config import Config, LLMConfig
from agent_world.decisions.metrics import Metrics
from agent_world.llm.breaker import CircuitBreaker
from agent_world.llm.budget import Budget
from agent_world.llm.gates import Gates
from agent_world.llm.providers import build_transport
from agent_world.llm.redact import Redactor
from agent_world.llm.transport import Transport
from agent_world.types import (
    Clock,
    FakeClock,
    LLMRequest,
    LLMResponse,
    MonotonicClock,
    ProviderError,
)
from tests.llm_helpers import (
    KEY,
    KEY_ENV,
    llm_config,
    open_session,
    run_until,
    start_with_llm,
    wait_for,
)
from tests.llm_server import FakeLLMServer, fake_llm_server

REQUEST = LLMRequest(system="rules", prompt="what now?", temperature=0.0, max_tokens=50)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as s:
        yield s


@pytest.fixture
def second(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    with fake_llm_server() as s:
        yield s


@pytest.fixture
def transports() -> Iterator[list[Transport]]:
    made: list[Transport] = []
    yield made
    for transport in made:
        transport.close()


def free_port() -> int:
    """A port nobody listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def transport(made: list[Transport], urls: list[str], *, clock: Clock | None = None,
              **llm: Any) -> Transport:
    settings: dict[str, Any] = {"provider": "openai", "model": "test-model",
                                "api_key_env": "", "max_retries": 2, "request_timeout_s": 20.0,
                                "breaker_failures": 3, "breaker_cooldown_s": 30.0, **llm}
    if len(urls) == 1:
        settings["base_url"] = urls[0]
    else:
        settings["base_urls"] = urls
    cfg = LLMConfig(**settings)
    clock = clock or MonotonicClock()
    gates = Gates(budget=Budget(tokens_per_hour=0, cost_per_hour=0, clock=clock),
                  breaker=CircuitBreaker(failures=cfg.breaker_failures,
                                         cooldown_s=cfg.breaker_cooldown_s, clock=clock),
                  metrics=Metrics(clock), redact=Redactor(), price=None)
    made.append(t := build_transport(cfg, gates, clock=clock))
    return t


def ask(t: Transport) -> concurrent.futures.Future[LLMResponse]:
    return t.submit(t.complete(REQUEST, deadline=t.clock.now() + 20.0))


# -- item 1: many in flight on few threads -----------------------------------------------------


def test_a_thousand_requests_are_in_flight_at_once_on_one_loop_thread(
        server: FakeLLMServer, transports: list[Transport]) -> None:
    server.mode = "held"  # every request waits, open, until the gate opens
    threads_before = threading.active_count()
    t = transport(transports, [server.base_url], max_concurrent=1000)
    futures = [ask(t) for _ in range(1000)]
    assert wait_for(lambda: server.active >= 1000, wall_s=60), server.active
    # The loop thread and the one helper that made the provider: no thread per request.
    assert threading.active_count() <= threads_before + 3
    assert t.in_flight == 1000
    server.open_gate()
    answers = [f.result(60) for f in futures]
    assert server.peak >= 1000
    assert all('"plan"' in a.text for a in answers)
    assert t.in_flight == 0 and t.endpoint_stats()[0].requests == 1000


def test_requests_handed_over_together_each_run_and_each_can_be_cancelled(
        transports: list[Transport]) -> None:
    # The main thread hands a tick's requests over in one wake-up of the loop thread
    # (``call_soon``, then ``start`` there); each still runs as its own task, answers its
    # own future, and is cancelled alone.
    t = transport(transports, ["http://127.0.0.1:9"])
    started: list[int] = []
    cancelled: list[int] = []

    async def work(n: int) -> int:
        started.append(n)
        if n == 1:
            try:
                await asyncio.sleep(60)  # until cancelled
            except asyncio.CancelledError:
                cancelled.append(n)
                raise
        return n * 10

    held: list[concurrent.futures.Future[int]] = [concurrent.futures.Future() for _ in range(3)]
    t.call_soon(lambda: [t.start(work(n), future) for n, future in enumerate(held)])
    assert wait_for(lambda: started == [0, 1, 2])
    held[1].cancel()
    assert [f.result(timeout=10) for f in (held[0], held[2])] == [0, 20]
    assert wait_for(lambda: cancelled == [1])
    # Cancelled before the loop thread started it: it never runs, and is closed.
    entered, release = threading.Event(), threading.Event()

    async def hold_the_loop() -> None:
        entered.set()
        release.wait(10)  # blocks the loop thread: nothing else starts meanwhile

    t.submit(hold_the_loop())
    assert entered.wait(10)
    never = work(99)
    future: concurrent.futures.Future[int] = concurrent.futures.Future()
    t.call_soon(lambda: t.start(never, future))
    future.cancel()
    release.set()
    t.submit(asyncio.sleep(0)).result(timeout=10)  # the hand-over has run by now
    assert 99 not in started and future.cancelled()
    assert inspect.getcoroutinestate(never) == inspect.CORO_CLOSED


def test_more_requests_than_max_concurrent_wait_for_a_slot(
        server: FakeLLMServer, transports: list[Transport]) -> None:
    server.mode = "held"
    t = transport(transports, [server.base_url], max_concurrent=3)
    futures = [ask(t) for _ in range(5)]
    assert wait_for(lambda: server.active == 3 and t.waiting == 2)
    server.open_gate()
    assert all(f.result(30).text for f in futures)
    assert server.peak == 3


def test_a_cancelled_request_frees_its_slot(server: FakeLLMServer,
                                            transports: list[Transport]) -> None:
    server.mode = "held"
    t = transport(transports, [server.base_url], max_concurrent=1)
    stuck = ask(t)
    assert wait_for(lambda: server.active == 1 and t.in_flight == 1)
    stuck.cancel()  # from this thread: the coroutine is cancelled on the loop thread
    assert wait_for(lambda: t.in_flight == 0)
    server.mode = "ok"
    assert '"plan"' in ask(t).result(10).text  # the one slot is free again
    assert stuck.cancelled()


def test_a_withdrawn_llm_request_is_cancelled_and_its_late_answer_dropped(
        tmp_path: Path, server: FakeLLMServer) -> None:
    server.mode = "held"
    session = open_session(llm_config(tmp_path, server, agents=1, max_concurrent=1))
    try:
        llm = session.llm
        assert llm is not None and session.llm_transport is not None
        transport_ = session.llm_transport
        eid = next(iter(llm.minds))
        run_until(session, 200, lambda: server.active == 1, pause_s=0.01)
        assert transport_.in_flight == 1
        llm.pipeline.forget(eid)  # it leaves the kind (as when it dies): withdrawn
        assert wait_for(lambda: transport_.in_flight == 0)
        assert llm.in_flight == 0
        server.open_gate()  # the server answers now; nobody listens any more
        run_until(session, 20)
        assert llm.metrics.applied == 0 and session.world.inbox.pending() == 0
    finally:
        session.close()


# -- item 3: several endpoints -----------------------------------------------------------------


def test_two_endpoints_share_the_load_by_fewest_in_flight(
        server: FakeLLMServer, second: FakeLLMServer, transports: list[Transport]) -> None:
    server.mode = second.mode = "held"
    t = transport(transports, [server.base_url, second.base_url], max_concurrent=10)
    futures = [ask(t) for _ in range(10)]
    assert wait_for(lambda: server.active + second.active == 10)
    assert (server.active, second.active) == (5, 5)
    server.open_gate()  # the first answers: its share comes back, the next go there
    assert wait_for(lambda: t.endpoint_stats()[0].in_flight == 0)
    more = [ask(t) for _ in range(4)]
    assert all(f.result(30).text for f in more)  # 0 in flight there against 5: all four
    assert server.count() == 9 and second.active == 5
    second.open_gate()
    assert all(f.result(30).text for f in [*futures, *more])
    assert [e.requests for e in t.endpoint_stats()] == [9, 5]


def test_an_endpoint_down_loses_no_request_opens_its_breaker_and_recovers(
        server: FakeLLMServer, transports: list[Transport]) -> None:
    clock = FakeClock()
    port = free_port()
    down = f"http://127.0.0.1:{port}/v1"
    t = transport(transports, [down, server.base_url], clock=clock, max_concurrent=20,
                  max_retries=0)  # not sent is not a retry: it needs none
    answers = [f.result(30) for f in [ask(t) for _ in range(20)]]
    assert len(answers) == 20 and all('"plan"' in a.text for a in answers)
    first, other = t.endpoint_stats()
    assert first.breaker.startswith("open") and first.unsent == first.failures >= 3
    assert other.requests == 20 and other.failures == 0
    assert t.gates.breaker.state == "closed"  # the model works: only one replica failed
    tried = first.requests
    for _ in range(5):
        ask(t).result(30)
    assert t.endpoint_stats()[0].requests == tried  # skipped while its breaker is open
    with fake_llm_server_on(port) as back:  # the replica comes back on its port
        clock.advance(31)  # its cooldown is over: the next request is its probe
        ask(t).result(30)
        assert back.count() == 1
        assert t.endpoint_stats()[0].breaker == "closed"


def test_every_endpoint_down_opens_every_breaker_and_then_the_models(
        transports: list[Transport]) -> None:
    clock = FakeClock()
    t = transport(transports, [f"http://127.0.0.1:{free_port()}/v1",
                               f"http://127.0.0.1:{free_port()}/v1"], clock=clock,
                  max_concurrent=4, max_retries=1)
    kinds = []
    for _ in range(8):
        try:
            ask(t).result(30)
        except ProviderError as exc:
            kinds.append(exc.kind)
    assert kinds[0] == "connect" and kinds[-1] == "breaker"  # failed, then refused unsent
    assert all(e.breaker.startswith("open") for e in t.endpoint_stats())
    assert t.gates.breaker.state == "open"  # the model as a whole: agents fall back
    assert "every LLM endpoint is failing" in t.unavailable()


def test_a_429_with_retry_after_slows_only_its_endpoint(
        server: FakeLLMServer, second: FakeLLMServer, transports: list[Transport]) -> None:
    clock = FakeClock()
    server.mode = "429"
    server.retry_after = "20"
    t = transport(transports, [server.base_url, second.base_url], clock=clock,
                  max_concurrent=4, retry_after_cap_s=60)
    for _ in range(6):
        assert '"plan"' in ask(t).result(30).text
    assert server.count() == 1 and second.count() == 6  # retried there at once, then kept
    assert not any(wait > 0 for wait in clock.sleeps)  # nobody waited out the 20 s
    server.mode = "ok"
    clock.advance(21)  # its pause is over: it takes its share again
    ask(t).result(30)
    assert server.count() == 2


def test_stats_show_each_endpoint(tmp_path: Path, server: FakeLLMServer,
                                  second: FakeLLMServer) -> None:
    config = llm_config(tmp_path, server, agents=4)
    session = open_session(config.replace(llm={"base_url": "",
                                               "base_urls": [server.base_url,
                                                             second.base_url]}))
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, lambda: llm.metrics.applied >= 4)
        endpoints = llm.stats()["endpoints"]
    finally:
        session.close()
    assert list(endpoints) == [server.base_url, second.base_url]
    assert all("in flight" in text and "breaker closed" in text
               for text in endpoints.values())
    assert server.count() >= 1 and second.count() >= 1


# -- the settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(("llm", "says"), [
    ({"base_urls": ["http://a:1/v1", "http://a:1/v1/"]}, "is listed twice"),
    ({"base_urls": ["ftp://a/v1"]}, "is not an http:// or https:// URL"),
    ({"base_urls": ["http://a:1/v1"], "base_url": "http://b:1/v1"},
     "llm.base_url and llm.base_urls are both set"),
    ({"max_concurrent": 0}, "llm.max_concurrent = 0"),
    ({"max_concurrent": -5}, "llm.max_concurrent = -5"),
])
def test_bad_endpoint_settings_stop_start_up_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], llm: dict[str, Any],
        says: str) -> None:
    assert start_with_llm(tmp_path, llm) == 2
    err = capsys.readouterr().err
    assert says in err and "llm." in err


def test_base_urls_lists_the_endpoints_and_the_example_says_how() -> None:
    cfg = Config().replace(llm={"provider": "openai", "model": "m",
                                "base_urls": ["http://a:1/v1/", "https://b/v1"]}).llm
    assert cfg.endpoints == ("http://a:1/v1", "https://b/v1")
    assert Config().replace(llm={"provider": "openai", "model": "m"}).llm.endpoints == (
        "https://openrouter.ai/api/v1",)


class fake_llm_server_on:
    """A fake server on a given port (an endpoint that comes back)."""

    def __init__(self, port: int) -> None:
        self.server = FakeLLMServer(port=port)

    def __enter__(self) -> FakeLLMServer:
        return self.server.start()

    def __exit__(self, *_exc: object) -> None:
        self.server.stop()
