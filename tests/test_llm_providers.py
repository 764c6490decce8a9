"""Providers and the retry policy against a real local HTTP server that misbehaves on
request. Waits go through a fake clock; only real round trips take real time."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import pytest

from agent_world.contract.answer import decide_from_text, decision_schema
from agent_world.llm.anthropic_api import AnthropicProvider
from agent_world.llm.openai_api import OpenAIProvider
from agent_world.llm.redact import Redactor
from agent_world.llm.retry import ProviderPause, RetryPolicy, call_with_retries
from agent_world.types import FakeClock, LLMProvider, LLMRequest, ProviderError
from tests.llm_server import FakeLLMServer, fake_llm_server

KEY = "sk-test-0123456789abcdef-SECRET"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as s:
        yield s


@pytest.fixture(autouse=True)
def reset(server: FakeLLMServer) -> None:
    server.mode = "ok"
    server.script.clear()
    server.requests.clear()


def request(**kw: Any) -> LLMRequest:
    return LLMRequest(system="rules", prompt="what now?", schema=decision_schema(3),
                      temperature=0.5, max_tokens=100, seed=7, **kw)


def make(server: FakeLLMServer, kind: str = "openai", **kw: Any) -> LLMProvider:
    args: dict[str, Any] = {"base_url": server.base_url, "model": "test-model",
                            "api_key": KEY, "connect_timeout_s": 2.0, "read_timeout_s": 2.0,
                            "max_response_bytes": 100_000, "structured": "schema"}
    args.update(kw)
    if kind == "openai":
        return OpenAIProvider(**args)
    return AnthropicProvider(**args)


def call(provider: LLMProvider, req: LLMRequest | None = None, timeout_s: float = 5.0) -> Any:
    async def go() -> Any:
        try:
            return await provider.complete(request=req or request(), timeout_s=timeout_s)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def failure(provider: LLMProvider, timeout_s: float = 5.0) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, timeout_s=timeout_s)
    return info.value


# -- happy paths ---------------------------------------------------------------------------------


def test_openai_compatible_call_sends_the_wire_format_and_reads_usage_and_cost(
        server: FakeLLMServer) -> None:
    response = call(make(server))
    decision = decide_from_text(response.text, max_actions=3)
    assert [a.name for a in decision.actions] == ["idle", "wander"]
    assert response.usage.prompt_tokens == 300 and response.usage.completion_tokens == 40
    assert response.usage.cached_tokens == 100 and response.usage.cost == pytest.approx(1e-4)
    assert response.model == "test-model" and response.finish_reason == "stop"
    sent = server.requests[-1]
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    body = sent["body"]
    assert body["max_tokens"] == 100 and body["seed"] == 7 and body["temperature"] == 0.5
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    # the nested form: llama.cpp's server ignores a flat schema silently
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["thought", "plan"]


def test_openai_json_mode_and_missing_usage_is_estimated(server: FakeLLMServer) -> None:
    server.mode = "nousage"
    response = call(make(server, structured="json"))
    assert server.requests[-1]["body"]["response_format"] == {"type": "json_object"}
    assert response.usage.estimated and response.usage.prompt_tokens > 0


def test_openrouter_gets_attribution_headers_and_require_parameters() -> None:
    provider = OpenAIProvider(base_url="https://openrouter.ai/api/v1", model="m", api_key=KEY,
                              connect_timeout_s=1, read_timeout_s=1, max_response_bytes=1000,
                              structured="schema", app_url="https://example.org",
                              app_title="Agent World")
    headers = provider.headers()
    assert headers["HTTP-Referer"] == "https://example.org"
    assert headers["X-OpenRouter-Title"] == "Agent World"
    assert provider.body(request())["provider"] == {"require_parameters": True}
    assert KEY not in repr(provider)


def test_anthropic_call_uses_a_forced_tool_and_reads_its_input(server: FakeLLMServer) -> None:
    response = call(make(server, "anthropic"))
    assert [a.name for a in decide_from_text(response.text, max_actions=3).actions] == [
        "idle", "wander"]
    assert response.usage.prompt_tokens == 300 and response.usage.cached_tokens == 100
    sent = server.requests[-1]
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["x-api-key"] == KEY
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    body = sent["body"]
    assert body["tool_choice"] == {"type": "tool", "name": "decide"}
    assert body["system"][0]["text"] == "rules"
    assert "seed" not in body


def test_anthropic_without_tools_reads_text(server: FakeLLMServer) -> None:
    server.mode = "prose"
    response = call(make(server, "anthropic", structured="off"))
    assert "tools" not in server.requests[-1]["body"]
    assert decide_from_text(response.text, max_actions=3).thought == "testing the world"


# -- failures are classified -------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "kind", "status"), [
    ("429", "rate_limited", 429),
    ("500", "server", 500),
    ("529", "overloaded", 529),
    ("html502", "server", 502),
    ("400", "bad_request", 400),
    ("404", "bad_request", 404),
    ("402", "credit", 402),
    ("auth", "auth", 401),
    ("malformed", "malformed", 200),
    ("error200", "malformed", 200),
    ("huge", "too_large", 200),
])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_failures_are_classified(server: FakeLLMServer, api: str, mode: str, kind: str,
                                 status: int) -> None:
    server.mode = mode
    exc = failure(make(server, api))
    assert exc.kind == kind
    assert exc.status == status
    assert KEY not in str(exc) and KEY[:12] not in str(exc)
    assert exc.retryable == (kind in ("rate_limited", "server", "overloaded"))


def test_retry_after_is_read(server: FakeLLMServer) -> None:
    server.mode = "429"
    server.retry_after = "7"
    try:
        assert failure(make(server)).retry_after == 7.0
    finally:
        server.retry_after = "0.01"


def test_a_dropped_connection_is_a_connect_error(server: FakeLLMServer) -> None:
    server.mode = "drop"
    assert failure(make(server)).kind == "connect"


def test_a_hanging_server_times_out(server: FakeLLMServer) -> None:
    server.mode = "hang"
    assert failure(make(server), timeout_s=0.2).kind == "timeout"


def test_nobody_listening_is_a_connect_error() -> None:
    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1", model="m", api_key=None,
                              connect_timeout_s=1, read_timeout_s=1, max_response_bytes=1000,
                              structured="off")
    assert failure(provider).kind == "connect"


# -- retries -------------------------------------------------------------------------------------


def retried(provider: LLMProvider, *, clock: FakeClock, deadline: float = 60.0,
            max_retries: int = 2, pause: ProviderPause | None = None) -> tuple[Any, list[str]]:
    seen: list[str] = []

    async def go() -> Any:
        try:
            return await call_with_retries(
                provider, request(), deadline=clock.now() + deadline, clock=clock,
                policy=RetryPolicy(max_retries=max_retries, retry_after_cap_s=30),
                rng=random.Random(1), pause=pause or ProviderPause(),
                on_retry=lambda exc, _wait: seen.append(exc.kind))
        finally:
            await provider.aclose()
    return asyncio.run(go()), seen


@pytest.mark.parametrize("first", ["500", "529", "429", "drop", "html502"])
def test_transient_failures_are_retried(server: FakeLLMServer, first: str) -> None:
    server.script.extend([first, first])
    clock = FakeClock()
    response, seen = retried(make(server), clock=clock)
    assert response.text and len(seen) == 2
    assert server.count("/chat/completions") == 3
    assert len(clock.sleeps) == 2  # backoff waited on the injected clock, not for real


def test_backoff_grows_and_retry_after_is_honoured(server: FakeLLMServer) -> None:
    server.script.extend(["500", "500"])
    clock = FakeClock()
    retried(make(server), clock=clock)
    first, second = clock.sleeps
    assert 0.25 <= first <= 0.5 and 0.5 <= second <= 1.0
    server.script.append("429")
    server.retry_after = "12"
    try:
        clock = FakeClock()
        pause = ProviderPause()
        retried(make(server), clock=clock, pause=pause)
        assert clock.sleeps == [12.0]
        assert pause.until == 12.0  # the whole provider paused, not just this call
    finally:
        server.retry_after = "0.01"


def test_retry_after_beyond_the_cap_gives_up(server: FakeLLMServer) -> None:
    server.mode = "429"
    server.retry_after = "3600"
    try:
        with pytest.raises(ProviderError) as info:
            retried(make(server), clock=FakeClock())
        assert info.value.kind == "rate_limited"
        assert server.count() == 1
    finally:
        server.retry_after = "0.01"


@pytest.mark.parametrize("mode", ["400", "404", "402", "auth"])
def test_client_errors_are_never_retried(server: FakeLLMServer, mode: str) -> None:
    server.mode = mode
    with pytest.raises(ProviderError):
        retried(make(server), clock=FakeClock())
    assert server.count() == 1


def test_retries_stop_at_the_limit_and_inside_the_deadline(server: FakeLLMServer) -> None:
    server.mode = "500"
    with pytest.raises(ProviderError):
        retried(make(server), clock=FakeClock(), max_retries=2)
    assert server.count() == 3
    server.requests.clear()
    with pytest.raises(ProviderError):
        retried(make(server), clock=FakeClock(), deadline=0.2)  # backoff would pass it
    assert server.count() == 1


def test_the_key_never_appears_in_errors_even_when_the_server_echoes_it(
        server: FakeLLMServer) -> None:
    server.mode = "auth"
    exc = failure(make(server, redactor=Redactor([KEY])))
    assert "REDACTED" in str(exc) and KEY not in str(exc)
