"""Per-agent metrics: world state counted in ticks from the tick's own events and inputs,
saved and replayed with the world, shown by /top, /metrics and the API; off for worlds
saved before them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent_world.app import Session
from agent_world.commands import Console
from agent_world.config import Config
from agent_world.core import metrics as metrics_module
from agent_world.core.items import ITEMS
from agent_world.core.world import World
from agent_world.types import FakeClock, Input
from tests.helpers import add_agent, small_world
from tests.web_helpers import served

FOOD = {k for k, spec in ITEMS.items() if spec.category == "food"}


def test_the_figures_agree_with_the_events_they_count() -> None:
    world = World.create(Config(), seed=8)
    food = eaten = deaths = offers = second_hand = 0
    for _ in range(2000):
        for event in world.step().events:
            kind = event["type"]
            if kind == "pickup" and event["item"] in FOOD:
                # Units carried before are picked up again, not gathered.
                second_hand += event.get("second_hand", 0)
                food += event["qty"] - event.get("second_hand", 0)
            elif kind == "harvest" and event["item"] in FOOD:
                food += 1
            elif kind == "eat":
                eaten += 1
            elif kind == "death":
                deaths += 1
            elif kind == "trade_offer":
                offers += 1
    totals = world.metrics.by("brain")["builtin"]
    assert totals["food_gathered"] == food > 0
    assert second_hand > 0  # dropped goods were picked up again, and not counted
    assert totals["eaten"] == eaten and totals["deaths"] == deaths
    assert totals["trades_offered"] == offers
    assert totals["walked"] > 0
    world.close()


def test_metrics_are_state_they_save_load_and_hash_with_the_world() -> None:
    world = World.create(Config(), seed=9)
    for _ in range(500):
        world.step()
    state = json.loads(world.state_bytes())
    assert "metrics" in state
    copy = World.from_state(state)
    assert copy.state_hash() == world.state_hash()
    assert copy.metrics.rows == world.metrics.rows
    for _ in range(300):  # and they go on exactly alike
        world.step()
        copy.step()
    assert copy.state_hash() == world.state_hash()
    world.close()
    copy.close()


def test_decisions_faults_latency_and_tokens_come_from_inputs() -> None:
    world = small_world(4)
    me = add_agent(world, "Brin", 5, 5)
    for seq, (latency, source) in enumerate([(120, "llm"), (800, "llm"), (40, "brain"),
                                             (5, "console")]):
        world.step([Input(tick=world.tick + 1, seq=seq, type="plan", source=source, data={
            "agent": me, "source": source, "actions": [{"name": "idle", "args": {}}],
            "latency_ms": latency,
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "cost": 0.001}})])
    world.step([Input(tick=world.tick + 1, seq=9, type="decision_fault", source="llm",
                      data={"agent": me, "kind": "timeout", "source": "llm"})])
    figures = world.metrics.of(me)
    assert figures["decisions"] == 3  # the console's plan is no decision of a brain
    assert figures["decision_faults"] == 1
    assert figures["tokens"] == 3 * 120 and figures["cost"] == pytest.approx(0.003)
    assert figures["latency_p50"] == 200 and figures["latency_p95"] == 1000
    world.close()


def test_worlds_saved_before_metrics_run_without_them() -> None:
    world = World.create(Config().replace(game={"agent_metrics": False}), seed=3)
    for _ in range(300):
        world.step()
    assert world.metrics.is_empty() and "metrics" not in json.loads(world.state_bytes())
    world.close()


def test_dead_agents_keep_their_figures_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_module, "MAX_DEAD", 2)
    world = small_world(5)
    agents = [add_agent(world, f"Ag{i}", 3 + i, 5) for i in range(4)]
    world.step()
    for seq, eid in enumerate(agents):
        world.step([Input(tick=world.tick + 1, seq=100 + seq, type="kill", source="console",
                          data={"target": eid})])
    kept = [eid for eid in agents if eid in world.metrics.rows]
    assert world.metrics.dead == kept == agents[-2:]  # the two latest deaths
    assert all(world.metrics.of(eid)["deaths"] == 1 for eid in kept)
    world.close()


def test_top_and_metrics_at_the_console(tmp_path: Path) -> None:
    config = Config().replace(persistence={"enabled": False}, log={"echo": False},
                              paths={"logs": str(tmp_path)})
    session = Session(config, World.create(config, seed=3), clock=FakeClock())
    for _ in range(1500):
        session.loop.tick_once()
    console = Console(session)

    def run(line: str) -> list[str]:
        return asyncio.run(console.execute(line))

    try:
        assert run("/top")[0] == "metrics (/top METRIC [N]):"
        lines = run("/top walked 3")
        assert lines[0].startswith("top 3 by walked") and len(lines) == 5
        best = session.world.metrics.top("walked", 1)[0]
        assert f"#{best[0]}" in lines[2]
        assert run("/top wlaked")[0].startswith("error: unknown metric 'wlaked'")
        assert "did you mean 'walked'" in run("/top wlaked")[0]
        # 'gold' is what a reader of the metrics' descriptions tries (issue 29).
        assert run("/top gold 3") == [
            "error: unknown metric 'gold' (/top lists them); the metrics with 'gold' in their "
            "name: gold_earned, gold_spent (usage: /top [METRIC] [N])"]
        assert run("/metrics")[0].startswith("metrics by brain")
        mine = run(f"/metrics {best[0]}")
        assert any(line.split()[:2] == ["walked", f"{best[1]:,.0f}"] for line in mine)
    finally:
        console.close()
        session.close()


def test_the_api_serves_the_metrics(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path) as s:
            await s.step(300)
            body = await s.get("/api/agent_metrics?sort=walked&limit=3")
            assert body["enabled"] and body["sort"] == "walked" and len(body["agents"]) == 3
            walked = [a["walked"] for a in body["agents"]]
            assert walked == sorted(walked, reverse=True) and walked[0] > 0
            assert "builtin" in body["by_brain"] and "food_gathered" in body["metrics"]
            await s.get("/api/agent_metrics?sort=nonsense", status=400)

    asyncio.run(go())
