"""The LLM layer and the abilities: the angel writes with the configured model, and LLM
agents are told which abilities they may use."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_world.app import Session
from agent_world.persistence import open_world
from agent_world.sandbox import Sandbox
from tests.llm_helpers import KEY_ENV, llm_config, wait_for
from tests.llm_server import FakeLLMServer
from tests.persistence_helpers import records

WIND = '''NAME = "gust"
DESCRIPTION = "A gust of wind that pushes an agent up to 4 tiles away."
ENERGY_COST = 6
COOLDOWN = 30
RANGE = 4
ARGS = {"target": "agent"}


def execute(ctx):
    return [{"type": "push", "target": ctx["target"]["id"], "tiles": 2}]
'''


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test-abilities")
    srv = FakeLLMServer().start()
    yield srv
    srv.stop()


def _session(tmp_path: Path, server: FakeLLMServer, **angel: object) -> Session:
    config = llm_config(tmp_path, server, agents=2).replace(
        angel={"generator": "auto", **angel})
    opened = open_world(config)
    return Session(config, opened.world, folder=opened.folder,
                   sandbox=Sandbox(config, wait=True))


def test_the_angel_writes_with_the_configured_model(tmp_path: Path,
                                                    server: FakeLLMServer) -> None:
    server.text = "Here you are:\n```python\n" + WIND + "```\n"
    session = _session(tmp_path, server)
    try:
        assert session.angel is not None and session.angel_link is not None
        assert session.angel.stats()["generator"] != "templates"
        session.angel_link.request("a gust of wind that pushes someone away")
        assert wait_for(lambda: session.angel is not None
                        and session.angel.stats()["accepted"] == 1, wall_s=60)
        asyncio.run(session.loop.run(max_ticks=2, paced=False))
        assert session.world.abilities.get("gust") is not None
        prompts = [r["body"] for r in server.requests
                   if "ability" in str(r["body"].get("messages", "")).lower()]
        assert prompts, "the angel never asked the model"
    finally:
        session.close()
    logged = [r for r in records(tmp_path / "saves" / "w")
              if r["kind"] == "input" and r["type"] == "ability"]
    assert [r["data"]["name"] for r in logged] == ["gust"]


def test_with_its_llm_unreachable_the_angel_writes_with_its_templates(
        tmp_path: Path, server: FakeLLMServer) -> None:
    # Issue 29: with the endpoint down, every request was refused after its tries; the
    # templates, which a world without an LLM uses, now write what the LLM cannot.
    config = llm_config(tmp_path, server, agents=0, max_retries=0).replace(
        angel={"generator": "auto"})
    server.stop()  # nothing listens at the configured address any more
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder,
                      sandbox=Sandbox(config, wait=True))
    try:
        assert session.angel is not None and session.angel_link is not None
        assert session.angel.generator.name == "llm, or templates when it cannot answer"
        session.angel_link.request("a gust of wind that pushes someone away")
        assert wait_for(lambda: session.angel is not None
                        and session.angel.stats()["accepted"] == 1, wall_s=60)
        stats = session.angel.stats()
        assert stats["written by the fallback"] == 1 and stats["refused"] == 0, stats
        asyncio.run(session.loop.run(max_ticks=2, paced=False))
    finally:
        session.close()
    logged = [r for r in records(tmp_path / "saves" / "w")
              if r["kind"] == "input" and r["type"] == "ability"]
    assert len(logged) == 1 and "push" in logged[0]["data"]["source"]
    log = (tmp_path / "logs" / "world.log").read_text(encoding="utf-8")
    assert "angel: the LLM cannot write abilities now (connect: " in log, log


def test_llm_agents_are_told_the_abilities_they_may_use(tmp_path: Path,
                                                       server: FakeLLMServer) -> None:
    session = _session(tmp_path, server)
    try:
        assert session.llm is not None
        asyncio.run(session.loop.run(max_ticks=30, paced=False))
        assert wait_for(lambda: server.count("/chat/completions") > 0, wall_s=30)
        system = server.requests[0]["body"]["messages"][0]["content"]
        assert "Abilities (use_ability" in system
        assert "- fire_bolt: target=agent" in system and "- heal:" in system
    finally:
        session.close()
