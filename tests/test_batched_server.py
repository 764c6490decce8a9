"""The fake batched model server (tests/batched_server.py), over real HTTP on 127.0.0.1.

Nothing here asserts on wall-clock time: the server is paused to fill its slots and queue
deterministically, and latencies are compared through the service times it computes from
tokens. Service times are kept small so the tests finish quickly."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from agent_world.contract.answer import extract_json, parse_decision
from agent_world.llm.openai_api import OpenAIProvider
from agent_world.types import LLMRequest, ProviderError
from tests.batched_server import (
    ASK_AGAIN_BOUNDS,
    DEFAULT_ANSWER,
    PLAN_MAX_ACTIONS,
    WANDER_MAX_TICKS,
    BatchedModelServer,
    ServingProfile,
    batched_server,
    estimate_tokens,
    long_plan,
)

ROOT = Path(__file__).resolve().parent.parent
FAST: dict[str, Any] = {"base_s": 0.005, "per_prompt_token_s": 0.00001,
                        "per_output_token_s": 0.0001}


@pytest.fixture
def server() -> Iterator[BatchedModelServer]:
    with batched_server(slots=4, queue=8, retry_after_s=0.5, **FAST) as started:
        yield started


def body(prompt: str = "What do you do next?", **extra: Any) -> dict[str, Any]:
    return {"model": "fake-batched", "messages": [
        {"role": "system", "content": "You are an agent in a world."},
        {"role": "user", "content": prompt}], **extra}


async def post(session: aiohttp.ClientSession, server: BatchedModelServer,
               doc: dict[str, Any], path: str = "/chat/completions"
               ) -> tuple[int, dict[str, Any], str | None]:
    async with session.post(server.base_url + path, json=doc) as response:
        return response.status, await response.json(), response.headers.get("Retry-After")


async def until(condition: Callable[[], bool], wall_s: float = 20.0) -> None:
    """Wait for the server to reach a state; the deadline only turns a hang into a failure."""
    began = time.monotonic()
    while not condition():
        assert time.monotonic() - began < wall_s, "the server never reached the state"
        await asyncio.sleep(0.005)


def _waiting(server: BatchedModelServer) -> int:
    """Requests holding a slot or a place in the queue."""
    stats = server.statistics()
    return stats.decoding + stats.queued


def call(server: BatchedModelServer, request: LLMRequest) -> Any:
    """One decision through the project's own OpenAI-compatible client."""
    provider = OpenAIProvider(base_url=server.base_url, model=server.model, api_key=None,
                              connect_timeout_s=5.0, read_timeout_s=10.0,
                              max_response_bytes=100_000, structured="json")

    async def go() -> Any:
        try:
            return await provider.complete(request=request, timeout_s=20.0)
        finally:
            await provider.aclose()

    return asyncio.run(go())


# -- slots, queue, 429 ---------------------------------------------------------------------------


def test_it_never_decodes_more_than_its_slots_and_refuses_past_its_queue(
        server: BatchedModelServer) -> None:
    slots, queue = server.profile.slots, server.profile.queue

    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            await asyncio.to_thread(server.pause)
            calls = [asyncio.create_task(post(session, server, body(f"agent {i}")))
                     for i in range(slots * 3)]
            await until(lambda: _waiting(server) == slots * 3)
            stats = server.statistics()
            assert (stats.decoding, stats.queued) == (slots, queue)
            status, doc, retry_after = await post(session, server, body("one too many"))
            assert status == 429 and retry_after == "0.5"
            assert doc["error"]["type"] == "rate_limit_error"
            await asyncio.to_thread(server.resume)
            answers = await asyncio.gather(*calls)
        assert [a[0] for a in answers] == [200] * (slots * 3)

    asyncio.run(scenario())
    stats = server.statistics()
    assert stats.peak_decoding == slots and stats.peak_queued <= queue
    assert (stats.served, stats.rejected, stats.decoding, stats.queued) == (slots * 3, 1, 0, 0)
    records = server.records()
    assert max(r.busy for r in records) == slots
    # The queued ones waited for a slot; the first ones did not queue at all.
    assert sum(1 for r in records if r.busy == slots) >= queue


