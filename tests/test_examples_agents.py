"""The example agents of examples/agents/, one per tier, run as the README starts them: their
own configuration files, registered by name, playing in a real world (the reflective one
against a real HTTP server standing in for the LLM)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_world.agents import observe
from agent_world.app import Session
from agent_world.cli import program as cli
from agent_world.config import Config, load_config
from agent_world.eval import load_scenario, run_episode
from agent_world.persistence import open_world
from agent_world.userbrains.registry import load_brains
from tests.helpers import add_agent, small_world
from tests.llm_helpers import KEY, KEY_ENV
from tests.llm_server import FakeLLMServer, fake_llm_server
from tests.persistence_helpers import records

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "agents"


def example_config(tmp_path: Path, name: str, **changes: Any) -> Config:
    config = load_config(EXAMPLES / f"{name}.yaml")
    return config.replace(
        world={"size": [32, 32], "starting_agents": 8},
        paths={"saves": str(tmp_path / "saves"), "logs": str(tmp_path / "logs")},
        brains={"path": str(EXAMPLES)}, log={"echo": False},
        **changes)


def open_session(config: Config) -> Session:
    opened = open_world(config)
    return Session(config, opened.world, folder=opened.folder,
                   brains=load_brains(config.brains, llm=config.llm.enabled))


def run(session: Session, ticks: int, until: Callable[[], bool], wall_s: float = 30.0) -> None:
    began = time.monotonic()

    async def drive() -> None:
        for _ in range(ticks):
            await session.loop.run(max_ticks=1, paced=False)
            if until() or time.monotonic() - began > wall_s:
                return
            await asyncio.sleep(0.001)  # room for the worker threads

    asyncio.run(drive())


def brain_plans(config: Config, brain: str) -> list[dict[str, Any]]:
    folder = Path(config.paths.saves) / config.world.name
    return [r["data"] for r in records(folder) if r.get("kind") == "input"
            and r.get("type") == "plan" and r["data"].get("brain") == brain]


@pytest.fixture(autouse=True)
def forget_example_modules() -> Iterator[None]:
    yield
    for name in ("forager", "trader", "reflective", "keeper"):
        sys.modules.pop(name, None)


def test_the_forager_gathers_and_eats_by_naming_actions(tmp_path: Path) -> None:
    config = example_config(tmp_path, "forager")
    assert config.brains.mix == {"forager": 0.5}
    session = open_session(config)
    brains = session.brains
    assert brains is not None and len(brains.minds) == 4  # half of the starting agents
    try:
        run(session, 3000, lambda: brains.metrics.applied >= 30)
        assert brains.metrics.applied >= 30 and not brains.faults
    finally:
        session.close()
    actions = {a["name"] for plan in brain_plans(config, "forager") for a in plan["actions"]}
    assert actions & {"pickup", "use", "eat"}, actions  # it forages, not only wanders


@pytest.mark.parametrize("everything", [False, True])
def test_the_world_log_sums_up_decisions_a_minute_at_a_time(tmp_path: Path,
                                                             everything: bool) -> None:
    # Issue 29: the example brains wrote a "decides:" line per decision (78 in the first
    # seconds). Now one line a minute of world time (600 ticks) sums them up; each one is
    # logged only with log.everything. The event log keeps every decision either way.
    config = example_config(tmp_path, "forager").replace(log={"everything": everything})
    session = open_session(config)
    brains = session.brains
    assert brains is not None
    try:
        run(session, 1300, lambda: session.world.tick >= 1300, wall_s=120.0)
        ticks = session.world.tick
    finally:
        session.close()
    decided = len(brain_plans(config, "forager"))
    assert decided > 30
    log = (tmp_path / "logs" / "world.log").read_text(encoding="utf-8").splitlines()
    each = [line for line in log if " decides: " in line]
    digests = [re.search(r"brain +(\d+) decisions? by (\d+) agents? in ticks (\d+)\.\.(\d+): ",
                         line) for line in log]
    found = [m for m in digests if m is not None]
    assert len(each) == (decided if everything else 0)
    # Minutes 1..600 and 601..1200, then the rest when the brains stopped with the world.
    assert [(int(m.group(3)), int(m.group(4))) for m in found] == [
        (1, 600), (601, 1200), (1201, ticks)]
    assert sum(int(m.group(1)) for m in found) == decided
    assert all(int(m.group(2)) <= 4 for m in found)  # the example's four forager agents


def test_the_forager_never_drops_food_to_pick_it_up_again(tmp_path: Path) -> None:
    # It used to say "use" beside rocks (the nearest object with stock), fill its pack with
    # stone and iron, and between its decisions its built-in brain dropped food to lighten
    # it, which the forager picked up again: thousands of pickups an episode in foraging.
    config = load_config(EXAMPLES / "forager.yaml").replace(brains={"path": str(EXAMPLES)})
    scenario = dataclasses.replace(load_scenario("foraging"), ticks=1500)
    episode = run_episode(scenario, "forager", 1, tmp_path, base=config)
    log = records(Path(episode.folder))
    subjects = {r["agent"] for r in log if r.get("type") == "spawn"
                and r.get("brain") == "forager"}
    mine = [r for r in log if r.get("agent") in subjects and r.get("kind") == "event"]
    picked = sum(r["qty"] for r in mine if r["type"] == "pickup")
    assert len(subjects) == 6 and picked > 0
    assert [r for r in mine if r["type"] == "drop"] == []
    assert sum(r.get("second_hand", 0) for r in mine if r["type"] == "pickup") == 0
    assert 0 < episode.metrics["food_gathered"] < 30  # what gathering gets, no more


def test_the_keeper_remembers_where_it_found_food_after_a_restart(tmp_path: Path) -> None:
    config = example_config(tmp_path, "keeper")
    session = open_session(config)
    brains = session.brains
    assert brains is not None

    def remembering() -> dict[int, list[list[int]]]:
        return {eid: list(b.places) for eid, b in list(brains._brains.items()) if b.places}

    try:
        run(session, 3000, lambda: bool(remembering()))
        assert remembering(), "no keeper found food"
    finally:
        session.close()
    saved = {eid: b.places for eid, b in brains._brains.items() if b.places}
    again = open_session(config)
    try:
        restored = again.brains
        assert restored is not None
        run(again, 3000, lambda: all(eid in restored._brains for eid in saved))
        for eid, places in saved.items():  # what it knew before (it may forget one since)
            known = {tuple(p) for p in restored._brains[eid].places}
            assert len(known & {tuple(p) for p in places}) >= len(places) - 1, (eid, places)
    finally:
        again.close()


def test_the_trader_offers_goods_and_holds_grudges(tmp_path: Path) -> None:
    config = example_config(tmp_path, "trader")
    session = open_session(config)
    brains = session.brains
    assert brains is not None
    for eid in list(brains.minds):  # goods to sell
        session.world.inbox.submit("give", {"target": eid, "item": "berries", "qty": 8},
                                   source="console")
    try:
        run(session, 4000, lambda: any(
            a["name"] == "trade_offer" for p in brain_plans(config, "trader")
            for a in p["actions"]))
    finally:
        session.close()
    offers = [a for p in brain_plans(config, "trader") for a in p["actions"]
              if a["name"] == "trade_offer"]
    assert offers and all(set(a["args"]) == {"target", "give", "want"} for a in offers)

    # The grudge: an offer from an agent that attacked it is declined whatever it gives.
    trader_module = sys.modules["trader"]
    world = small_world(3)
    me = add_agent(world, "Tess", 5, 5)
    other = add_agent(world, "Brute", 6, 5)
    world.step()
    brain = trader_module.Trader()
    brain.on_spawn(me)
    brain.on_event({"type": "attack", "agent": other, "target": me})
    assert brain.grudges == {other}
    world.close()


def test_the_reflective_agent_recalls_reflects_and_shows_its_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    server: FakeLLMServer
    with fake_llm_server() as server:
        config = example_config(
            tmp_path, "reflective",
            llm={"base_url": server.base_url, "model": "test-model", "api_key_env": KEY_ENV,
                 "request_timeout_s": 3.0})
        session = open_session(config)
        brains = session.brains
        assert brains is not None and brains.llm is not None
        reflective = sys.modules["reflective"].Reflective
        monkeypatch.setattr(reflective, "reflect_every_ticks", 20)
        def reflected() -> list[Any]:
            return [b for b in list(brains._brains.values())
                    if any(m.kind == "reflection" for m in b.memory.entries())]

        try:
            run(session, 3000, lambda: bool(reflected()))
            brain = reflected()[0]
            kinds = {m.kind for m in brain.memory.entries()}
            assert {"decision", "reflection"} <= kinds, kinds
            debug = "\n".join(brains.describe_entity(brain.agent_id))
            assert "reasoning trace" in debug and "recalled" in debug, debug
            assert session.llm is not None and session.llm.budget.left()
            assert brains.metrics.applied >= 2 and not brains.faults
        finally:
            session.close()
        prompts = [r for r in server.requests if r["path"].endswith("/chat/completions")]
        assert any("What you remember" in str(r) for r in prompts)
        assert any("learned" in str(r) for r in prompts)  # the reflection's question
    plans = brain_plans(config, "reflective")
    assert plans and all(p["trace"] for p in plans)


def test_the_banner_counts_the_agents_on_llm_brains_and_their_cost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The reflective example's banner said "0 LLM agents, ~$0.00/hour" while its agents
    # called the model: an LLMBrain's agents ask the LLM too.
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as server:
        config = example_config(
            tmp_path, "reflective",
            llm={"base_url": server.base_url, "model": "gpt-4o-mini", "api_key_env": KEY_ENV})
        opened = open_world(config)
        session = Session(config, opened.world, folder=opened.folder,
                          brains=load_brains(config.brains, llm=config.llm.enabled))
        try:
            lines = cli._banner(session, opened).splitlines()
        finally:
            session.close()
    (llm,) = [line for line in lines if line.startswith("  LLM: ")]
    assert llm.endswith(", 0 LLM agents, 2 agents on LLM brain reflective"), llm
    (cost,) = [line for line in lines if line.startswith("  LLM cost: ")]
    # 2 agents x (a decision every brains.think_interval_ticks (50) and a reflection every
    # 300 ticks) at 10 Hz: 720 + 120 calls an hour each.
    assert "2 agents on LLM brain reflective x ~840 calls/hour" in cost, cost
    assert "$0.00/hour" not in cost and "llm.tokens_per_hour" in cost, cost


def test_an_llm_brain_without_an_llm_stops_start_up_naming_it(tmp_path: Path) -> None:
    config = example_config(tmp_path, "reflective", llm={"provider": "none"})
    with pytest.raises(Exception, match=r"brains\.reflective .*needs an LLM"):
        load_brains(config.brains, llm=config.llm.enabled)


def test_observations_reach_the_examples_as_the_api_documents(tmp_path: Path) -> None:
    world = small_world(9)
    me = add_agent(world, "Fay", 5, 5)
    world.spawn_item("apple", 1, 6, 5)
    for _ in range(6):
        world.step()
    sys.path.insert(0, str(EXAMPLES))
    try:
        import forager  # the example, as a user's module
    finally:
        sys.path.remove(str(EXAMPLES))
    assert forager.Forager().decide(observe(world, me), {}).action in ("pickup", "use",
                                                                       "wander")
    world.close()
