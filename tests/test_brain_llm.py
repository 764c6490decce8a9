"""The configured LLM as users' brains call it (``Brain.llm``): real HTTP to a stand-in
server, from worker threads, within the shared budget and breaker, and unharmed by the
state hash's forks."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_world.agents import SummaryMemory
from agent_world.config import LLMConfig
from agent_world.decisions.metrics import Metrics
from agent_world.llm.brainllm import BrainLLM, LLMUnavailable
from agent_world.llm.breaker import CircuitBreaker
from agent_world.llm.budget import Budget
from agent_world.llm.gates import Gates
from agent_world.llm.providers import build_transport, provider_factory
from agent_world.llm.redact import Redactor
from agent_world.llm.transport import Transport
from agent_world.types import MonotonicClock
from tests.llm_helpers import KEY, KEY_ENV
from tests.llm_server import FakeLLMServer, fake_llm_server


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as fake:
        yield fake


MADE: list[Transport] = []  # each test's transports, closed after it


@pytest.fixture(autouse=True)
def _close_transports() -> Iterator[None]:
    yield
    while MADE:
        MADE.pop().close()


def brain_llm(server: FakeLLMServer, *, tokens_per_hour: int = 0) -> BrainLLM:
    cfg = LLMConfig(provider="openai", base_url=server.base_url, model="test-model",
                    api_key_env=KEY_ENV, request_timeout_s=2.0, max_retries=0)
    clock = MonotonicClock()
    redactor = Redactor()
    gates = Gates(budget=Budget(tokens_per_hour=tokens_per_hour, cost_per_hour=0, clock=clock),
                  breaker=CircuitBreaker(failures=2, cooldown_s=60, clock=clock),
                  metrics=Metrics(clock), redact=redactor, price=None)
    transport = build_transport(cfg, gates, factory=provider_factory(cfg, redactor))
    MADE.append(transport)
    return BrainLLM(cfg, transport, rules=lambda: "RULES")


class Worker:
    """A thread that runs calls it is handed, like a brain worker between decisions."""

    def __init__(self, llm: BrainLLM) -> None:
        self.llm = llm
        self.jobs: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self.results: queue.SimpleQueue[tuple[Any, float]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while (job := self.jobs.get()) is not None:
                started = time.perf_counter()
                try:
                    result: Any = job()
                except Exception as exc:
                    result = exc
                self.results.put((result, time.perf_counter() - started))
        finally:
            self.llm.close_thread()

    def call(self, job: Callable[[], Any]) -> tuple[Any, float]:
        self.jobs.put(job)
        return self.results.get(timeout=30)

    def stop(self) -> None:
        self.jobs.put(None)
        self.thread.join(10)


def test_brains_get_the_models_answer_and_share_its_budget(server: FakeLLMServer) -> None:
    llm = brain_llm(server, tokens_per_hour=600)
    worker = Worker(llm)
    try:
        text, _ = worker.call(lambda: llm.complete("hello", system="be brief"))
        assert '"plan"' in text and llm.calls == 1
        body = server.requests[-1]["body"]
        assert body["messages"][0] == {"role": "system", "content": "be brief"}
        worker.call(lambda: llm.complete("again"))  # 680 tokens: past the 600 an hour
        refused, _ = worker.call(lambda: llm.complete("once more"))
        assert isinstance(refused, LLMUnavailable) and "budget" in str(refused)
        assert server.count("/chat/completions") == 2
    finally:
        worker.stop()


def test_a_failing_endpoint_opens_the_shared_breaker(server: FakeLLMServer) -> None:
    llm = brain_llm(server)
    server.mode = "500"
    worker = Worker(llm)
    try:
        for _ in range(2):
            failed, _ = worker.call(lambda: llm.complete("hello"))
            assert not isinstance(failed, str)
        refused, _ = worker.call(lambda: llm.complete("hello"))
        assert isinstance(refused, LLMUnavailable) and "breaker" in str(refused)
        assert llm.failures == 2
    finally:
        worker.stop()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_between_calls_leaves_the_workers_connection_working(
        server: FakeLLMServer) -> None:
    """The state hash forks the process while brain workers sit between calls. Nothing of a
    worker's connection may be freed in the child: there, freeing it would unregister the
    socket from the epoll instance both processes share, and the worker's next answer
    would never be heard (it waited out its whole timeout before this was fixed)."""
    llm = brain_llm(server)
    worker = Worker(llm)
    try:
        first, _ = worker.call(lambda: llm.complete("hello"))
        assert isinstance(first, str)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os._exit(0)
        os.waitpid(pid, 0)
        second, took = worker.call(lambda: llm.complete("hello again"))
        assert isinstance(second, str), second
        assert llm.failures == 0
        del took  # no timing assertion: a lost answer fails above, as a timeout
    finally:
        worker.stop()


def test_a_summarising_memory_folds_with_the_configured_llm(server: FakeLLMServer) -> None:
    llm = brain_llm(server)
    server.text = "Zed was hungry and ate berries near the river."
    memory = SummaryMemory(lambda prompt: llm.complete(prompt, max_tokens=80), window=4,
                           fold=2)
    worker = Worker(llm)
    try:
        for tick, text in enumerate(["saw berries", "walked to the river", "ate berries",
                                     "met Ida", "rested"]):
            worker.call(lambda text=text, tick=tick: memory.store(text, tick=tick))
    finally:
        worker.stop()
    assert memory.summaries == 1 and memory.failures == 0
    assert memory.summarize().startswith("Earlier: Zed was hungry and ate berries")
    prompt = server.requests[-1]["body"]["messages"][-1]["content"]
    assert "saw berries" in prompt and "walked to the river" in prompt