def test_the_client_reads_429_as_rate_limited_with_the_servers_retry_after() -> None:
    with batched_server(slots=1, queue=0, retry_after_s=2, **FAST) as server:
        server.pause()

        async def scenario() -> None:
            async with aiohttp.ClientSession() as session:
                first = asyncio.create_task(post(session, server, body()))
                await until(lambda: server.statistics().decoding == 1)
                with pytest.raises(ProviderError) as refused:
                    await asyncio.to_thread(call, server, LLMRequest(system="s", prompt="p"))
                await asyncio.to_thread(server.resume)
                assert (await first)[0] == 200
                assert refused.value.kind == "rate_limited"
                assert refused.value.retry_after == 2.0

        asyncio.run(scenario())


# -- answers -------------------------------------------------------------------------------------


def test_answers_a_decision_the_world_accepts_with_usage_counted_from_the_request() -> None:
    with batched_server(model="small-8b", **FAST) as server:
        request = LLMRequest(system="The rules of the world. " * 20, prompt="Now: {}. JSON only.")
        response = call(server, request)
    decision = parse_decision(extract_json(response.text), max_actions=5)
    assert [a.name for a in decision.actions] == ["wander"]
    assert response.model == "small-8b" and response.finish_reason == "stop"
    assert not response.usage.estimated
    assert response.usage.prompt_tokens == estimate_tokens(request.system + request.prompt)
    assert response.usage.completion_tokens == estimate_tokens(
        orjson.dumps(dict(DEFAULT_ANSWER)).decode())


def test_a_long_plan_is_a_decision_the_world_accepts_within_its_limits() -> None:
    from agent_world.config import Config
    from agent_world.contract.answer import ASK_AGAIN_S
    from agent_world.core.actions import ACTIONS

    assert ACTIONS["wander"].args["ticks"].high == WANDER_MAX_TICKS
    assert Config().llm.plan_actions == PLAN_MAX_ACTIONS
    assert ASK_AGAIN_BOUNDS == ASK_AGAIN_S
    for ticks, ask, expected_ask, wanders in ((1500, 30, 30, [300] * 5), (450, None, 45,
                                              [300, 150]), (20, None, 5, [20])):
        decision = parse_decision(extract_json(orjson.dumps(long_plan(ticks, ask)).decode()),
                                  max_actions=PLAN_MAX_ACTIONS)
        assert [a.name for a in decision.actions] == ["wander"] * len(wanders)
        assert [a.args["ticks"] for a in decision.actions] == wanders
        assert decision.ask_again_s == expected_ask
    fed = parse_decision(extract_json(orjson.dumps(long_plan(900, 30, eat=True)).decode()),
                         max_actions=PLAN_MAX_ACTIONS)
    assert [a.name for a in fed.actions] == ["wander", "eat", "wander", "eat", "wander"]
    for bad in ({"ticks": 0}, {"ticks": 1501}, {"ticks": 600, "ask_again_s": 4},
                {"ticks": 901, "eat": True}):
        with pytest.raises(ValueError):
            long_plan(**bad)


def test_both_paths_answer_and_models_are_listed_and_a_short_max_tokens_cuts_the_answer(
        server: BatchedModelServer) -> None:
    async def scenario() -> list[Any]:
        async with aiohttp.ClientSession() as session:
            out: list[Any] = [await post(session, server, body(), "/chat/completions"),
                              await post(session, server, body(max_tokens=5))]
            async with session.get(server.base_url + "/models") as response:
                out.append(await response.json())
            async with session.post(f"http://127.0.0.1:{server.port}/chat/completions",
                                    json=body()) as response:
                out.append(response.status)
            return out

    plain, cut, models, bare = asyncio.run(scenario())
    assert plain[0] == 200 and bare == 200
    assert cut[1]["choices"][0]["finish_reason"] == "length"
    assert cut[1]["usage"]["completion_tokens"] == 5
    assert [m["id"] for m in models["data"]] == ["fake-batched"]


