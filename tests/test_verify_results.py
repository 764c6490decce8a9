"""Verifiable results: every episode an evaluation records carries its final state hash and
its event log's digest, and ``python main.py verify RESULTS.json`` replays each from its
save folder, with no brain code, and checks every recorded figure (issue 34 item 3)."""

from __future__ import annotations

import dataclasses
import gzip
import io
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agent_world.cli.verify import EXIT_MISMATCH, EXIT_OK, EXIT_USAGE
from agent_world.cli.verify import main as verify_main
from agent_world.config import Config
from agent_world.eval import load_scenario
from agent_world.eval.runner import evaluate, write_results

MAIN = Path(__file__).resolve().parent.parent / "main.py"

BRAIN = '''
from agent_world.agents import SimpleBrain

class Charger(SimpleBrain):
    def decide_action(self, ctx):
        return "attack" if ctx.agents else "wander"
'''


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A team-capture evaluation of the built-in brains and a user's brain, two seeds each,
    whose brain module is gone afterwards: what a reader of a published result has."""
    root = tmp_path_factory.mktemp("published")
    brains = root / "brains"
    brains.mkdir()
    (brains / "vr_brains.py").write_text(BRAIN)
    base = Config().replace(brains={"registered": {"charger": "vr_brains:Charger"},
                                    "path": str(brains), "deadline_ms": 2000})
    scenario = dataclasses.replace(load_scenario("team_capture"), ticks=250)
    out = root / "run"
    result = evaluate(scenario, ["builtin", "charger"], [1, 2], out, workers=2, base=base,
                      progress=io.StringIO())
    assert not result.failed and len(result.episodes) == 4
    write_results(result, out)
    shutil.rmtree(brains)
    return out


def _copy(published: Path, tmp_path: Path) -> Path:
    """The run as someone else received it: moved to another folder."""
    moved = tmp_path / "received"
    shutil.copytree(published, moved)
    return moved / "results.json"


def _verify(results: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = verify_main([str(results), "--quiet"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_each_episode_records_its_final_state_and_log(published: Path) -> None:
    doc = orjson.loads((published / "results.json").read_bytes())
    for episode in doc["episodes"]:
        assert len(episode["state_hash"]) == 32 and len(episode["log_digest"]) == 32
        assert Path(episode["folder"]).is_dir()
    assert doc["scenario"]["definition"]["teams"]["red"]["brain"] == "subject"


def test_a_published_result_verifies_from_its_folders_alone(published: Path) -> None:
    """As its reader runs it: the command line, on the run moved elsewhere, with neither
    the brain's code nor the scenario's file."""
    done = subprocess.run([sys.executable, str(MAIN), "verify", str(published /
                                                                      "results.json")],
                          capture_output=True, text=True, timeout=300, check=False,
                          stdin=subprocess.DEVNULL, cwd=published.parent)
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == ["  ok: episode builtin seed 1 (250 ticks)",
                         "  ok: episode builtin seed 2 (250 ticks)",
                         "  ok: episode charger seed 1 (250 ticks)",
                         "  ok: episode charger seed 2 (250 ticks)"]
    assert lines[4].startswith("OK: 4 episodes replayed from their logs; every recorded "
                               "score and metric matches")


def test_a_moved_run_is_found_beside_its_results(published: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    results = _copy(published, tmp_path)
    doc = orjson.loads(results.read_bytes())
    for episode in doc["episodes"]:
        episode["folder"] = str(tmp_path / "elsewhere" / Path(episode["folder"]).name)
    results.write_bytes(orjson.dumps(doc))
    code, out, _err = _verify(results, capsys)
    assert code == EXIT_OK, out


def test_one_changed_byte_of_a_log_is_caught(published: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    results = _copy(published, tmp_path)
    episode = orjson.loads(results.read_bytes())["episodes"][2]
    folder = results.parent / "saves" / Path(episode["folder"]).name
    chunk = sorted((folder / "events").iterdir())[0]
    zipped = chunk.suffix == ".gz"
    text = gzip.decompress(chunk.read_bytes()) if zipped else chunk.read_bytes()
    at = text.index(b'"qty":') + len(b'"qty":')  # a quantity given at the start: 2 -> 3
    text = text[:at] + bytes([text[at] + 1]) + text[at + 1:]
    chunk.write_bytes(gzip.compress(text) if zipped else text)
    code, out, _err = _verify(results, capsys)
    assert code == EXIT_MISMATCH
    assert out.startswith("MISMATCH: episode charger seed 1: event log digest: recorded ")


def test_a_figure_the_replay_does_not_give_is_named(published: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    results = _copy(published, tmp_path)
    doc = orjson.loads(results.read_bytes())
    true = doc["episodes"][1]["metrics"]["kills"]
    doc["episodes"][1]["metrics"]["kills"] = true + 1.0
    results.write_bytes(orjson.dumps(doc))
    code, out, _err = _verify(results, capsys)
    assert code == EXIT_MISMATCH
    assert out == (f"MISMATCH: episode builtin seed 2: metric kills: recorded "
                   f"{true + 1.0!r}, replayed {true!r}\n")


def test_what_cannot_be_checked_is_one_line_and_exit_2(published: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    results = _copy(published, tmp_path)
    episode = orjson.loads(results.read_bytes())["episodes"][0]
    name = Path(episode["folder"]).name
    shutil.rmtree(results.parent / "saves" / name)
    moved = orjson.loads(results.read_bytes())
    moved["episodes"][0]["folder"] = str(tmp_path / "gone" / name)
    results.write_bytes(orjson.dumps(moved))
    code, _out, err = _verify(results, capsys)
    assert code == EXIT_USAGE
    assert err == (f"error: episode builtin seed 1: its save folder is missing: not at "
                   f"{results.parent / 'saves' / name} nor at {tmp_path / 'gone' / name}; "
                   "keep the saves/ folder of the run beside its results.json\n")
    (tmp_path / "not.json").write_text("{")
    code, _out, err = _verify(tmp_path / "not.json", capsys)
    assert code == EXIT_USAGE and err.startswith("error: ") and err.count("\n") == 1
    code, _out, err = _verify(tmp_path / "missing.json", capsys)
    assert code == EXIT_USAGE and "does not exist" in err
