"""The built-in scenarios, each on the world mechanics it needs: foraging among hazards, a
crafting chain, team capture (teams with their own brains, a team-eliminated end, per-team
results), market and survival; an objective that ends an episode once met; and bad team
scenarios stopped before anything runs."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from agent_world.cli.replay import run_replay
from agent_world.config import Config
from agent_world.eval import ScenarioError, built_in_names, load_scenario, run_episode

MAIN = Path(__file__).resolve().parent.parent / "main.py"


def test_all_five_scenarios_are_built_in_with_the_mechanics_they_need() -> None:
    assert set(built_in_names()) == {"foraging", "crafting_chain", "team_capture", "market",
                                     "survival"}
    foraging = load_scenario("foraging")
    assert foraging.world["hazard_tiles_per_1000_tiles"] > 0
    assert foraging.score == {"food_gathered": 1.0, "damage_taken": -0.5}
    crafting = load_scenario("crafting_chain")
    assert set(crafting.game["recipes"]) == {"club", "spear", "sword"}
    assert crafting.score == {"crafted_value": 1.0}
    capture = load_scenario("team_capture")
    assert capture.world["capture_points"] == 3 and capture.team_eliminated
    assert {name: g.brain for name, g in capture.teams.items()} == {"red": "subject",
                                                                   "blue": "builtin"}
    assert capture.subjects is capture.teams["red"] and capture.other_brains() == ["builtin"]


@pytest.mark.parametrize(("name", "metric"), [
    ("foraging", "hazard_damage"), ("crafting_chain", "crafted_value"),
    ("team_capture", "team_held")])
def test_each_scenario_runs_its_mechanics_and_replays(tmp_path: Path, name: str,
                                                      metric: str) -> None:
    scenario = dataclasses.replace(load_scenario(name), ticks=1500)
    first = run_episode(scenario, "builtin", 2, tmp_path / "a")
    again = run_episode(scenario, "builtin", 2, tmp_path / "b")
    assert (first.score, first.metrics, first.teams) == (again.score, again.metrics,
                                                         again.teams)
    assert metric in first.metrics
    assert run_replay(Path(first.folder), Config(), to=None, playback=None) == 0


def test_the_crafting_chain_is_scored_by_value_crafted(tmp_path: Path) -> None:
    scenario = dataclasses.replace(load_scenario("crafting_chain"), ticks=1500)
    episode = run_episode(scenario, "builtin", 1, tmp_path)
    assert episode.metrics["crafted"] > 0
    assert episode.score == pytest.approx(episode.metrics["crafted_value"])


def test_team_capture_reports_each_team_and_scores_the_held_point_ticks(tmp_path: Path
                                                                        ) -> None:
    scenario = dataclasses.replace(load_scenario("team_capture"), ticks=1500)
    episode = run_episode(scenario, "builtin", 3, tmp_path)
    assert set(episode.teams) == {"red", "blue"}
    red = episode.teams["red"]
    assert red["agents"] == 5 and episode.subjects == 5
    assert episode.score == pytest.approx(red["held"])
    assert red["held"] + episode.teams["blue"]["held"] > 0


def test_an_episode_ends_once_its_objective_is_met(tmp_path: Path) -> None:
    path = tmp_path / "quick.yaml"
    path.write_text("name: quick\nsubjects: {count: 2}\n"
                    "end: {ticks: 3000, score_at_least: 25}\nscore: {ticks_alive: 1.0}\n")
    episode = run_episode(load_scenario(str(path)), "builtin", 1, tmp_path / "out")
    assert episode.ticks == 30 and episode.score >= 25


def test_an_episode_ends_when_a_team_is_eliminated(tmp_path: Path) -> None:
    path = tmp_path / "duel.yaml"
    path.write_text("name: duel\nworld: {size: [16, 16], starting_agents: 0, capture_points: 1,"
                    " immigration_interval_ticks: 0}\n"
                    "game: {combat_damage_multiplier: 8.0}\n"
                    "teams:\n  red: {count: 3, brain: subject, personality: aggressive}\n"
                    "  blue: {count: 1, brain: builtin, personality: cautious}\n"
                    "end: {ticks: 5000, team_eliminated: true}\nscore: {kills: 1.0}\n")
    episode = run_episode(load_scenario(str(path)), "builtin", 1, tmp_path / "out")
    assert episode.ticks < 5000
    assert min(team["alive"] for team in episode.teams.values()) == 0


@pytest.mark.parametrize(("text", "message"), [
    ("subjects: {count: 2}\nteams: {red: {count: 1}}\n", "give 'subjects' or 'teams'"),
    ("teams: {red: {count: 1, brain: builtin}}\n", "no team plays the brain under test"),
    ("teams: {Red Team: {count: 1}}\n", "team name 'Red Team'"),
    ("teams: {red: {count: 1, colour: blue}}\n", "'teams.red' takes"),
    ("teams: {red: {count: 1}}\nend: {team_eliminated: true}\n", "needs two or more teams"),
    ("subjects: {count: 1}\nscore: {team_held: 1}\n", "score.team_held needs teams"),
    ("game: {recipes: {club: 'wod*2'}}\n", "input 'wod' is not an item kind"),
    ("end: {score_at_least: lots}\n", "end.score_at_least must be a number"),
    ("end: {when: never}\n", "'end' takes ticks, subjects_dead, team_eliminated"),
])
def test_a_bad_team_or_end_is_one_line_naming_it(tmp_path: Path, text: str,
                                                 message: str) -> None:
    path = tmp_path / "bad.yaml"
    body = text if "score:" in text else text + "score: {walked: 1}\n"
    path.write_text("name: bad\n" + body)
    with pytest.raises(ScenarioError, match=message) as caught:
        load_scenario(str(path))
    assert "\n" not in str(caught.value)


def test_an_unknown_team_brain_is_refused_before_any_episode(tmp_path: Path) -> None:
    path = tmp_path / "ghosts.yaml"
    path.write_text("name: ghosts\nteams:\n  red: {count: 1, brain: subject}\n"
                    "  blue: {count: 1, brain: ghost}\nscore: {ticks_alive: 1}\n")
    done = subprocess.run([sys.executable, str(MAIN), "eval", str(path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2
    assert "a team's brain: unknown brain 'ghost'" in done.stderr
    assert done.stderr.count("\n") == 1 and not (tmp_path / "runs").exists()
