"""Several models in one world (issue 32 items 2, 6 and 8): named model profiles
(``llm.models``) chosen at spawn, by team or personality and in eval's ``--brains``; each
profile on its own transport, so a server answering 429 slows only its own agents; bad
profiles and unknown model names stopped with one line; a two-model world replays with no
server running."""

from __future__ import annotations

import asyncio
import dataclasses
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_world.cli import main
from agent_world.commands.dispatch import Console
from agent_world.commands.stats import sections
from agent_world.config import Config, ConfigError, llm_brain, llm_profile_of, llm_profiles
from agent_world.eval import load_scenario
from agent_world.eval.runner import evaluate
from agent_world.persistence import SaveFolder, replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.userbrains.registry import brain_refusal, load_brains, unregistered
from tests.llm_helpers import (
    KEY,
    KEY_ENV,
    llm_config,
    llm_inputs,
    open_session,
    run_until,
    start_with_llm,
)
from tests.llm_server import FakeLLMServer, fake_llm_server


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as s:
        yield s


@pytest.fixture
def fast() -> Iterator[FakeLLMServer]:
    with fake_llm_server() as s:
        yield s


def two_models(tmp: Path, server: FakeLLMServer, fast: FakeLLMServer,
               **llm: Any) -> Config:
    """The default profile on ``server`` (model test-model), profile ``fast`` on ``fast``."""
    return llm_config(tmp, server, agents=2, models={
        "fast": {"base_url": fast.base_url, "model": "fast-model", "api_key_env": "",
                 "max_concurrent": 2, "breaker_failures": 50}}, **llm)


def models_of(server: FakeLLMServer) -> set[str]:
    return {r["body"].get("model") for r in server.requests if "body" in r}


# -- the brain name is the model ---------------------------------------------------------------


def test_a_brain_name_carries_its_model_profile() -> None:
    assert llm_profile_of("llm") == "" and llm_profile_of("llm:fast") == "fast"
    assert llm_profile_of("builtin") is None and llm_profile_of("policy:x") is None
    assert llm_profile_of("llm:Bad") is None
    assert llm_brain("") == "llm" and llm_brain("fast") == "llm:fast"


def test_a_profile_is_the_llm_section_with_its_own_settings_over_it() -> None:
    cfg = Config().replace(llm={
        "provider": "openai", "model": "m", "api_key_env": "", "max_concurrent": 8,
        "base_url": "http://top:1/v1", "prices": {"m": "1/1/1"},
        "models": {"same": {"model": "m2"},
                   "own": {"base_urls": ["http://a:1/v1", "http://b:1/v1"],
                           "max_concurrent": 64, "prices": {"m3": "2/2/2"}}}}).llm
    profiles = llm_profiles(cfg)
    assert profiles["same"].endpoints == ("http://top:1/v1",)
    assert profiles["same"].model == "m2" and profiles["same"].max_concurrent == 8
    assert profiles["own"].endpoints == ("http://a:1/v1", "http://b:1/v1")
    assert profiles["own"].max_concurrent == 64
    assert profiles["own"].prices == {"m": "1/1/1", "m3": "2/2/2"}


@pytest.mark.parametrize(("llm", "says"), [
    ({"models": {"big": {"model": "x"}}},
     "llm.models.big: no endpoint; set llm.models.big.base_url"),
    ({"models": {"big": {"base_urls": ["http://a:1/v1", "http://a:1/v1/"]}}},
     "llm.models.big.base_urls: 'http://a:1/v1/' is listed twice"),
    ({"models": {"big": {"base_url": "http://a:1/v1", "max_concurrent": -1}}},
     "llm.models.big.max_concurrent = -1"),
    ({"models": {"big": {"base_url": "http://a:1/v1", "max_concurrent": 0}}},
     "llm.models.big.max_concurrent = 0"),
    ({"models": {"big": {"base_url": "http://a:1/v1", "max_concurent": 3}}},
     "llm.models.big: unknown setting 'max_concurent'; did you mean 'max_concurrent'"),
    ({"models": {"big": {"base_url": "http://a:1/v1", "agents": 3}}},
     "llm.models.big: unknown setting 'agents' (it is the llm section's alone)"),
    ({"models": {"Big one": {"base_url": "http://a:1/v1"}}},
     "llm.models.Big one: a model profile's name is 1-32 of a-z"),
    ({"models": {"big": {"base_url": "http://a:1/v1"}},
      "model_for": {"team": {"red": "bigg"}}},
     "llm.model_for.team.red: no model profile 'bigg' (models: default (brain llm), big)"),
    ({"models": {"big": {"provider": "none"}}}, "llm.models.big.provider: a profile needs"),
])
def test_a_bad_profile_stops_start_up_with_one_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], llm: dict[str, Any],
        says: str) -> None:
    assert start_with_llm(tmp_path, llm) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err
    assert not (tmp_path / "saves").exists()


