"""The report's figures per model profile (issue 32 item 2): requests, decisions, fallbacks,
invalid answers, latency, tokens and cost of each profile, read from the logged inputs; and
re-asking a profile's decisions, refused with what to do instead."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent_world.cli import main
from agent_world.commands.dispatch import Console
from agent_world.config import Config
from agent_world.recorded.reask import ReaskError, ReaskOptions, check_options
from agent_world.report import build_report
from tests.llm_helpers import open_session, run_until
from tests.llm_server import FakeLLMServer
from tests.test_model_profiles import fast, server, two_models

__all__ = ["fast", "server"]  # the fixtures, found by pytest here


def test_the_report_gives_each_model_profile_its_figures(
        tmp_path: Path, server: FakeLLMServer, fast: FakeLLMServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    fast.script.extend(["schema", "schema"])  # its first answer breaks the format, twice
    config = two_models(tmp_path, server, fast)
    session = open_session(config)
    console = Console(session, notify=lambda _line: None)
    try:
        asyncio.run(console.execute("/spawn agent Zed brain=llm model=fast"))
        default, other = session.llm, session.llm_models["fast"]
        assert default is not None
        run_until(session, 4000, lambda: other.metrics.applied >= 2
                  and default.metrics.applied >= 2 and other.metrics.invalid >= 1)
        live = {"default": default.metrics, "fast": other.metrics}
    finally:
        session.close()
    folder = tmp_path / "saves" / "w"
    report = build_report(folder, window=100)
    figures = {m.profile: m for m in report.models}
    assert set(figures) == {"default", "fast"}
    assert figures["default"].models == ("test-model",)
    assert figures["fast"].models == ("fast-model",)
    for name, m in figures.items():
        assert m.decisions == live[name].applied
        assert m.requests == m.decisions + m.fallbacks
        assert m.latency_p50_ms > 0 and m.prompt_tokens > 0 and m.answer_tokens > 0
    assert figures["fast"].invalid == figures["fast"].fallbacks == 1  # counted against fast
    assert figures["default"].invalid == 0
    assert figures["default"].cost > 0
    assert main(["report", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "LLM agents' requests by model profile" in out
    assert any(line.split()[:2] == ["fast", "fast-model"] for line in out.splitlines())
    assert main(["report", str(folder), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [m["profile"] for m in doc["models"]] == ["default", "fast"]


def test_reask_of_a_model_profile_says_what_to_do_instead() -> None:
    config = Config().replace(llm={
        "provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
        "api_key_env": "", "models": {"big": {"model": "b"}}})

    def said(brain: str) -> str:
        with pytest.raises(ReaskError) as caught:
            check_options(ReaskOptions(brains=(brain,)), config)
        return str(caught.value)

    assert said("llm:big") == ("--brain llm:big: re-asking a model profile is not supported "
                               "yet; re-ask --brain llm with --model MODEL instead")
    assert "unknown model 'nosuch' (models: default, big)" in said("llm:nosuch")
