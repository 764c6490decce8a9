"""LLM agents in running worlds, against the fake server: decisions arrive as logged plan
inputs, the world never waits, nothing invalid is applied, breaker, budget and cache behave,
a recorded run replays with the server off, and the key never leaks."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from agent_world.app import Session
from agent_world.cli import main
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.decisions.mind import NEVER_ASKED
from agent_world.persistence import SaveFolder, open_world, replay
from agent_world.persistence.minds import read_minds
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.types import FakeClock, TickReport
from tests.llm_helpers import (
    KEY,
    KEY_ENV,
    llm_config,
    llm_inputs,
    open_session,
    run_until,
    wait_for,
)
from tests.llm_server import FakeLLMServer, fake_llm_server


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as s:
        yield s


def _llm_agents(world: World) -> list[int]:
    return [eid for eid, row in world.agents() if row[0].brain == "llm"]


def _applied(session: Session) -> int:
    assert session.llm is not None
    return session.llm.metrics.applied


# -- decisions reach the world only as inputs, and replay without the server -------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_decisions_are_logged_inputs_and_replay_with_the_server_off(
        tmp_path: Path, server: FakeLLMServer, provider: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = llm_config(tmp_path, server, provider=provider)
    session = open_session(config)
    thinkers = _llm_agents(session.world)
    assert len(thinkers) == 4
    try:
        run_until(session, 3000, lambda: _applied(session) >= 6 and session.world.tick >= 30)
        assert session.llm is not None
        stats = session.llm.stats()
        lines = session.llm.debug(thinkers[0])
    finally:
        session.close()
    folder = tmp_path / "saves" / "w"
    inputs = llm_inputs(folder)
    assert len(inputs) >= 6
    data = inputs[0]["data"]
    assert data["agent"] in thinkers and data["source"] == "llm"
    assert [a["name"] for a in data["actions"]] == ["idle", "wander"]
    assert data["thought"] == "testing the world" and data["model"] == "test-model"
    assert data["usage"]["prompt_tokens"] > 0 and data["latency_ms"] >= 0
    assert "plan" in data["raw"]
    assert stats["applied"] >= 6 and stats["requests"] >= 6
    assert lines[0].startswith("state: ")
    # the server is gone: replay and resume rebuild the same world from the log alone
    server.stop()
    start = load_first_snapshot(SaveFolder.open(folder), config)
    result = replay(start.world, SaveFolder.open(folder))
    assert result.checks > 0 and result.inputs >= 6
    start.world.close()
    # the command line, with the LLM configured but no key: replay never calls the model
    monkeypatch.delenv(KEY_ENV)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config.to_dict()), encoding="utf-8")
    assert main(["replay", str(folder), "--config", str(config_file)]) == 0
    monkeypatch.setenv(KEY_ENV, KEY)
    hash_before = session.world.state_hash()
    resumed = open_world(config)
    assert resumed.resumed and resumed.world.state_hash() == hash_before
    resumed.world.close()


def test_with_no_provider_there_is_no_manager_and_no_llm_agent(tmp_path: Path) -> None:
    config = Config().replace(world={"size": [32, 32], "starting_agents": 6},
                              persistence={"enabled": False},
                              paths={"logs": str(tmp_path)}, log={"echo": False})
    opened = open_world(config)
    session = Session(config, opened.world)
    try:
        assert session.llm is None
        assert not _llm_agents(session.world)
    finally:
        session.close()


def test_an_agent_spawned_with_brain_llm_joins_in(tmp_path: Path,
                                                  server: FakeLLMServer) -> None:
    session = open_session(llm_config(tmp_path, server, agents=0))
    try:
        session.world.inbox.submit("spawn", {"kind": "agent", "name": "Newbie",
                                             "brain": "llm"})
        run_until(session, 3000, lambda: _applied(session) >= 1)
        newbie = session.world.population.find("Newbie")
        assert newbie is not None and session.llm is not None
        assert list(session.llm.minds) == [newbie]
        assert session.world.store.get(newbie, c.Intent).plan_source == "llm"
    finally:
        session.close()


# -- the world never waits ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hang", "drop", "500"])
def test_the_world_keeps_ticking_while_the_server_misbehaves(
        tmp_path: Path, server: FakeLLMServer, mode: str) -> None:
    server.mode = mode
    clock = FakeClock()
    session = open_session(llm_config(tmp_path, server, request_timeout_s=0.3,
                                      max_retries=0, breaker_failures=1000), clock=clock)
    try:
        async def go() -> None:
            await session.loop.run(max_ticks=300, paced=True)  # paced on the fake clock
        asyncio.run(go())
        assert session.world.tick == 300
        assert session.loop.stats().ticks == 300
        assert wait_for(lambda: server.count() >= 1)  # they asked; the world went on
        assert session.llm is not None and session.llm.metrics.applied == 0
        if mode == "hang":
            thinking = [session.llm.debug(e)[0] for e in session.llm.minds]
            assert "in flight" in session.llm.status_line()
            assert any("thinking" in line for line in thinking) or session.llm.metrics.timeouts
    finally:
        session.close()
    assert not llm_inputs(tmp_path / "saves" / "w")


def test_no_prompt_is_built_while_a_request_waits_in_line(
        tmp_path: Path, server: FakeLLMServer) -> None:
    # One request allowed in flight, a hanging endpoint: one request flies and every other
    # agent's ask waits in line, in order (none is put off), with no prompt built for it
    # yet: the observation and the prompt are made as a request goes out, so none is sent
    # stale or built in vain.
    server.mode = "hang"
    config = llm_config(tmp_path, server, agents=6, workers=1, max_concurrent=1,
                        request_timeout_s=30.0)
    session = open_session(config)
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 30)
        assert wait_for(lambda: llm.in_flight == 1)
        queued = [m for m in llm.minds.values() if llm.queue.state_of(m.agent) == "queued"]
        assert len(queued) == len(llm.minds) - 1 == llm.queue.depth
        assert all(m.last_prompt == "" and m.last_observation is None for m in queued)
        assert server.count() == 1
        assert llm.metrics.deferred == 0 and "deferred" not in llm.stats()
        urgent, routine = llm.queue.depths()
        assert llm.stats()["queue"] == f"{urgent} urgent, {routine} routine"
        assert urgent + routine == len(queued)
    finally:
        session.close()


def test_prompts_and_memories_are_made_off_the_main_thread(
        tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 32 item 5: as a request goes out the main thread takes what the agent sees
    # (frozen); the prompt is rendered on the transport's loop thread, where the agents'
    # memories are kept too (their decisions among them), and /debug still shows it.
    from agent_world.llm.memory import MemoryBook
    from agent_world.llm.prompts import PromptBuilder

    threads: dict[str, list[str]] = {"prompt": [], "memory": []}
    render, remember = PromptBuilder.user, MemoryBook.on_events

    def user(self: PromptBuilder, **parts: Any) -> str:
        threads["prompt"].append(threading.current_thread().name)
        return render(self, **parts)

    def on_events(self: MemoryBook, *args: Any) -> None:
        threads["memory"].append(threading.current_thread().name)
        remember(self, *args)

    monkeypatch.setattr(PromptBuilder, "user", user)
    monkeypatch.setattr(MemoryBook, "on_events", on_events)
    session = open_session(llm_config(tmp_path, server, agents=2))
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, lambda: llm.metrics.applied >= 4)
        eid = next(iter(llm.minds))
        assert wait_for(lambda: "I decided" in str(llm.memory.view_of(eid).recent))
        lines = llm.debug(eid)
        tokens = llm.minds[eid].last_prompt_tokens
    finally:
        session.close()
    assert len(threads["prompt"]) >= 4 and len(threads["memory"]) >= 4
    loop_thread = {*threads["prompt"], *threads["memory"]}
    assert len(loop_thread) == 1 and threading.main_thread().name not in loop_thread
    assert tokens > 100 and any(line.startswith("last prompt (t=") for line in lines)


# -- nothing invalid is applied; the error goes into the next prompt ---------------------------


@pytest.mark.parametrize("mode", ["schema", "malformed", "huge", "length", "error200"])
def test_nothing_invalid_is_applied(tmp_path: Path, server: FakeLLMServer, mode: str) -> None:
    server.mode = mode
    session = open_session(llm_config(tmp_path, server, max_response_bytes=100_000,
                                      agents=2, breaker_failures=1000))
    try:
        assert session.llm is not None
        llm = session.llm
        run_until(session, 3000, lambda: llm.metrics.fallbacks >= 3)
        assert llm.metrics.fallbacks >= 3 and llm.metrics.applied == 0
        kind = {"huge": "too_large", "error200": "malformed"}.get(mode, mode)
        assert llm.stats()["errors"].get(kind, 0) >= 1
        if mode in ("schema", "length"):
            assert llm.metrics.invalid >= 1
            # one second chance at temperature 0, then the error feeds the next prompt
            bodies = [r["body"] for r in server.requests]
            assert any(b["temperature"] == 0.0 for b in bodies)
            run_until(session, 3000, lambda: any(
                "previous answer was rejected" in r["body"]["messages"][1]["content"]
                for r in server.requests))
            prompts = [r["body"]["messages"][1]["content"] for r in server.requests]
            assert any("previous answer was rejected" in p for p in prompts)
            eid = next(iter(llm.minds))
            assert any("error" in line for line in llm.debug(eid))
    finally:
        session.close()
    assert not llm_inputs(tmp_path / "saves" / "w")


def test_prose_around_the_json_is_still_understood(tmp_path: Path,
                                                   server: FakeLLMServer) -> None:
    server.mode = "prose"
    session = open_session(llm_config(tmp_path, server, structured="off", agents=1))
    try:
        run_until(session, 3000, lambda: _applied(session) >= 1)
        assert _applied(session) >= 1
        assert "response_format" not in server.requests[0]["body"]
    finally:
        session.close()


# -- breaker, budget, cache --------------------------------------------------------------------


def _log_text(tmp_path: Path) -> str:
    return (tmp_path / "logs" / "world.log").read_text(encoding="utf-8")


def test_the_breaker_opens_falls_back_once_and_recovers(
        tmp_path: Path, server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.mode = "500"
    llm_clock = FakeClock()
    session = open_session(llm_config(tmp_path, server, max_retries=0, breaker_failures=3,
                                      min_gap_ticks=1, think_interval_ticks=5),
                           llm_clock=llm_clock)
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, lambda: llm.breaker.state == "open")
        assert llm.breaker.state == "open"
        run_until(session, 20)  # a call that passed the breaker just before it opened lands
        calls = server.count()
        run_until(session, 200)  # open: no calls at all, agents on built-in brains
        assert server.count() == calls
        assert llm.stats()["breaker"].startswith("open")
        server.mode = "ok"
        llm_clock.advance(31)
        run_until(session, 3000, lambda: llm.breaker.state == "closed" and llm.metrics.applied)
        assert llm.breaker.state == "closed" and llm.metrics.applied >= 1
    finally:
        session.close()
    err = capsys.readouterr().err
    assert err.count("circuit breaker open") == 1
    log = _log_text(tmp_path)
    assert log.count("circuit breaker open") == 1
    assert "LLM available again" in log


def test_a_bad_key_stops_calls_and_says_so_once(tmp_path: Path, server: FakeLLMServer,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    server.mode = "auth"
    session = open_session(llm_config(tmp_path, server))
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, lambda: llm.breaker.state == "stopped")
        assert llm.breaker.state == "stopped"
        run_until(session, 20)
        calls = server.count()
        run_until(session, 100)
        assert server.count() == calls
    finally:
        session.close()
    err = capsys.readouterr().err
    assert err.count("LLM calls stopped") == 1
    assert KEY not in err and KEY[:12] not in err


def test_the_budget_caps_spending_then_refills(tmp_path: Path, server: FakeLLMServer,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    llm_clock = FakeClock()
    # each fake answer costs 340 tokens: the budget allows two calls (unpaced: the hour's
    # budget may go at once)
    session = open_session(llm_config(tmp_path, server, tokens_per_hour=600, workers=1,
                                      max_concurrent=1, min_gap_ticks=1,
                                      think_interval_ticks=5, budget_burst_minutes=0,
                                      decisions_per_agent_hour=0), llm_clock=llm_clock)
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, llm.budget.exhausted)
        assert llm.budget.exhausted()
        run_until(session, 50)
        calls = server.count()
        run_until(session, 200)
        assert server.count() == calls  # spent: nobody asks
        assert llm.stats()["budget left"] == "0 tokens"
        # said once, however many ticks the agents spent on built-in brains
        assert capsys.readouterr().err.count("LLM budget spent") == 1
        llm_clock.advance(3601)
        run_until(session, 3000, lambda: server.count() > calls)
        assert server.count() > calls
    finally:
        session.close()
    assert "LLM available again" in _log_text(tmp_path)


def test_a_cached_answer_is_applied_without_a_call(tmp_path: Path,
                                                   server: FakeLLMServer) -> None:
    session = open_session(llm_config(tmp_path, server, agents=1))
    try:
        llm = session.llm
        assert llm is not None
        eid = next(iter(llm.minds))
        report = TickReport(tick=session.world.tick, inputs=[], events=[])
        llm.pipeline.on_tick(report)  # the world does not move: the next prompt will be identical
        assert llm.minds[eid].asked_tick == session.world.tick  # asked (queued or sent)
        deadline = 200
        while not llm.cache.hits and deadline:
            deadline -= 1
            if llm.queue.in_flight == 0 and llm.queue.depth == 0:
                mind = llm.minds[eid]
                # As never asked: no earlier observation to tell what changed since.
                mind.status, mind.asked_tick, mind.last_observation = "idle", NEVER_ASKED, None
                llm.pipeline.consider_now(eid)  # looked at at once, not in its slot of ticks
                llm.pipeline.on_tick(report)
            else:
                asyncio.run(asyncio.sleep(0.005))
        assert llm.cache.hits == 1 and server.count() == 1
        assert session.world.inbox.pending() == 2  # both decisions wait for the next tick
        assert llm.stats()["cache hit rate"] == "50%"
    finally:
        session.close()


# -- secrets -----------------------------------------------------------------------------------


def test_the_key_appears_nowhere(tmp_path: Path, server: FakeLLMServer,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    session = open_session(llm_config(tmp_path, server, breaker_failures=1000,
                                      log_prompts=True))
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, lambda: llm.metrics.applied >= 2)
        server.mode = "auth"  # the server now echoes the key in its error body
        run_until(session, 3000, lambda: llm.breaker.state == "stopped")
        texts = [repr(llm), repr(session.config), str(llm.stats())]
        for eid in llm.minds:
            texts.extend(llm.debug(eid))
        assert server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    finally:
        session.close()
    out = capsys.readouterr()
    texts.extend([out.out, out.err])
    for path in [*(tmp_path / "saves").rglob("*"), *(tmp_path / "logs").rglob("*")]:
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    meta = orjson.loads((tmp_path / "saves" / "w" / "meta.json").read_bytes())
    assert meta["config"]["llm"]["api_key_env"] == KEY_ENV
    logged = (tmp_path / "saves" / "w" / "llm" / "prompts.jsonl").read_text()
    assert '"error":"auth: ' in logged and "[REDACTED]" in logged  # the echo, masked
    for text in texts:
        assert KEY not in text and KEY[:12] not in text


# -- prompts: from the settings, logged, shown -----------------------------------------------


def test_prompts_state_the_worlds_numbers_and_are_logged_and_shown(
        tmp_path: Path, server: FakeLLMServer) -> None:
    config = llm_config(tmp_path, server, agents=1, log_prompts=True).replace(
        world={"tick_rate": 4.0}, game={"vision_radius": 12, "hearing_radius": 7})
    session = open_session(config)
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, lambda: llm.metrics.applied >= 2)
        eid = next(iter(llm.minds))
        shown = llm.debug(eid)
    finally:
        session.close()
    lines = [orjson.loads(line) for line in
             (tmp_path / "saves" / "w" / "llm" / "prompts.jsonl").read_bytes().splitlines()]
    (system,) = [line for line in lines if line["kind"] == "system"]
    assert "Each tick lasts 250 ms" in system["text"]  # 4 ticks per second
    assert "You see 12 tiles and hear speech 7 tiles away" in system["text"]
    calls = [line for line in lines if line["kind"] == "call"]
    assert len(calls) >= 2 and all(c["system"] == system["sha"] for c in calls)
    sent = [next(m["content"] for m in r["body"]["messages"] if m["role"] == "user")
            for r in server.requests if "body" in r]
    assert [c["prompt"] for c in calls] == sent[:len(calls)]  # exactly what the model saw
    assert all(c["answer"] == orjson.dumps(server.answer).decode() for c in calls)
    first, second = (orjson.loads(c["prompt"].split("Now (JSON): ")[1].splitlines()[0])
                     for c in calls[:2])
    assert first["tick"] < second["tick"] and "since_last_decision" not in first
    assert second["since_last_decision"]["ticks"] == second["tick"] - first["tick"]
    assert any(line.startswith("last prompt (t=") for line in shown)
    assert any('"you":' in line for line in shown)


# -- memories ----------------------------------------------------------------------------------


def test_memories_are_saved_and_reloaded_on_resume(tmp_path: Path,
                                                   server: FakeLLMServer) -> None:
    config = llm_config(tmp_path, server, agents=2)
    session = open_session(config)
    try:
        run_until(session, 3000, lambda: _applied(session) >= 2)
    finally:
        session.close()
    saved = read_minds(tmp_path / "saves" / "w" / "minds", 10**9).records
    assert saved
    eid, record = next(iter(saved.items()))
    assert any("I decided" in line["text"] for line in record["state"]["memory"]["recent"])
    again = open_session(config)
    try:
        assert again.llm is not None
        assert again.llm.memory.of(eid).recent
    finally:
        again.close()


# -- the console shows the figures ------------------------------------------------------------


def test_stats_debug_and_status_line_show_the_llm(tmp_path: Path,
                                                  server: FakeLLMServer) -> None:
    from agent_world.commands.dispatch import Console
    from agent_world.console.status import status_text

    session = open_session(llm_config(tmp_path, server, agents=2))
    console = Console(session, notify=lambda _line: None)
    try:
        run_until(session, 3000, lambda: _applied(session) >= 2)
        stats = asyncio.run(console.execute("/stats"))
        first = next(i for i, line in enumerate(stats) if line.startswith("llm:"))
        section = [stats[first], *(line for line in stats[first + 1:]
                                   if line.startswith(" "))]  # a section wraps, indented
        llm_line = " ".join(section)
        for figure in ("requests", "in flight", "queue", "cache hit rate", "p50", "p95",
                       "timeouts", "errors", "retries", "tokens/h", "cost/h", "budget left",
                       "breaker closed", "prompt tokens/decision"):
            assert figure in llm_line, figure
        assert session.llm is not None
        eid = next(iter(session.llm.minds))
        debug = asyncio.run(console.execute(f"/debug {eid}"))
        assert any(line.startswith("llm: state: ") for line in debug)
        assert any(line.startswith("llm: last decision t=") for line in debug)
        assert "LLM 0 thinking" in status_text(session) or "thinking" in status_text(session)
        server.mode = "hang"
        session.llm.minds[eid].asked_tick = NEVER_ASKED  # due at once
        run_until(session, 5)
        assert "1 in flight" in status_text(session) or "thinking" in status_text(session)
        assert any("thinking (" in line
                   for line in asyncio.run(console.execute(f"/debug {eid}")))
    finally:
        session.close()


def test_a_bug_in_a_worker_is_reported_counted_and_survived(
        tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from agent_world.llm import answerer as worker

    calls = {"n": 0}
    real = worker.decide_from_text

    def flaky(text: str, *, max_actions: int) -> object:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom")
        return real(text, max_actions=max_actions)

    monkeypatch.setattr(worker, "decide_from_text", flaky)
    session = open_session(llm_config(tmp_path, server, agents=1, workers=1))
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, lambda: llm.metrics.applied >= 1)
        assert llm.metrics.errors.get("internal") == 1 and llm.metrics.applied >= 1
    finally:
        session.close()
    assert "LLM worker bug" in capsys.readouterr().err


def test_a_local_provider_without_its_model_stops_start_up_with_a_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump({
        "llm": {"provider": "local", "model": str(tmp_path / "missing.gguf")},
        "paths": {"saves": str(tmp_path / "saves"), "logs": str(tmp_path / "logs")}}),
        encoding="utf-8")
    assert main(["--config", str(config_file), "--headless", "--ticks", "1"]) == 2
    err = capsys.readouterr().err
    assert "missing.gguf" in err or "llama-cpp-python" in err


def test_a_prompt_too_long_for_the_model_is_trimmed_once(tmp_path: Path,
                                                         server: FakeLLMServer) -> None:
    session = open_session(llm_config(tmp_path, server, agents=1, min_gap_ticks=1))
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 3000, lambda: llm.metrics.applied >= 2)  # memory has lines now
        server.script.append("413")
        before = server.count()
        run_until(session, 3000, lambda: server.count() >= before + 2)
        too_long, trimmed = server.requests[before:before + 2]
        assert "Memory:" in too_long["body"]["messages"][1]["content"]
        assert "Memory:" not in trimmed["body"]["messages"][1]["content"]
        assert llm.metrics.errors.get("bad_request") == 1
    finally:
        session.close()


def test_a_stage_tick_waits_for_the_requests_queued_past_a_round(
        tmp_path: Path, server: FakeLLMServer) -> None:
    """An episode's tick (``tick_settled``) waits for every decision asked in it. With more
    asks than ``llm.max_concurrent`` some wait queued; they must go out as the first are
    answered, within the same tick: nothing else would send them, and the tick would wait
    ``THINK_WAIT_S`` for nothing (a training run of 30 s took three minutes)."""
    from agent_world.eval.stage import tick_settled

    config = llm_config(tmp_path, server, agents=4, max_concurrent=1)
    session = open_session(config)
    try:
        for _ in range(3):
            tick_settled(session)
            waiting = {type(p).__name__: p.thinking() for p in session.thinking_parts()}
            assert not any(waiting.values()), waiting
        assert len(server.requests) >= 4  # every agent's first thought, one at a time
    finally:
        session.close()
