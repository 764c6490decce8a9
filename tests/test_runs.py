"""Runs under paths.runs (issue 36, item 4): retention by count, age and size, applied at
start-up and after each run; ``python main.py runs`` lists them and deletes one, never one in
use; a run that would pass the disk budget is refused with one line before it starts. Real
folders, real locks, real programs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import yaml

from agent_world.cli.runs import main as runs_main
from agent_world.config import Config, ConfigError
from agent_world.persistence import SaveError
from agent_world.runs import (
    MARKER,
    RunFolder,
    RunInUse,
    RunRefused,
    check_budget,
    delete_run,
    list_runs,
    prune_runs,
)

MAIN = Path(__file__).resolve().parents[1] / "main.py"
DAY = 86_400


def old_run(runs: Path, name: str, *, days_ago: float, size: int = 1000,
            kind: str = "train") -> Path:
    """A finished run as a run leaves it: run.json, and files of ``size`` bytes."""
    root = runs / name
    (root / "versions").mkdir(parents=True)
    (root / "versions" / "data.bin").write_bytes(b"x" * size)
    ended = time.time() - days_ago * DAY
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ended))
    (root / MARKER).write_bytes(orjson.dumps({
        "kind": kind, "scenario": "foraging", "episodes": 2, "ticks": 100,
        "started": stamp, "ended": stamp, "pid": 1}))
    return root


def paths(tmp_path: Path, **settings: object) -> Config:
    return Config().replace(paths={"runs": str(tmp_path / "runs"), **settings})


def names(runs: Path) -> list[str]:
    return sorted(p.name for p in runs.iterdir())


def test_retention_by_count_age_and_size_deletes_the_oldest_finished_runs(
        tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for i, days in enumerate((40, 30, 20, 10, 1)):
        old_run(runs, f"run{i}", days_ago=days, size=3_000_000)
    (runs / "notes").mkdir()  # not a run: left alone whatever the rules say
    (runs / "notes" / "big.bin").write_bytes(b"x" * 5_000_000)

    said = prune_runs(paths(tmp_path, runs_keep=4).paths)
    assert names(runs) == ["notes", "run1", "run2", "run3", "run4"]
    assert said == ["retention: deleted run 'run0' (train, foraging, 3.0 MB, 40.0d old): "
                    "more than paths.runs_keep 4"]

    said = prune_runs(paths(tmp_path, runs_keep=0, runs_max_age_days=15).paths)
    assert names(runs) == ["notes", "run3", "run4"]
    assert all("older than paths.runs_max_age_days 15" in line for line in said)

    # 6 MB of runs (the folder that is not a run does not count) against a 4 MB budget.
    said = prune_runs(paths(tmp_path, runs_keep=0, runs_max_bytes=10_000_000).paths)
    assert names(runs) == ["notes", "run3", "run4"]  # within the budget
    old_run(runs, "run5", days_ago=0.5, size=6_000_000)
    said = prune_runs(paths(tmp_path, runs_keep=0, runs_max_bytes=10_000_000).paths)
    assert names(runs) == ["notes", "run4", "run5"]
    assert said == ["retention: deleted run 'run3' (train, foraging, 3.0 MB, 10.0d old): past "
                    "the budget paths.runs_max_bytes 10.0 MB"]


def test_a_run_in_use_is_never_deleted_by_retention_or_by_hand(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old_run(runs, "old", days_ago=30)
    live = RunFolder.start(runs / "live", kind="eval", scenario="market", episodes=4,
                           ticks=100)
    try:
        os.utime(runs / "live" / MARKER, (0, 0))  # however old it looks
        rows, _others = list_runs(runs)
        assert [(r.name, r.kind, r.in_use) for r in rows] == [("old", "train", None),
                                                               ("live", "eval", os.getpid())]
        said = prune_runs(paths(tmp_path, runs_keep=1, runs_max_age_days=1).paths)
        assert len(said) == 1 and said[0].startswith("retention: deleted run 'old' (train")
        assert said[0].endswith("30.0d old): older than paths.runs_max_age_days 1")
        with pytest.raises(RunInUse, match=rf"run 'live' is in use by process {os.getpid()}"):
            delete_run(runs, "live", confirm=lambda _q: True)
        with pytest.raises(RunInUse, match=r"run folder .* is in use by process"):
            RunFolder.start(runs / "live", kind="train", scenario="x", episodes=1, ticks=1)
        assert names(runs) == ["live"]
    finally:
        live.finish()
    record = orjson.loads((runs / "live" / MARKER).read_bytes())
    assert record["ended"] is not None and record["kind"] == "eval"
    assert delete_run(runs, "live", confirm=lambda _q: True) is not None
    assert names(runs) == []


def test_delete_takes_only_a_run_by_its_name(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old_run(runs, "kept", days_ago=1)
    (runs / "notes").mkdir()
    for name, message in (("../runs/kept", "not a run's name"), (".hidden", "not a run's name"),
                          ("ghost", "there is no run 'ghost'"), ("notes", "is not a run")):
        with pytest.raises(SaveError, match=message):
            delete_run(runs, name, confirm=lambda _q: True)
    assert delete_run(runs, "kept", confirm=lambda _q: False) is None
    assert names(runs) == ["kept", "notes"]


def test_the_runs_command_lists_and_deletes(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    old_run(runs, "first", days_ago=2, size=2_500_000)
    old_run(runs, "second", days_ago=0.1, kind="eval")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"paths": {"runs": str(runs)}}))
    assert runs_main(["--config", str(config)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["NAME", "KIND", "SCENARIO", "SIZE", "AGE", "IN", "USE"]
    assert table[1].split() == ["first", "train", "foraging", "2.5", "MB", "2.0d", "-"]
    assert table[2].split()[:3] == ["second", "eval", "foraging"]
    assert table[3] == "2 runs, 2.5 MB in " + str(runs)
    assert runs_main(["delete", "first", "--config", str(config)],
                     ask=lambda question: "run 'first' (train" in question) == 0
    assert capsys.readouterr().out.startswith("deleted run 'first'")
    assert names(runs) == ["second"]
    done = subprocess.run([sys.executable, str(MAIN), "runs", "delete", "second", "--config",
                           str(config)], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == ("error: deleting run 'second' needs a confirmation: run it on a "
                           "terminal, or add --yes\n")


def test_retention_settings_are_checked_naming_the_value_and_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"paths.runs_max_bytes: 5,000 bytes cannot hold one "
                                          r".*give 10,000,000 or more, or 0 for no budget"):
        Config().replace(paths={"runs_max_bytes": 5000})
    with pytest.raises(ConfigError, match=r"paths.runs_keep = -1 .* expected a whole number "
                                          r">= 0"):
        Config().replace(paths={"runs_keep": -1})
    with pytest.raises(ConfigError, match=r"paths.runs and paths.saves are the same folder"):
        Config().replace(paths={"runs": "saves"})


def test_a_run_past_the_budget_is_refused_with_one_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old_run(runs, "old", days_ago=1, size=4_000_000)
    cfg = paths(tmp_path, runs_max_bytes=10_000_000).paths
    assert check_budget(cfg, runs / "new", episodes=10, ticks=1000, what="10 episodes") \
        == 3_500_000
    with pytest.raises(RunRefused) as refused:
        check_budget(cfg, runs / "new", episodes=1_001_000, ticks=3000,
                     what="1,001 versions x 1,000 episodes")
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith("this run would write about 1.1 TB (1,001 versions x 1,000 "
                           "episodes x 3,000 ticks, about 350 bytes a tick), more than the "
                           "6.0 MB left of the runs' disk budget (paths.runs_max_bytes 10.0 "
                           "MB, 4.0 MB used by 1 run)")
    assert "raise paths.runs_max_bytes" in line
    # Outside paths.runs only the disk's free space bounds it.
    with pytest.raises(RunRefused, match=r"free on the disk holding"):
        check_budget(cfg, tmp_path / "elsewhere", episodes=10**9, ticks=10**7, what="many")


def test_train_and_eval_refuse_a_run_past_the_budget_before_anything_runs(
        tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"paths": {"runs": str(tmp_path / "runs"),
                                                "runs_max_bytes": 50_000_000}}))
    for args in (["train", "foraging", "--iterations", "1000", "--episodes", "1000"],
                 ["eval", "foraging", "--seeds", "1-1000", "--ticks", "100000"]):
        done = subprocess.run([sys.executable, str(MAIN), *args, "--config", str(config)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              check=False)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: this run would write about")
        assert "paths.runs_max_bytes 50.0 MB" in lines[0]
        assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_training_run_applies_retention_at_its_start_and_after_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for i, days in enumerate((3, 2, 1)):
        old_run(runs, f"old{i}", days_ago=days)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"paths": {"runs": str(runs), "runs_keep": 2}}))
    done = subprocess.run(
        [sys.executable, str(MAIN), "train", "foraging", "--iterations", "1", "--episodes",
         "1", "--ticks", "100", "--workers", "1", "--config", str(config)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    made = [n for n in names(runs) if n.startswith("foraging-")]
    assert len(made) == 1
    assert names(runs) == sorted(["old2", made[0]])  # two kept: the newest old one and it
    said = [line for line in done.stderr.splitlines() if line.startswith("retention:")]
    assert [line.split("'")[1] for line in said] == ["old0", "old1"]  # at start, then after
    record = orjson.loads((runs / made[0] / MARKER).read_bytes())
    assert record["kind"] == "train" and record["episodes"] == 2 and record["ended"]


def test_a_world_applies_retention_when_it_starts(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old_run(runs, "old0", days_ago=9)
    old_run(runs, "old1", days_ago=1)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "world": {"size": [32, 32], "starting_agents": 4},
        "paths": {"runs": str(runs), "runs_max_age_days": 5, "saves": str(tmp_path / "saves"),
                  "logs": str(tmp_path / "logs")}}))
    done = subprocess.run([sys.executable, str(MAIN), "--headless", "--no-save", "--ticks", "2",
                           "--config", str(config)], cwd=tmp_path, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert names(runs) == ["old1"]
    assert "  note: retention: deleted run 'old0' (train, foraging, " in done.stderr
    assert "d old): older than paths.runs_max_age_days 5" in done.stderr
