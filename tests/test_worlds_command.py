"""``python main.py worlds``: the table of saved worlds, and deleting one (confirmed, never
one in use, never a folder that is not a save). Real folders, real processes."""

from __future__ import annotations

import asyncio
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agent_world.app import Session
from agent_world.cli.worlds import main
from agent_world.config import Config
from agent_world.persistence import SaveFolder, fork_world, open_world
from tests.persistence_helpers import run_session, saving_config

ROOT = Path(__file__).resolve().parent.parent


def _setup(tmp_path: Path) -> tuple[Config, Path, Path]:
    """Worlds alpha (40 ticks) and beta (a fork of alpha at tick 10, run 5 more), and
    things in the saves folder that are not worlds."""
    cfg = saving_config(tmp_path, "alpha")
    run_session(cfg, 40)
    saves = tmp_path / "saves"
    opened = fork_world(SaveFolder.open(saves / "alpha"), 10, "beta", cfg)
    run_session(cfg.replace(world={"name": "beta"}), 5, opened=opened)
    (saves / "notes").mkdir()
    (saves / "notes" / "todo.txt").write_text("mine")
    (saves / "half").mkdir()  # a creation that was interrupted
    (saves / "half" / "world_state.json").write_text("{")
    (saves / "readme.txt").write_text("hello")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg.to_dict()))
    return cfg, saves, config


def _run(*args: str, cwd: Path, stdin: int | None = subprocess.DEVNULL
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=cwd,
                          stdin=stdin, capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_table_lists_each_world_with_its_origin_and_holder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, saves, config = _setup(tmp_path)
    (saves / ".gitkeep").write_text("")  # hidden: nobody's business here
    opened = open_world(cfg)  # alpha is in use by this process
    try:
        assert main(["--config", str(config)]) == 0
    finally:
        opened.close()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "LAST", "TICK", "SAVED", "SEED", "SIZE", "ORIGIN",
                                "IN", "USE"]
    alpha, beta = lines[1], lines[2]
    assert alpha.startswith("alpha") and " 40 " in alpha and " 42 " in alpha
    assert alpha.split()[-3:] == ["-", "pid", str(os.getpid())] and " UTC " in alpha
    assert beta.startswith("beta") and " 15 " in beta
    assert "fork of alpha at tick 10" in beta and beta.endswith(" -")
    assert "KB" in alpha
    others = "\n".join(lines[3:])
    assert "half: a world whose creation was interrupted" in others
    assert "notes: not an Agent World save (no meta.json)" in others
    assert "readme.txt: a file, not a world" in others
    assert ".gitkeep" not in others


def test_last_tick_is_where_the_log_reaches_not_the_last_snapshot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A running world is past its latest snapshot: `worlds` showed 261 for a world near
    # 2,500. Here the world logs 250 ticks and its only snapshot is the first, as a world
    # running between snapshots (or killed there) leaves its folder.
    cfg = saving_config(tmp_path, "alpha", snapshot_interval_ticks=1000)
    opened = open_world(cfg)
    session = Session(cfg, opened.world, folder=opened.folder)
    try:
        asyncio.run(session.loop.run(max_ticks=250, paced=False))
        assert session.persistence is not None
        session.persistence.close(final_snapshot=False, keep_lock=True)  # the log, written
        session.persistence = None
        assert SaveFolder.open(tmp_path / "saves" / "alpha").read_meta()["last_tick"] == 0
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(cfg.to_dict()))
        assert main(["--config", str(config)]) == 0
        (row,) = capsys.readouterr().out.splitlines()[1:]
        assert row.split()[:2] == ["alpha", "250"], row
        assert row.split()[-2:] == ["pid", str(os.getpid())]
    finally:
        assert opened.folder is not None and opened.folder.lock is not None
        opened.folder.lock.release()
        session.close()


def test_the_command_line_lists_and_says_when_there_is_nothing(tmp_path: Path) -> None:
    _cfg, _saves, config = _setup(tmp_path)
    done = _run("worlds", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("NAME")
    assert [line.split()[0] for line in done.stdout.splitlines()[1:3]] == ["alpha", "beta"]
    same = _run("worlds", "list", "--config", str(config), cwd=tmp_path)
    assert same.stdout == done.stdout
    empty = tmp_path / "empty.yaml"
    empty.write_text(yaml.safe_dump({"paths": {"saves": str(tmp_path / "none")}}))
    nothing = _run("worlds", "--config", str(empty), cwd=tmp_path)
    assert nothing.returncode == 0
    assert nothing.stdout == (f"{tmp_path / 'none'} (paths.saves) does not exist yet; "
                              "'python main.py' starts a world there\n")


def test_delete_needs_a_confirmation(tmp_path: Path) -> None:
    _cfg, saves, config = _setup(tmp_path)
    refused = _run("worlds", "delete", "beta", "--config", str(config), cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr == ("error: deleting world 'beta' needs a confirmation: run it on "
                              "a terminal, or add --yes\n")
    assert (saves / "beta" / "meta.json").exists()
    done = _run("worlds", "delete", "beta", "--yes", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"deleted world 'beta' ({saves / 'beta'}, tick 15, ")
    assert not (saves / "beta").exists()
    assert sorted(p.name for p in saves.iterdir()) == ["alpha", "half", "notes",
                                                       "readme.txt"]


def test_delete_asks_on_a_terminal(tmp_path: Path) -> None:
    _cfg, saves, config = _setup(tmp_path)
    for answer, kept in ((b"n\n", True), (b"y\n", False)):
        terminal, program_side = pty.openpty()
        try:
            proc = subprocess.Popen(
                [sys.executable, str(ROOT / "main.py"), "worlds", "delete", "beta",
                 "--config", str(config)],
                cwd=tmp_path, stdin=program_side, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)
            os.write(terminal, answer)
            out, err = proc.communicate(timeout=120)
        finally:
            os.close(terminal)
            os.close(program_side)
        assert "Delete world 'beta'" in out and "This cannot be undone. [y/N]" in out
        assert (saves / "beta").exists() == kept, out + err
        assert proc.returncode == (1 if kept else 0), err


def test_delete_refuses_a_world_in_use_and_anything_not_a_save(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, saves, config = _setup(tmp_path)
    opened = open_world(cfg)
    try:
        assert main(["delete", "alpha", "--yes", "--config", str(config)]) == 2
        err = capsys.readouterr().err
        assert err == (f"error: world 'alpha' is in use by process {os.getpid()} "
                       f"({saves / 'alpha' / '.lock'}); stop that process first, then "
                       "delete it\n")
    finally:
        opened.close()
    assert (saves / "alpha" / "meta.json").exists()
    for name, message in (("notes", "is not an Agent World save (no meta.json); nothing was "
                                    "deleted"),
                          ("half", "is not an Agent World save"),
                          ("nowhere", "there is no world 'nowhere' in"),
                          ("../alpha", "'../alpha' is not a world name")):
        assert main(["delete", name, "--yes", "--config", str(config)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, err
    assert (saves / "notes" / "todo.txt").read_text() == "mine"
    assert (saves / "half" / "world_state.json").exists()
    assert main(["delete", "alpha", "--config", str(config)],
                ask=lambda question: "tick 40" in question) == 0
    assert not (saves / "alpha").exists()
    assert not [p for p in saves.iterdir() if p.name.startswith(".")]  # nothing left over
