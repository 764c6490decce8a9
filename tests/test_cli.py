"""The real program, run as a subprocess: exit codes, the summary line, banner, logs, Ctrl-C.

Every run gets a config whose paths point into the test's tmp_path and runs with tmp_path as
its working folder, so nothing lands in the repository.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
MAIN = REPO / "main.py"
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d t=(\d{7}) (.+)$")


def write_config(tmp_path: Path, extra: dict[str, Any] | None = None) -> Path:
    data: dict[str, Any] = {"paths": {"logs": str(tmp_path / "logs"),
                                      "saves": str(tmp_path / "saves")}}
    for section, values in (extra or {}).items():
        data.setdefault(section, {}).update(values)
    path = tmp_path / "test-config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def base_env(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AW_CLI_TEST")}
    env.update(changes)
    return env


def run_main(home: Path, *args: str, config: Path | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run main.py in ``home`` (created if needed) with a config writing only below it."""
    home.mkdir(parents=True, exist_ok=True)
    config = config or write_config(home)
    return subprocess.run(
        [sys.executable, str(MAIN), "--config", str(config), *args],
        cwd=home, env=env or base_env(), capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, check=False,
    )


def summary(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines, "no output on stdout"
    data = json.loads(lines[-1])
    assert isinstance(data, dict)
    return data


def log_lines(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    out = []
    for line in text.splitlines():
        m = LOG_LINE.match(line)
        assert m is not None, f"not a tick-stamped line: {line!r}"
        out.append((int(m.group(1)), m.group(2)))
    return out


# -- headless runs ----------------------------------------------------------------------------


def test_headless_run_prints_a_json_summary(tmp_path: Path) -> None:
    result = run_main(tmp_path, "--headless", "--ticks", "200", "--seed", "3")
    data = summary(result)
    assert data["tick"] == 200
    assert data["ticks_run"] == 200
    assert data["seed"] == 3
    assert re.fullmatch(r"[0-9a-f]{32}", data["state_hash"])
    assert isinstance(data["agents_alive"], int)
    assert data["agents_alive"] >= 0
    assert isinstance(data["events"], int)
    assert data["events"] > 0
    # headless: the summary is the only thing on stdout; the banner goes to stderr
    assert result.stdout.strip().splitlines() == [result.stdout.strip()]


def test_banner_names_log_saves_and_llm(tmp_path: Path) -> None:
    result = run_main(tmp_path, "--headless", "--ticks", "5")
    assert result.returncode == 0, result.stderr
    log = tmp_path / "logs" / "world.log"
    assert f"world log:   {log}" in result.stderr
    assert f"save folder: {tmp_path / 'saves' / 'default'}" in result.stderr
    assert "LLM:" in result.stderr
    assert "not configured" in result.stderr


def test_world_log_has_tick_stamped_lines(tmp_path: Path) -> None:
    result = run_main(tmp_path, "--headless", "--ticks", "200", "--seed", "3")
    assert result.returncode == 0, result.stderr
    lines = log_lines(tmp_path / "logs" / "world.log")
    assert lines[0] == (0, "world 'default' running from tick 0 (seed 3)")
    assert lines[-1] == (200, "world 'default' stopped at tick 200")
    ticks = [t for t, _ in lines]
    assert ticks == sorted(ticks)
    assert len(lines) > 2  # some world events between start and stop


def test_each_world_and_each_no_save_run_logs_to_a_file_of_its_own(tmp_path: Path) -> None:
    # Issue 29: a --no-save run wrote into the running default world's logs/world.log, so
    # the file's ticks jumped back and forth. One writer per file now.
    logs = tmp_path / "logs"
    saved = run_main(tmp_path, "--headless", "--ticks", "30")
    other = run_main(tmp_path, "--headless", "--ticks", "30", "--world", "other")
    throwaway = [run_main(tmp_path, "--headless", "--ticks", "30", "--no-save")
                 for _ in range(2)]
    for result in (saved, other, *throwaway):
        assert result.returncode == 0, result.stderr
    assert f"world log:   {logs / 'world.log'}  " in saved.stderr
    assert f"world log:   {logs / 'world-other.log'}  " in other.stderr
    nosave = sorted((logs / "nosave").iterdir())
    assert len(nosave) == 2 and all(re.fullmatch(r"default-\d+\.log", p.name) for p in nosave)
    for result in throwaway:
        (named,) = [p for p in nosave if f"world log:   {p}  " in result.stderr]
        ticks = [t for t, _ in log_lines(named)]
        assert ticks[0] == 0 and ticks[-1] == 30 and ticks == sorted(ticks)
    for path in (logs / "world.log", logs / "world-other.log"):
        ticks = [t for t, _ in log_lines(path)]
        assert ticks[0] == 0 and ticks[-1] == 30 and ticks == sorted(ticks), path


def test_no_save_runs_keep_only_the_latest_logs_of_finished_runs(tmp_path: Path) -> None:
    folder = tmp_path / "logs" / "nosave"
    folder.mkdir(parents=True)
    # Process ids past the kernel's largest are never running: finished runs' logs.
    gone = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    finished = [folder / f"default-{gone + n}.log" for n in range(12)]
    for n, path in enumerate(finished):
        path.write_text("old\n", encoding="utf-8")
        os.utime(path, (1_000_000 + n, 1_000_000 + n))
    rotated = folder / f"default-{gone}.log.1"  # an older part of the oldest run's log
    rotated.write_text("rotated\n", encoding="utf-8")
    os.utime(rotated, (999_999, 999_999))
    running = folder / f"default-{os.getpid()}.log"  # this test's own process: running
    running.write_text("still going\n", encoding="utf-8")
    os.utime(running, (1, 1))  # the oldest of all
    result = run_main(tmp_path, "--headless", "--ticks", "5", "--no-save")
    assert result.returncode == 0, result.stderr
    left = {p.name for p in folder.iterdir()}
    assert {p.name for p in finished[-10:]} <= left  # the newest ten finished ones
    assert running.name in left  # a run still going keeps its log, however old
    assert not {f"default-{gone}.log", f"default-{gone}.log.1", f"default-{gone + 1}.log"} & left
    assert len(left) == 12  # and the log of the run that pruned


def test_same_seed_same_hash_whatever_the_hash_seed(tmp_path: Path) -> None:
    # separate folders: each run makes a new world (an existing save would be resumed)
    a = summary(run_main(tmp_path / "a", "--headless", "--ticks", "200", "--seed", "3",
                         env=base_env(PYTHONHASHSEED="0")))
    b = summary(run_main(tmp_path / "b", "--headless", "--ticks", "200", "--seed", "3",
                         env=base_env(PYTHONHASHSEED="4242")))
    assert a["state_hash"] == b["state_hash"]
    assert (a["agents_alive"], a["events"]) == (b["agents_alive"], b["events"])


def test_different_seed_different_hash(tmp_path: Path) -> None:
    a = summary(run_main(tmp_path / "a", "--headless", "--ticks", "200", "--seed", "3"))
    b = summary(run_main(tmp_path / "b", "--headless", "--ticks", "200", "--seed", "4"))
    assert a["state_hash"] != b["state_hash"]


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("extra", "named"), [
    ({"world": {"tick_rate": "fast"}}, "world.tick_rate = 'fast' (str)"),
    ({"world": {"tick_rat": 5}}, "world.tick_rat; did you mean 'tick_rate'?"),
    ({"game": {"vision_radius": 0}}, "game.vision_radius = 0 (int)"),
])
def test_bad_config_exits_2_with_one_error_line(tmp_path: Path, extra: dict[str, Any],
                                                named: str) -> None:
    config = write_config(tmp_path, extra)
    result = run_main(tmp_path, "--headless", "--ticks", "5", config=config)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {config}: ")
    assert named in lines[0]
    assert result.stdout == ""
    assert not (tmp_path / "logs").exists()


def test_malformed_yaml_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "broken.yaml"
    config.write_text("world:\n  seed: [1, 2\n", encoding="utf-8")
    result = run_main(tmp_path, "--headless", "--ticks", "5", config=config)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {config}: not valid YAML at line 3")


def test_bad_world_name_exits_2(tmp_path: Path) -> None:
    result = run_main(tmp_path, "--headless", "--ticks", "5", "--world", "../elsewhere")
    assert result.returncode == 2
    assert result.stderr.startswith("error: ")
    assert "world.name" in result.stderr
    assert "'../elsewhere'" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--ticks", "0"], "argument --ticks: expected a number >= 1, got 0"),
    (["--ticks", "ten"], "argument --ticks: expected a whole number, got 'ten'"),
    (["--seed", "-1"], "argument --seed: expected 0 <= seed < 2**63, got -1"),
    (["--seed", "abc"], "argument --seed: expected a whole number, got 'abc'"),
    (["--seed", str(2**63)], "argument --seed: expected 0 <= seed < 2**63"),
])
def test_bad_arguments_are_rejected(tmp_path: Path, args: list[str], message: str) -> None:
    result = run_main(tmp_path, "--headless", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "usage:" in result.stderr
    assert not (tmp_path / "logs").exists()


def test_missing_api_key_exits_2_naming_the_variable(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"llm": {"provider": "openai", "model": "some/model",
                                             "api_key_env": "AW_CLI_TEST_KEY"}})
    result = run_main(tmp_path, "--headless", "--ticks", "5", config=config,
                      env=base_env())
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "AW_CLI_TEST_KEY" in lines[0]
    assert not (tmp_path / "logs").exists()


