"""The schedule lets systems visit only agents with work this tick; the world must evolve
exactly as when every system visits every agent."""

from __future__ import annotations

from pathlib import Path

import orjson

from agent_world.config import Config
from agent_world.core.schedule import Row
from agent_world.core.world import World
from agent_world.eval.scenario import load_scenario
from agent_world.sandbox import Sandbox


class WholePasses:
    """The schedule's answers found the slow way, by visiting every agent (how the systems
    worked before it)."""

    def looks_due(self, world: World) -> list[int]:
        return [eid for eid, row in world.agents() if row[6].next_update <= world.tick]

    def look_at(self, eid: int, tick: int) -> None:
        pass

    def decided(self, world: World, doing: dict[str, list[Row]]) -> None:
        pass

    def doing(self, world: World, names: object) -> list[Row]:
        return world.agents()


def _hashes(world: World, ticks: int, every: int) -> list[str]:
    out = []
    for tick in range(1, ticks + 1):
        world.step()
        if tick % every == 0:
            out.append(world.state_hash())
    return out


def _compare(config: Config, ticks: int, exercised: tuple[str, ...], *,
             teams: dict[str, int] | None = None) -> None:
    with Sandbox(config) as sandbox:
        runs = []
        for whole in (False, True):
            world = World.create(config, seed=5)
            sandbox.install(world)  # built-in brains cast abilities too
            if whole:
                world.schedule = WholePasses()  # type: ignore[assignment]
            for team, count in (teams or {}).items():
                for i in range(count):
                    world.inbox.submit("spawn", {"kind": "agent", "name": f"{team}{i}",
                                                 "team": team}, source="test")
            runs.append(_hashes(world, ticks, 100))
            counters = dict(world.counters)
            world.close()
    scheduled, whole = runs
    first = next((i for i, (a, b) in enumerate(zip(scheduled, whole, strict=True))
                  if a != b), None)
    assert first is None, f"the scheduled world diverged by tick {(first or 0) * 100 + 100}"
    # The run exercised the systems that visit only some agents.
    for counter in exercised:
        assert counters.get(counter, 0) > 0, (counter, counters)


def test_a_world_with_fights_casting_and_trade_evolves_as_with_whole_passes(
        tmp_path: Path) -> None:
    config = Config().replace(world={"size": [96, 96], "starting_agents": 120},
                              paths={"saves": str(tmp_path / "saves"),
                                     "logs": str(tmp_path / "logs")})
    _compare(config, 1200, ("hits", "ability_casts", "trades", "thefts"))


def test_a_team_scenario_evolves_as_with_whole_passes(tmp_path: Path) -> None:
    scenario = load_scenario("team_capture")
    config = scenario.config(Config()).replace(
        paths={"saves": str(tmp_path / "saves"), "logs": str(tmp_path / "logs")})
    _compare(config, 800, ("hits", "captures"), teams={"red": 6, "blue": 6})


def test_a_loaded_world_finds_the_same_agents_due() -> None:
    """The schedule is derived: a world made from the saved state of another rebuilds it
    and goes on identically."""
    config = Config().replace(world={"size": [64, 64], "starting_agents": 60})
    world = World.create(config, seed=9)
    for _ in range(137):  # mid-way between refreshes of most agents
        world.step()
    copy = World.from_state(orjson.loads(world.state_bytes()), config)
    try:
        assert _hashes(world, 300, 50) == _hashes(copy, 300, 50)
    finally:
        world.close()
        copy.close()