def test_an_unknown_model_is_one_line_naming_the_known_ones() -> None:
    models = {"fast": {}}
    assert brain_refusal("llm:fast", {}, llm=True, models=models) is None
    assert brain_refusal("llm:slow", {}, llm=True, models=models) == (
        "unknown model 'slow' (models: default, fast); define it under llm.models in the "
        "configuration")
    assert "needs an LLM" in str(brain_refusal("llm:fast", {}, llm=False, models=models))


# -- two models in one world -------------------------------------------------------------------


def test_spawn_chooses_the_model_and_each_agent_asks_its_own_server(
        tmp_path: Path, server: FakeLLMServer, fast: FakeLLMServer) -> None:
    config = two_models(tmp_path, server, fast)
    session = open_session(config)
    console = Console(session, notify=lambda _line: None)

    def run(line: str) -> list[str]:
        return asyncio.run(console.execute(line))

    try:
        assert run("/spawn agent Zed brain=llm model=fast")[0].startswith("spawning agent")
        assert run("/spawn agent Ann brain=llm:fast")[0].startswith("spawning agent")
        (refused,) = run("/spawn agent Bob brain=llm model=slow")
        assert refused.count("\n") == 0
        assert "unknown model 'slow' (models: default, fast)" in refused
        (refused,) = run("/spawn agent Bob brain=builtin model=fast")
        assert "model=fast is for LLM agents" in refused
        fast_agents = session.llm_models["fast"]
        assert session.llm is not None
        run_until(session, 4000, lambda: fast_agents.metrics.applied >= 2
                  and session.llm is not None and session.llm.metrics.applied >= 2)
        brains = {row.agent.name: row.agent.brain for _eid, row in session.world.agents()}
        zed = next(eid for eid, row in session.world.agents() if row.agent.name == "Zed")
        stats = dict(sections(console))
        debug = "\n".join(run(f"/debug {zed}"))
        shown = "\n".join(run("/stats"))
    finally:
        session.close()
    assert brains["Zed"] == brains["Ann"] == "llm:fast"
    assert models_of(server) == {"test-model"} and models_of(fast) == {"fast-model"}
    inputs = llm_inputs(tmp_path / "saves" / "w")
    by_agent = {i["data"]["agent"]: i["data"]["profile"] for i in inputs}
    assert by_agent[zed] == "fast" and "default" in by_agent.values()
    assert stats["llm"]["profile"] == "default" and stats["llm:fast"]["profile"] == "fast"
    assert stats["llm:fast"]["model"] == "openai fast-model"
    assert stats["llm:fast"]["applied"] >= 2 and stats["llm:fast"]["agents"] == 2
    assert "llm: model: fast profile (openai fast-model)" in debug
    assert "llm:fast:" in shown


def test_a_server_answering_429_slows_only_its_own_models_agents(
        tmp_path: Path, server: FakeLLMServer, fast: FakeLLMServer) -> None:
    fast.mode = "429"
    fast.retry_after = "120"  # past llm.retry_after_cap_s: given up at once, paused long
    config = two_models(tmp_path, server, fast)
    session = open_session(config)
    console = Console(session, notify=lambda _line: None)
    try:
        asyncio.run(console.execute("/spawn agent Zed brain=llm model=fast"))
        asyncio.run(console.execute("/spawn agent Ann brain=llm model=fast"))
        llm, fast_agents = session.llm, session.llm_models["fast"]
        assert llm is not None
        run_until(session, 4000, lambda: llm.metrics.applied >= 6
                  and fast_agents.metrics.errors.get("rate_limited", 0) >= 2)
        default_applied = llm.metrics.applied
        fast_errors = dict(fast_agents.metrics.errors)
        fast_applied = fast_agents.metrics.applied
        default_errors = dict(llm.metrics.errors)
    finally:
        session.close()
    assert default_applied >= 6 and not default_errors
    assert fast_applied == 0 and fast_errors.get("rate_limited", 0) >= 2
    assert fast.count() >= 1 and models_of(server) == {"test-model"}


def test_model_for_gives_a_team_or_personality_its_model(
        tmp_path: Path, server: FakeLLMServer, fast: FakeLLMServer) -> None:
    config = two_models(tmp_path, server, fast, model_for={"team": {"red": "fast"}})
    session = open_session(config)
    console = Console(session, notify=lambda _line: None)
    try:
        asyncio.run(console.execute("/spawn agent Zed brain=llm team=red"))
        asyncio.run(console.execute("/spawn agent Ann brain=llm team=blue"))
        run_until(session, 60)
        brains = {row.agent.name: row.agent.brain for _eid, row in session.world.agents()}
        live_hash = session.world.state_hash()
        # resumed without the profile, its agent would think with its built-in brain
        left = unregistered(session.world, {}, ())
    finally:
        session.close()
    assert brains["Zed"] == "llm:fast" and brains["Ann"] == "llm"
    assert left == {"llm:fast": 1}
    # The choice is logged with the spawn: a replay under a configuration without
    # llm.model_for (or with another) rebuilds the same world.
    folder = tmp_path / "saves" / "w"
    other = config.replace(llm={"model_for": {"team": {"blue": "fast"}}})
    start = load_first_snapshot(SaveFolder.open(folder), other)
    result = replay(start.world, SaveFolder.open(folder))
    assert result.checks > 0  # a divergence raises
    names = {row.agent.name: row.agent.brain for _eid, row in start.world.agents()}
    replayed_hash = start.world.state_hash()
    start.world.close()
    assert replayed_hash == live_hash
    assert names["Zed"] == "llm:fast" and names["Ann"] == "llm"