def test_configured_llm_is_named_in_the_banner(tmp_path: Path) -> None:
    secret = "sk-test-0123456789abcdef"
    config = write_config(tmp_path, {"llm": {"provider": "openai", "model": "some/model",
                                             "api_key_env": "AW_CLI_TEST_KEY"}})
    result = run_main(tmp_path, "--headless", "--ticks", "5", config=config,
                      env=base_env(AW_CLI_TEST_KEY=secret))
    assert result.returncode == 0, result.stderr
    assert "LLM:         openai (some/model at https://openrouter.ai/api/v1)" in result.stderr
    assert secret not in result.stderr + result.stdout
    assert secret not in (tmp_path / "logs" / "world.log").read_text(encoding="utf-8")


# -- an interactive (paced) run stopped with Ctrl-C ---------------------------------------------


def test_sigint_stops_a_paced_run_cleanly(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"log": {"echo": False}})
    log = tmp_path / "logs" / "world.log"
    proc = subprocess.Popen(
        [sys.executable, str(MAIN), "--config", str(config)],
        cwd=tmp_path, env=base_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        give_up = time.monotonic() + 20
        while not (log.exists() and log.read_text(encoding="utf-8").endswith("\n")):
            assert proc.poll() is None, f"exited early: {proc.communicate()}"
            assert time.monotonic() < give_up, "world.log never got a line"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    lines = log_lines(log)
    last_tick, last_text = lines[-1]
    assert last_text == f"world 'default' stopped at tick {last_tick}"
    # interactive: banner and result on stdout
    assert "LLM:" in out
    assert re.search(rf"^stopped at tick {last_tick} \(state [0-9a-f]{{32}}\)$", out, re.M)