def test_a_server_that_requires_its_model_refuses_another_with_404() -> None:
    with batched_server(model="model-a", require_model=True, **FAST) as server:
        async def scenario() -> tuple[int, int, str]:
            async with aiohttp.ClientSession() as session:
                wrong = await post(session, server, {**body(), "model": "model-b"})
                right = await post(session, server, {**body(), "model": "model-a"})
                return wrong[0], right[0], right[1]["model"]

        assert asyncio.run(scenario()) == (404, 200, "model-a")
        assert server.statistics().invalid == 1


def test_two_servers_side_by_side_keep_their_own_model_latency_and_figures() -> None:
    with batched_server(model="quick", **FAST) as quick, \
            batched_server(model="slow", **{**FAST, "per_output_token_s": 0.001}) as slow:
        async def scenario() -> list[str]:
            async with aiohttp.ClientSession() as session:
                answers = await asyncio.gather(post(session, quick, body()),
                                               post(session, slow, body()),
                                               post(session, slow, body()))
                return [a[1]["model"] for a in answers]

        assert asyncio.run(scenario()) == ["quick", "slow", "slow"]
        assert (quick.statistics().served, slow.statistics().served) == (1, 2)
        assert quick.port != slow.port
        assert slow.records()[0].service_s > quick.records()[0].service_s


# -- latency from tokens -------------------------------------------------------------------------


def test_latency_grows_with_prompt_and_answer_tokens_and_with_a_busier_batch(
        server: BatchedModelServer) -> None:
    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            for doc in (body("short"), body("long " * 2000), body("short", max_tokens=3)):
                assert (await post(session, server, doc))[0] == 200  # one at a time

    asyncio.run(scenario())
    short, long, cut = server.records()
    assert short.busy == long.busy == cut.busy == 1
    assert long.prompt_tokens > short.prompt_tokens and long.service_s > short.service_s
    assert cut.completion_tokens < short.completion_tokens and cut.service_s < short.service_s
    profile = server.profile
    for r in (short, long, cut):
        assert r.service_s == profile.service_s(r.prompt_tokens, r.completion_tokens, busy=1)
    assert profile.service_s(100, 40, busy=4) > profile.service_s(100, 40, busy=1)


def test_capacity_is_slots_over_a_typical_requests_full_batch_service_time() -> None:
    profile = ServingProfile()  # the documented defaults: a small local vLLM
    alone = 0.05 + 1550 * 0.0002 + 40 * 0.02
    assert profile.capacity_per_s() == pytest.approx(32 / (alone * (1 + 0.01 * 31)))
    assert profile.capacity_per_s(3000, 40) < profile.capacity_per_s()
    with batched_server(slots=4, **FAST) as server:
        assert server.capacity_per_s() == server.profile.capacity_per_s()  # none served yet
        asyncio.run(_one(server, body("x" * 400)))
        served = server.records()[0]
        assert server.capacity_per_s() == server.profile.capacity_per_s(
            served.prompt_tokens, served.completion_tokens)
        stats = server.statistics(window_s=60)
        assert stats.served == 1 and stats.served_per_s > 0
        assert stats.capacity_per_s == server.capacity_per_s()
        assert stats.latency_p95_s >= stats.service_p95_s == served.service_s


async def _one(server: BatchedModelServer, doc: dict[str, Any]) -> None:
    async with aiohttp.ClientSession() as session:
        assert (await post(session, server, doc))[0] == 200


# -- failures ------------------------------------------------------------------------------------


