"""Bad input at the command line gets one line naming the problem, never a traceback."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import MAIN, base_env, run_main, write_config

from agent_world import cli


@pytest.mark.parametrize("shape", ["flow", "block", "mapping"])
def test_a_config_nested_thousands_deep_is_one_line(tmp_path: Path, shape: str) -> None:
    if shape == "flow":
        text = "world: " + "[" * 5000 + "]" * 5000 + "\n"
    elif shape == "mapping":
        text = "world: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n"
    else:
        text = "world:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(3000))
    config = tmp_path / "deep.yaml"
    config.write_text(text, encoding="utf-8")
    done = run_main(tmp_path / "home", "--ticks", "1", config=config)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {config}: values are nested too deeply to read; a configuration is sections "
        "of settings, a few levels deep (see config.example.yaml)"]


def test_a_deep_but_readable_value_is_described_briefly(tmp_path: Path) -> None:
    config = tmp_path / "deep.yaml"
    config.write_text("world:\n  seed: " + "[" * 400 + "1" + "]" * 400 + "\n",
                      encoding="utf-8")
    done = run_main(tmp_path / "home", "--ticks", "1", config=config)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {config}: world.seed = [[[") and len(line) < 300


def test_playback_into_a_closed_pipe_stops_with_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    assert run_main(tmp_path, "--headless", "--ticks", "300", config=config).returncode == 0
    replay = subprocess.Popen(
        [sys.executable, str(MAIN), "replay", str(tmp_path / "saves" / "default"),
         "--config", str(config), "--playback", "1000"],
        cwd=tmp_path, env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-n", "1"], stdin=replay.stdout, capture_output=True,
                          check=True, timeout=60)
    assert replay.stdout is not None
    replay.stdout.close()  # as the shell does once head has exited
    _out, err = replay.communicate(timeout=60)
    assert head.stdout.count(b"\n") == 1
    assert replay.returncode == 1
    assert err.decode().strip().splitlines() == [
        "error: the output was closed before everything was written (its reader went "
        "away); stopped"]


def test_an_internal_error_is_one_line_with_the_traceback_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def broken(_argv: object) -> int:
        raise RuntimeError("a bug in the program")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(cli.SUBCOMMANDS, "ability",
                        dataclasses.replace(cli.SUBCOMMANDS["ability"], run=broken))
    assert cli.main(["ability", "check", "x.py"]) == 70
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: an internal error stopped the program (RuntimeError: a bug "
                           "in the program); this is a bug, please report it with the "
                           "traceback in logs/crash-")
    (kept,) = (tmp_path / "logs").glob("crash-*.txt")
    assert "Traceback" in kept.read_text() and "a bug in the program" in kept.read_text()


def test_help_names_every_command() -> None:
    text = cli.build_parser().format_help()
    for command in ("replay saves/NAME", "ability check FILE.py", "worlds [list | delete",
                    "eval SCENARIO"):
        assert command in text, command
    # Every command main.py dispatches is in --help, because both come from one table.
    for name in cli.SUBCOMMANDS:
        assert f"python main.py {name} " in text, f"{name} is missing from --help"
    assert {line.split()[2] for line in text.splitlines()
            if line.startswith("  python main.py ")} == set(cli.SUBCOMMANDS)


def test_every_command_runs_through_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    # --help of each command exits 0 from its own parser: the table's dispatch reaches it.
    for name, command in cli.SUBCOMMANDS.items():
        with pytest.raises(SystemExit) as done:
            cli.main([name, "--help"])
        assert done.value.code == 0, name
        assert capsys.readouterr().out.startswith(f"usage: python main.py {name}"), name
        assert command.parser().prog == f"python main.py {name}"


@pytest.mark.parametrize("missing", [("fcntl",), ("fcntl", "resource")])
def test_a_system_without_what_the_program_needs_is_told_in_one_line(
        tmp_path: Path, missing: tuple[str, ...]) -> None:
    """As on Windows: the modules are not there (``sys.modules[name] = None`` makes an
    import fail as a missing module does), and main.py says so before anything else runs."""
    hide = "; ".join(f"sys.modules[{name!r}] = None" for name in missing)
    code = (f"import sys, importlib.util, runpy; {hide}; "
            f"runpy.run_path({str(MAIN)!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code, "--headless"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False,
                          env=base_env())
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: Agent World runs on Linux") and "WSL" in lines[0]
    assert all(name in lines[0] for name in missing)
    assert not (tmp_path / "logs").exists() and not (tmp_path / "saves").exists()