def test_a_two_model_world_replays_with_no_server_running(
        tmp_path: Path, server: FakeLLMServer, fast: FakeLLMServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = two_models(tmp_path, server, fast)
    session = open_session(config)
    console = Console(session, notify=lambda _line: None)
    try:
        asyncio.run(console.execute("/spawn agent Zed brain=llm model=fast"))
        fast_agents = session.llm_models["fast"]
        run_until(session, 4000, lambda: fast_agents.metrics.applied >= 2
                  and session.world.tick >= 40)
    finally:
        session.close()
    server.stop()
    fast.stop()
    folder = tmp_path / "saves" / "w"
    start = load_first_snapshot(SaveFolder.open(folder), config)
    result = replay(start.world, SaveFolder.open(folder))
    assert result.checks > 0 and result.inputs >= 2
    start.world.close()
    monkeypatch.delenv(KEY_ENV)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config.to_dict()), encoding="utf-8")
    assert main(["replay", str(folder), "--config", str(config_file)]) == 0


# -- eval compares two models ------------------------------------------------------------------


def test_eval_compares_two_models_with_the_same_seeds(
        tmp_path: Path, server: FakeLLMServer, fast: FakeLLMServer) -> None:
    base = Config().replace(llm={
        "provider": "openai", "model": "model-a", "api_key_env": "",
        "base_url": server.base_url, "request_timeout_s": 3.0,
        "models": {"a": {"model": "model-a"},
                   "b": {"base_url": fast.base_url, "model": "model-b"}}})
    scenario = dataclasses.replace(load_scenario("survival"), ticks=150)
    result = evaluate(scenario, ["llm:a", "llm:b"], [1, 2], tmp_path / "out", workers=1,
                      base=base, progress=io.StringIO())
    assert not result.failed
    assert [(e.brain, e.seed) for e in result.episodes] == [
        ("llm:a", 1), ("llm:a", 2), ("llm:b", 1), ("llm:b", 2)]
    assert models_of(server) == {"model-a"} and models_of(fast) == {"model-b"}
    with pytest.raises(ConfigError):
        Config().replace(llm={"provider": "openai", "model": "m", "api_key_env": "",
                              "models": {"a": {"max_concurrent": -1,
                                               "base_url": "http://a:1/v1"}}})


# -- LLMBrain subclasses name their model ------------------------------------------------------

TALKERS = '''
from agent_world.agents import LLMBrain

class FastTalker(LLMBrain):
    model = "fast"

class LostTalker(LLMBrain):
    model = "lost"
'''


def test_an_llm_brain_names_its_model_and_an_unknown_one_stops_start_up(
        tmp_path: Path, server: FakeLLMServer, fast: FakeLLMServer) -> None:
    (tmp_path / "talkers.py").write_text(TALKERS, encoding="utf-8")
    config = two_models(tmp_path, server, fast).replace(
        brains={"path": str(tmp_path), "registered": {"talker": "talkers:FastTalker"}})
    classes = load_brains(config.brains, llm=True, models=config.llm.models)
    session = open_session(config, brains=classes)
    try:
        assert session.brains is not None
        llm = session.brains.llm_of(classes["talker"])
        assert llm is not None and llm.cfg.model == "fast-model"
        assert llm.complete("hello") and models_of(fast) == {"fast-model"}
        assert not server.requests
    finally:
        session.close()
    lost = config.replace(brains={"path": str(tmp_path),
                                  "registered": {"talker": "talkers:LostTalker"}})
    with pytest.raises(ConfigError, match=r"LostTalker.model is 'lost', not a model profile "
                       r"\(models: default, fast\)"):
        load_brains(lost.brains, llm=True, models=lost.llm.models)


def test_with_the_llm_off_profiles_are_kept_but_unused() -> None:
    """A replay or a branch runs with llm.provider none and the world's own llm.models and
    llm.model_for (which decide the brains of agents spawned with plain llm)."""
    cfg = Config().replace(llm={
        "provider": "openai", "model": "m", "api_key_env": "",
        "models": {"big": {"base_url": "http://a:1/v1"}},
        "model_for": {"team": {"red": "big"}}})
    off = cfg.replace(llm={"provider": "none"})
    assert llm_profiles(off.llm) == {} and off.llm.model_for == {"team": {"red": "big"}}
    assert off.llm.brain_for("trader", "red") == "llm:big"