def test_injected_failures_then_refused_connections_then_serving_again(
        server: BatchedModelServer) -> None:
    async def statuses(n: int) -> list[int]:
        async with aiohttp.ClientSession() as session:
            return [(await post(session, server, body()))[0] for _ in range(n)]

    server.fail_next(2, status=503)
    server.fail_next(1, status=500)
    assert asyncio.run(statuses(4)) == [503, 503, 500, 200]

    server.fail_next(1, status="drop")
    with pytest.raises(aiohttp.ClientError):
        asyncio.run(statuses(1))
    assert asyncio.run(statuses(1)) == [200]

    port = server.port
    server.refuse_connections()
    with pytest.raises(aiohttp.ClientConnectorError):
        asyncio.run(statuses(1))
    server.accept_connections()
    assert server.port == port and asyncio.run(statuses(1)) == [200]
    assert server.statistics().failed == 4


def test_the_client_reads_an_injected_503_as_a_server_error(
        server: BatchedModelServer) -> None:
    server.fail_next(1, status=503)
    with pytest.raises(ProviderError) as failed:
        call(server, LLMRequest(system="s", prompt="p"))
    assert failed.value.kind == "server" and failed.value.status == 503


@pytest.mark.parametrize("settings, words", [
    ({"slots": 0}, "slots must be a whole number >= 1"),
    ({"queue": -1}, "queue must be a whole number >= 0"),
    ({"per_output_token_s": -0.1}, "per_output_token_s must be a finite number >= 0"),
    ({"base_s": 0, "per_prompt_token_s": 0, "per_output_token_s": 0}, "must take some time"),
])
def test_bad_settings_are_refused_naming_the_setting(settings: dict[str, Any],
                                                      words: str) -> None:
    with pytest.raises(ValueError, match=words):
        BatchedModelServer(**settings)
    with pytest.raises(ValueError, match="status must be one of"):
        BatchedModelServer().fail_next(1, status=404)


def test_a_port_in_use_fails_start_saying_why(server: BatchedModelServer) -> None:
    taken = BatchedModelServer(port=server.port)
    with pytest.raises(RuntimeError, match="could not start"):
        taken.start()
    assert not taken.running


# -- stopping ------------------------------------------------------------------------------------


def _sockets() -> int:
    """Sockets this process holds open (Linux), or -1 where that cannot be read."""
    folder = Path("/proc/self/fd")
    if not folder.is_dir():
        return -1
    count = 0
    for fd in folder.iterdir():
        with contextlib.suppress(OSError):
            count += fd.readlink().name.startswith("socket:")
    return count


def test_stop_ends_requests_in_flight_and_leaves_no_task_thread_or_socket() -> None:
    sockets, threads = _sockets(), threading.active_count()
    server = BatchedModelServer(slots=2, queue=2, **FAST).start()
    server.pause()
    port = server.port

    async def scenario() -> list[Any]:
        async with aiohttp.ClientSession() as session:
            calls = [asyncio.create_task(post(session, server, body())) for _ in range(4)]
            await until(lambda: _waiting(server) == 4)
            await asyncio.to_thread(server.stop)
            return list(await asyncio.gather(*calls, return_exceptions=True))

    outcomes = asyncio.run(scenario())
    assert all(isinstance(o, aiohttp.ClientError) for o in outcomes), outcomes
    assert server.leftover_tasks == 0 and not server.running
    assert (_sockets(), threading.active_count()) == (sockets, threads)
    server.stop()  # a second stop does nothing

    async def connect() -> None:
        async with aiohttp.ClientSession() as session:
            await session.get(f"http://127.0.0.1:{port}/v1/models")

    with pytest.raises(aiohttp.ClientConnectorError):
        asyncio.run(connect())


def test_it_runs_in_a_process_of_its_own_for_the_benchmark() -> None:
    child = subprocess.Popen([sys.executable, "-m", "tests.batched_server", "--slots", "3",
                              "--base-s", "0.005", "--model", "child"], cwd=ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")

        async def ask() -> int:
            async with aiohttp.ClientSession() as session, \
                    session.post(url + "/chat/completions", json=body()) as response:
                return response.status

        assert asyncio.run(ask()) == 200
        out, _ = child.communicate("", timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    figures = orjson.loads(out.strip().splitlines()[-1])
    assert figures["served"] == 1 and figures["capacity_per_s"] > 0
    assert child.returncode == 0
