"""The figures an episode learns from its course (time to completion, recipe efficiency and
waste, coordination, win/loss) and the brains' episode hooks (issue 34 item 6): real
episodes on real worlds, each figure checked against what the ticks themselves showed (an
observer on the stage's loop), and a results file whose course figure was changed caught
by ``verify``."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.cli.verify import EXIT_MISMATCH, EXIT_OK
from agent_world.cli.verify import main as verify_main
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.items import ITEMS
from agent_world.eval import load_scenario
from agent_world.eval.course import team_results
from agent_world.eval.episode import run_episode
from agent_world.eval.runner import evaluate, write_results
from agent_world.eval.scenario import Scenario, ScenarioError
from agent_world.eval.stage import Stage
from agent_world.types import TickReport


class _Watch:
    """What every tick of the episode showed: its events, and a probe of the world after
    it (the moment the stage's course looks too)."""

    def __init__(self, stage: Stage, probe: Any = None) -> None:
        self.stage = stage
        self.probe = probe
        self.events: list[dict[str, Any]] = []
        self.seen: list[tuple[int, Any]] = []

    def on_tick(self, report: TickReport) -> None:
        self.events.extend(report.events)
        if self.probe is not None and self.stage.course is not None:
            self.seen.append((self.stage.world.tick, self.probe(self.stage)))


def _play(scenario: Scenario, tmp_path: Path, probe: Any = None,
          base: Config | None = None, brain: str = "builtin") -> tuple[Stage, _Watch]:
    stage = Stage(scenario, 1, tmp_path, name=f"{scenario.name}-1", brain=brain, base=base)
    watch = _Watch(stage, probe)
    stage.session.loop.observers.append(watch)
    stage.begin()
    stage.run()
    return stage, watch


def test_time_to_completion_is_when_a_subjects_figures_first_reach_the_target(
        tmp_path: Path) -> None:
    scenario = dataclasses.replace(load_scenario("foraging"), ticks=600,
                                   complete={"food_gathered": 2.0})
    stage, watch = _play(scenario, tmp_path, probe=lambda s: {
        eid: s.world.metrics.of(eid)["food_gathered"] for eid in s.play.subjects})
    try:
        start = 2  # the tick the cast has its goods
        done = 0
        for eid in stage.play.subjects:
            row = stage.figures(eid)
            first = next((tick for tick, food in watch.seen if food[eid] >= 2.0), None)
            assert row["completed"] == float(first is not None)
            assert row["ticks_to_complete"] == (stage.world.tick if first is None
                                                else first) - start
            done += first is not None
        assert done, "no subject gathered 2 food in 600 ticks: the case tests nothing"
    finally:
        stage.close()


def test_recipe_efficiency_and_waste_follow_the_crafts_and_what_is_left(
        tmp_path: Path) -> None:
    scenario = dataclasses.replace(load_scenario("crafting_chain"), ticks=900)
    raw = ("wood", "stone", "iron")
    stage, watch = _play(scenario, tmp_path, probe=lambda s: {
        eid: sum(ITEMS[k].value * s.world.store.get(eid, c.Inventory).items.get(k, 0)
                 for k in raw)
        for eid in s.play.ids.values() if s.world.alive(eid)})
    try:
        crafted = 0
        for eid in stage.play.subjects:
            crafts = [e for e in watch.events
                      if e.get("type") == ev.CRAFT and e.get("agent") == eid]
            made = sum(e["value"] for e in crafts)
            used = sum(ITEMS[k].value * n for e in crafts for k, n in e["inputs"].items())
            row = stage.figures(eid)
            assert row["recipe_efficiency"] == pytest.approx(made / used if used else 0.0)
            assert made == row["crafted_value"]
            held = [seen[eid] for _tick, seen in watch.seen if eid in seen]
            assert row["materials_wasted"] == pytest.approx(held[-1])
            crafted += bool(crafts)
        assert crafted, "no subject crafted in 900 ticks: the case tests nothing"
    finally:
        stage.close()


def test_coordination_is_the_share_of_living_ticks_at_a_point_with_a_teammate(
        tmp_path: Path) -> None:
    scenario = dataclasses.replace(load_scenario("team_capture"), ticks=400,
                                   team_eliminated=False)

    def together(s: Stage) -> dict[int, bool]:
        world, radius = s.world, s.world.rules.capture_radius
        where = {eid: world.store.get(eid, c.Position)
                 for eid in s.play.ids.values() if world.alive(eid)}
        out = {}
        for eid, pos in where.items():
            team = s.play.teams[eid]
            out[eid] = any(
                max(abs(pos.x - p.x), abs(pos.y - p.y)) <= radius
                and any(o != eid and s.play.teams[o] == team
                        and max(abs(q.x - p.x), abs(q.y - p.y)) <= radius
                        for o, q in where.items())
                for p in (world.store.get(point, c.Position)
                          for point in world.ground.capture_points))
        return out

    stage, watch = _play(scenario, tmp_path, probe=together)
    try:
        shares = []
        for eid in stage.play.ids.values():
            lived = [seen[eid] for _t, seen in watch.seen if eid in seen]
            expected = sum(lived) / len(lived) if lived else 0.0
            assert stage.figures(eid)["coordination"] == pytest.approx(expected)
            shares.append(expected)
        assert any(shares), "no team ever stood at a point together: the case tests nothing"
        teams = stage.teams()
        for team in ("red", "blue"):
            members = [e for e, t in stage.play.teams.items() if t == team]
            assert teams[team]["coordination"] == pytest.approx(
                sum(stage.figures(e)["coordination"] for e in members) / len(members))
        results = stage.results()
        assert sorted(results.values()) in ([0.0, 1.0], [0.5, 0.5])
        for eid, team in stage.play.teams.items():
            assert stage.figures(eid)["won"] == results[team] == teams[team]["won"]
    finally:
        stage.close()


@pytest.mark.parametrize(("alive", "held", "expected"), [
    ({"red": True, "blue": True}, {"red": 40, "blue": 10}, {"red": 1.0, "blue": 0.0}),
    ({"red": True, "blue": True}, {"red": 7, "blue": 7}, {"red": 0.5, "blue": 0.5}),
    ({"red": False, "blue": True}, {"red": 90}, {"red": 0.0, "blue": 1.0}),
    ({"red": False, "blue": False}, {"blue": 3}, {"red": 0.0, "blue": 1.0}),
    ({"red": True, "blue": True, "green": False}, {"green": 500},
     {"red": 0.5, "blue": 0.5, "green": 0.0}),
    ({"red": True}, {"red": 5}, {}),
])
def test_a_team_alive_beats_one_wiped_out_then_points_held_decide(
        alive: dict[str, bool], held: dict[str, int], expected: dict[str, float]) -> None:
    assert team_results(alive, held, alive) == expected


def test_course_figures_are_only_where_the_scenario_measures_them(tmp_path: Path) -> None:
    survival = dataclasses.replace(load_scenario("survival"), ticks=30)
    episode = run_episode(survival, "builtin", 1, tmp_path)
    assert not {"completed", "ticks_to_complete", "recipe_efficiency", "materials_wasted",
                "coordination", "won"} & set(episode.metrics)
    scenario = tmp_path / "s.yaml"
    for body, needs in (("score: {completed: 1}", "a 'complete' target"),
                        ("score: {won: 1}", "two teams or more"),
                        ("score: {recipe_efficiency: -1}", "game.recipes"),
                        ("complete: {food_gathered: 0}\nscore: {ticks_alive: 1}",
                         "complete.food_gathered must be a number above 0"),
                        ("complete: {walkd: 3}\nscore: {ticks_alive: 1}",
                         "complete: unknown metric 'walkd'")):
        scenario.write_text(f"name: s\n{body}\n")
        with pytest.raises(ScenarioError, match=needs):
            load_scenario(str(scenario))


def test_a_changed_course_figure_in_a_results_file_is_caught(tmp_path: Path) -> None:
    scenario = dataclasses.replace(load_scenario("foraging"), ticks=300,
                                   complete={"food_gathered": 1.0})
    out = tmp_path / "run"
    result = evaluate(scenario, ["builtin"], [1], out, workers=1, base=Config(),
                      progress=io.StringIO())
    write_results(result, out)
    path = out / "results.json"
    assert verify_main([str(path), "--quiet"]) == EXIT_OK
    doc = orjson.loads(path.read_bytes())
    assert "ticks_to_complete" in doc["episodes"][0]["metrics"]
    doc["episodes"][0]["metrics"]["ticks_to_complete"] -= 10
    path.write_bytes(orjson.dumps(doc))
    assert verify_main([str(path), "--quiet"]) == EXIT_MISMATCH


HOOKED = '''
import json, os
from agent_world.agents import SimpleBrain

class Hooked(SimpleBrain):
    """Writes every call it gets, in order, to a file of its agent's."""

    def _write(self, what, item=None):
        folder = os.environ["HOOKED_DIR"]
        with open(os.path.join(folder, f"{self.me}.jsonl"), "a") as f:
            f.write(json.dumps([what, item], default=str) + "\\n")

    def on_spawn(self, agent_id):
        self.me = agent_id

    def on_episode_start(self, episode):
        self._write("start", dict(episode))

    def on_episode_end(self, episode):
        self._write("end", dict(episode))

    def decide_action(self, ctx):
        self._write("decide", ctx.tick)
        return "wander"
'''


@pytest.mark.parametrize("in_process", [False, True], ids=["threads", "processes"])
def test_brains_hear_an_episode_begin_before_deciding_and_end_with_their_figures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_process: bool) -> None:
    brains = tmp_path / "brains"
    brains.mkdir()
    (brains / "hooked_brain.py").write_text(HOOKED)
    calls = tmp_path / "calls"
    calls.mkdir()
    monkeypatch.setenv("HOOKED_DIR", str(calls))
    base = Config().replace(brains={"registered": {"hooked": "hooked_brain:Hooked"},
                                    "path": str(brains),
                                    "processes": {"hooked": 1} if in_process else {}})
    scenario = dataclasses.replace(load_scenario("foraging"), ticks=120, subjects_dead=False)
    stage = Stage(scenario, 3, tmp_path / "run", name="hooked", brain="hooked", base=base)
    try:
        stage.begin()
        stage.run()
        figures = {eid: stage.figures(eid) for eid in stage.play.subjects}
        scores = {eid: stage.score_of(eid) for eid in stage.play.subjects}
        alive = {eid for eid in stage.play.subjects if stage.world.alive(eid)}
    finally:
        stage.close()  # the end hooks are delivered here; a process's before it stops
    assert alive
    for eid in stage.play.subjects:
        lines = [orjson.loads(x) for x in (calls / f"{eid}.jsonl").read_text().splitlines()]
        kinds = [kind for kind, _ in lines]
        assert kinds[0] == "start" and kinds.count("start") == 1 and "decide" in kinds
        start = lines[0][1]
        assert start["scenario"] == "foraging" and start["seed"] == 3
        assert start["agent"] == eid and start["subject"] is True and start["ticks"] == 120
        if eid in alive:
            assert kinds[-1] == "end" and kinds.count("end") == 1
            end = lines[-1][1]
            assert end["ended"] == "ticks" and end["tick"] == 120
            assert end["score"] == pytest.approx(scores[eid])
            assert end["figures"] == pytest.approx(figures[eid])
        else:
            assert "end" not in kinds
