"""Every LLM call passes the same gates (issue 31, item 3): the angel's and the trainer's
calls are held by the hourly budget and the circuit breaker as LLM agents' are, and their
tokens count where the agents' do. A real HTTP server stands in for the endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_world.app import Session
from agent_world.persistence import open_world
from agent_world.sandbox import Sandbox
from agent_world.training.command import TrainRequest, prepare
from tests.llm_helpers import KEY, KEY_ENV, llm_config, wait_for
from tests.llm_server import FakeLLMServer, fake_llm_server

IDLER = '''NAME = "idler"
DESCRIPTION = "Stands about."
VERSION = 1


def decide(obs, memory):
    return {"action": "idle", "args": {"ticks": 10}, "memory": memory}
'''

GATHER = """name: gather
description: A small map with food about; the subjects score the food they gather.
world: {size: [32, 32], starting_agents: 3, item_spawn_rate: 0.6, seed: 3}
subjects: {count: 3}
end: {ticks: 200}
score: {food_gathered: 1.0}
"""

TOKENS_PER_CALL = 340  # what the stand-in server reports for every answer


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as fake:
        yield fake


def calls(server: FakeLLMServer) -> int:
    return server.count("/chat/completions")


# -- the angel --------------------------------------------------------------------------------


def angel_session(tmp_path: Path, server: FakeLLMServer, **llm: Any) -> Session:
    config = llm_config(tmp_path, server, agents=0, max_retries=0, **llm).replace(
        angel={"generator": "auto"})
    opened = open_world(config)
    return Session(config, opened.world, folder=opened.folder,
                   sandbox=Sandbox(config, wait=True))


def ask_angel(session: Session, wish: str, written: int) -> dict[str, Any]:
    assert session.angel is not None and session.angel_link is not None
    session.angel_link.request(wish)
    angel = session.angel
    assert wait_for(lambda: angel.stats()["accepted"] + angel.stats()["refused"] >= written,
                    wall_s=60)
    return angel.stats()


def test_an_angel_request_is_held_by_a_spent_budget(tmp_path: Path,
                                                    server: FakeLLMServer) -> None:
    server.text = "no code here"  # the model answers, its answer is unusable: the
    # templates write the ability, and the tokens are spent all the same
    session = angel_session(tmp_path, server, tokens_per_hour=TOKENS_PER_CALL)
    try:
        ask_angel(session, "a gust of wind that pushes someone away", 1)
        asked = calls(server)
        assert asked >= 1
        assert session.llm_gates is not None
        assert session.llm_gates.budget.spent()[0] == asked * TOKENS_PER_CALL
        stats = ask_angel(session, "a healing light for a friend", 2)
        assert calls(server) == asked  # the budget let no call out
        generator = session.angel.generator  # type: ignore[union-attr]
        assert generator.last_error.startswith("budget: the hourly LLM budget")
        assert stats["written by the fallback"] >= 1
    finally:
        session.close()


def test_an_angel_request_is_held_by_an_open_breaker(tmp_path: Path,
                                                     server: FakeLLMServer) -> None:
    server.mode = "500"
    session = angel_session(tmp_path, server, breaker_failures=1, breaker_cooldown_s=600.0)
    try:
        ask_angel(session, "a gust of wind that pushes someone away", 1)
        asked = calls(server)
        assert asked == 1
        assert session.llm_gates is not None
        assert session.llm_gates.breaker.state == "open"
        ask_angel(session, "a healing light for a friend", 2)
        assert calls(server) == asked  # the open breaker let no call out
        generator = session.angel.generator  # type: ignore[union-attr]
        assert generator.last_error.startswith("breaker: the LLM circuit breaker is open")
    finally:
        session.close()


def test_the_angel_and_llm_agents_share_one_budget_and_its_figures(
        tmp_path: Path, server: FakeLLMServer) -> None:
    server.text = "no code here"
    session = angel_session(tmp_path, server)
    try:
        assert session.llm is not None and session.llm.gates is session.llm_gates
        before = session.llm.metrics.figures()["tokens_per_hour"]
        ask_angel(session, "a gust of wind that pushes someone away", 1)
        spent = calls(server) * TOKENS_PER_CALL
        assert session.llm.metrics.figures()["tokens_per_hour"] == before + spent
        assert session.llm.budget.spent()[0] == spent
    finally:
        session.close()


# -- the trainer ------------------------------------------------------------------------------


def train(tmp_path: Path, server: FakeLLMServer, **llm: Any) -> tuple[Any, list[dict]]:
    scenario = tmp_path / "gather.yaml"
    scenario.write_text(GATHER)
    request = TrainRequest(scenario=str(scenario), code=IDLER, episodes=2, workers=1,
                           iterations=5, generator="llm")
    config = llm_config(tmp_path, server, agents=0, max_retries=0, **llm).replace(
        paths={"runs": str(tmp_path / "runs")})
    messages: list[dict[str, Any]] = []
    trainer = prepare(request, config, tmp_path / "run", on_message=messages.append)
    trainer.run()
    return trainer, messages


def test_a_training_run_stops_at_a_spent_budget(tmp_path: Path,
                                               server: FakeLLMServer) -> None:
    server.text = "no policy here"
    trainer, messages = train(tmp_path, server, tokens_per_hour=TOKENS_PER_CALL)
    assert calls(server) == 1  # one call spent the hour's tokens; no more went out
    assert "the hourly LLM budget" in trainer.halted
    assert [v.status for v in trainer.versions] == ["start", "failed"]
    done = messages[-1]
    assert done["type"] == "done" and done["stopped"] and "budget" in done["halted"]


def test_a_training_run_stops_at_an_open_breaker(tmp_path: Path,
                                                server: FakeLLMServer) -> None:
    server.mode = "500"
    trainer, messages = train(tmp_path, server, breaker_failures=2, breaker_cooldown_s=600.0)
    assert calls(server) == 2  # the breaker opened after two failures
    assert "circuit breaker is open" in trainer.halted
    assert [v.status for v in trainer.versions] == ["start", "failed", "failed"]
    assert messages[-1]["type"] == "done" and messages[-1]["stopped"]
