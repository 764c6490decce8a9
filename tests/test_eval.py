"""Evaluation: scenarios from YAML, episodes that are the same for the same seed and replay
from their save folders, brains compared over seeds in worker processes with confidence
intervals, a failed episode tried again, and bad input stopped before anything runs."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from agent_world.cli.eval import parse_seeds
from agent_world.cli.replay import run_replay
from agent_world.config import Config
from agent_world.eval import ScenarioError, built_in_names, load_scenario, run_episode
from agent_world.eval.runner import confidence, evaluate, write_results

MAIN = Path(__file__).resolve().parent.parent / "main.py"

BRAIN = '''
from agent_world.agents import Decision, SimpleBrain

class Eater(SimpleBrain):
    def decide_action(self, ctx):
        return "eat" if ctx.me.hunger > 30 and ctx.me.items else "wander"
'''


def short(name: str, ticks: int = 300) -> object:
    return dataclasses.replace(load_scenario(name), ticks=ticks)


def test_the_built_in_scenarios_load_and_say_how_they_score() -> None:
    assert {"survival", "market"} <= set(built_in_names())
    market = load_scenario("market")
    assert market.subjects.personality == "trader" and market.score == {"wealth_gained": 1.0}
    assert market.describe_score() == "1 x wealth_gained"


@pytest.mark.parametrize(("text", "message"), [
    ("name: x\nscore: {walked: 1}\nfoo: 1\n", "unknown key 'foo'"),
    ("name: x\nscore: {happiness: 1}\n", "unknown metric 'happiness'"),
    ("name: x\nscore: {walked: 1}\nsubjects: {personality: grumpy}\n", "grumpy"),
    ("name: x\nscore: {walked: 1}\nworld: {tick_rate: fast}\n", "world.tick_rate"),
    ("name: x\nscore: {walked: 1}\nsubjects: {goods: {gems: 2}}\n", "subjects.goods.gems"),
    ("name: x\n", "'score' must map metrics to weights"),
    ("[1, 2]\n", "expected a mapping"),
])
def test_a_bad_scenario_is_one_line_naming_what_is_wrong(tmp_path: Path, text: str,
                                                         message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=message) as caught:
        load_scenario(str(path))
    assert "\n" not in str(caught.value)
    with pytest.raises(ScenarioError, match="unknown scenario 'nowhere'"):
        load_scenario("nowhere")


def test_seeds_and_confidence_intervals() -> None:
    assert parse_seeds("1-3,10,2") == [1, 2, 3, 10]
    for bad in ("5-1", "x", "1-b", "-3"):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seeds(bad)
    mean, half = confidence([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.303 / math.sqrt(3))
    assert confidence([5.0]) == (5.0, 0.0) and confidence([]) == (0.0, 0.0)


def test_an_episode_is_the_same_for_the_same_seed_and_replays(tmp_path: Path) -> None:
    scenario = short("market")
    first = run_episode(scenario, "builtin", 3, tmp_path / "a")
    again = run_episode(scenario, "builtin", 3, tmp_path / "b")
    other = run_episode(scenario, "builtin", 4, tmp_path / "c")
    assert (first.score, first.metrics) == (again.score, again.metrics)
    assert first.metrics != other.metrics
    assert first.subjects == 6 and first.ticks == 300
    assert run_replay(Path(first.folder), Config(), to=None, playback=None) == 0


def test_brains_are_compared_over_seeds_in_worker_processes(tmp_path: Path) -> None:
    brains_dir = tmp_path / "brains"
    brains_dir.mkdir()
    (brains_dir / "ev_brains.py").write_text(BRAIN)
    base = Config().replace(brains={"registered": {"eater": "ev_brains:Eater"},
                                    "path": str(brains_dir), "deadline_ms": 2000})
    # The first episode of builtin seed 1 finds its folder taken: it fails, and is tried
    # once more (elsewhere) without losing the others.
    (tmp_path / "out" / "saves" / "survival-builtin-1").mkdir(parents=True)
    logged: list[str] = []
    result = evaluate(short("survival"), ["builtin", "eater"], [1, 2], tmp_path / "out",
                      workers=2, base=base, progress=io.StringIO(), log=logged.append)
    assert not result.failed and len(result.episodes) == 4
    assert any("trying it once more" in line for line in logged)
    eater = [e for e in result.episodes if e.brain == "eater"]
    assert all(e.metrics["decisions"] > 0 for e in eater)  # the user's brain decided
    lines = write_results(result, tmp_path / "out")
    assert lines[0] == "# survival: 2 brains x 2 seeds"
    assert any(line.startswith("| eater | 2 | ") for line in lines)
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [s["brain"] for s in doc["summary"]] == ["builtin", "eater"]
    csv_rows = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert len(csv_rows) == 5 and csv_rows[0].startswith("scenario,brain,seed")
    # The same seeds, the same results.
    again = evaluate(short("survival"), ["eater"], [1, 2], tmp_path / "again", workers=1,
                     base=base, progress=io.StringIO())
    assert [e.score for e in again.episodes] == [e.score for e in eater]


def test_the_command_line_checks_everything_before_it_starts(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(MAIN), "eval", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, check=False)

    for args, message in ((("nowhere",), "unknown scenario 'nowhere'"),
                          (("survival", "--brains", "builtin,ghost"), "unknown brain 'ghost'"),
                          (("survival", "--brains", "llm"), "llm needs an LLM"),
                          (("survival", "--seeds", "9-1"), "--seeds '9-1'")):
        done = run(*args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
        assert not (tmp_path / "runs").exists()  # nothing written
    done = run("survival", "--seeds", "1-2", "--ticks", "200", "--workers", "2", "--out",
               "res")
    assert done.returncode == 0, done.stderr
    assert "| builtin | 2 | 199.00 ± 0.00 |" in done.stdout
    assert (tmp_path / "res" / "results.md").exists()
    assert sorted(p.name for p in (tmp_path / "res" / "saves").iterdir()) == [
        "survival-builtin-1", "survival-builtin-2"]


def test_in_an_episode_a_deadline_only_stops_a_brain_that_hangs(tmp_path: Path) -> None:
    """A deadline too short for any sandbox call would fault every policy decision in a
    live world; an episode waits for its decisions, so it gives the brain time and scores
    it as if the machine were quiet."""
    scenario = short("foraging", ticks=200)
    hurried = Config().replace(brains={"deadline_ms": 1})
    rushed = run_episode(scenario, "policy:forager", 5, tmp_path / "a", base=hurried)
    calm = run_episode(scenario, "policy:forager", 5, tmp_path / "b")
    assert rushed.metrics["decisions"] > 0 and rushed.metrics["decision_faults"] == 0
    def timeless(metrics: dict[str, float]) -> dict[str, float]:
        return {k: v for k, v in metrics.items() if not k.startswith("latency_")}

    assert (rushed.score, timeless(rushed.metrics)) == (calm.score, timeless(calm.metrics))
