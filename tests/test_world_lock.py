"""One process per world: a second one is refused naming the holder; a holder killed with
SIGKILL leaves nothing behind that keeps the world locked (not its serialising children,
not its sandbox workers). Real processes, real files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from agent_world.persistence import SaveError, SaveFolder, fork_world, open_world
from agent_world.persistence.lock import WorldInUse, WorldLock, lock_holder
from tests.persistence_helpers import run_session, saving_config

ROOT = Path(__file__).resolve().parent.parent


def _config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({
        "world": {"size": [32, 32], "starting_agents": 8, "tick_rate": 20},
        "paths": {"saves": str(tmp_path / "saves"), "logs": str(tmp_path / "logs")},
        "log": {"echo": False}}))
    return path


def _main(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), *args, "--config",
         str(_config_file(tmp_path))], cwd=tmp_path, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _running(proc: subprocess.Popen[str]) -> str:
    """Read a headless run's banner (stderr) up to the line saying it runs."""
    assert proc.stderr is not None
    banner = []
    for line in proc.stderr:
        banner.append(line)
        if "Ctrl-C stops cleanly" in line:
            return "".join(banner)
    raise AssertionError(f"the program ended before running: {''.join(banner)}")


def _children(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found.extend(kids)
        todo.extend(kids)
    return found


def _open_files(pid: int) -> set[str]:
    fds = Path(f"/proc/{pid}/fd")
    names = set()
    try:
        for fd in fds.iterdir():
            try:
                names.add(os.readlink(fd))
            except OSError:
                continue
    except OSError:
        pass  # the process ended while we looked: it holds nothing
    return names


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and ") Z " not in stat.read_text()  # a zombie holds no files


@pytest.fixture
def reap() -> Iterator[list[int | subprocess.Popen[str]]]:
    """Processes this test started (directly, or pids started through the program); any
    still running at the end are killed, by id, and pipes are closed."""
    started: list[int | subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if isinstance(proc, int):
            if _alive(proc):
                os.kill(proc, signal.SIGKILL)
            continue
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc (Linux)")
def test_a_second_process_is_refused_and_a_killed_holder_leaves_the_world_free(
        tmp_path: Path, reap: list[int | subprocess.Popen[str]]) -> None:
    first = _main(tmp_path, "--headless")
    reap.append(first)
    _running(first)
    root = tmp_path / "saves" / "default"
    lock = root / ".lock"
    assert lock_holder(root) == first.pid
    helpers = _children(first.pid)  # the sandbox's worker processes
    reap.extend(helpers)
    assert helpers, "expected sandbox worker processes"
    for pid in helpers:
        assert str(lock) not in _open_files(pid)  # close-on-exec: they never see it

    second = _main(tmp_path, "--headless", "--ticks", "5")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 2, err
    assert err.strip().splitlines() == [
        f"error: world 'default' is in use by process {first.pid} ({lock}); stop that "
        "process first, or run another world with --world NAME"]
    assert out == ""

    # replay only reads: it runs beside the world and says the world is running
    replay = _main(tmp_path, "replay", "default")
    replay_out, replay_err = replay.communicate(timeout=120)
    assert f"note: world 'default' is running (process {first.pid})" in replay_err
    assert replay.returncode in (0, 3), replay_out + replay_err  # 3: a line mid-write

    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert lock_holder(root) is None  # whatever of it still runs holds no lock
    third = _main(tmp_path, "--headless", "--ticks", "5")
    reap.append(third)
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0, err
    assert "resumed at tick" in err and "Traceback" not in err


SCRIPT = textwrap.dedent("""
    import asyncio, os, sys, time
    from pathlib import Path
    from agent_world.app import Session
    from agent_world.core.world import World
    from agent_world.persistence import open_world
    from tests.persistence_helpers import saving_config

    tmp, pid_file = Path(sys.argv[1]), Path(sys.argv[2])
    cfg = saving_config(tmp, serialize_in_child=True, hash_interval_ticks=1)
    opened = open_world(cfg)
    session = Session(cfg, opened.world, folder=opened.folder)

    def stuck(self):  # runs in the forked child: say who it is, then never finish
        pid_file.write_text(str(os.getpid()))
        time.sleep(600)

    World.state_bytes = stuck
    asyncio.run(session.loop.run(max_ticks=1, paced=False))  # forks the child between ticks
    print("ready", flush=True)
    time.sleep(600)
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="serialising children need fork()")
def test_a_serialising_child_does_not_keep_the_lock_of_a_killed_parent(
        tmp_path: Path, reap: list[int | subprocess.Popen[str]]) -> None:
    script = tmp_path / "holder.py"
    script.write_text(SCRIPT)
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path), str(pid_file)],
                              cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    reap.append(parent)
    assert parent.stdout is not None
    assert parent.stdout.readline() == "ready\n", parent.communicate(timeout=30)
    _wait_for(lambda: pid_file.exists() and pid_file.read_text().isdigit(), "the child")
    child = int(pid_file.read_text())
    reap.append(child)
    root = tmp_path / "saves" / "w"
    assert lock_holder(root) == parent.pid
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=30)  # (its pipes stay open: the child has them too)
    assert _alive(child)  # still serialising, forever
    assert lock_holder(root) is None
    taken = WorldLock.acquire(root, "w")
    taken.release()


def test_the_same_process_cannot_open_a_world_twice(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    opened = open_world(cfg)
    root = tmp_path / "saves" / "w"
    assert lock_holder(root) == os.getpid()
    with pytest.raises(WorldInUse, match=rf"in use by process {os.getpid()} "):
        open_world(cfg)
    opened.close()
    assert lock_holder(root) is None
    run_session(cfg, 10)  # a session holds it while it runs and frees it when it closes
    assert lock_holder(root) is None
    assert (root / ".lock").read_text() == ""


def test_a_refused_start_and_a_failed_open_free_the_lock(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    run_session(cfg, 5)
    with pytest.raises(SaveError, match="already exists with seed"):
        open_world(cfg.replace(world={"seed": 9}), seed_given=True)
    assert lock_holder(tmp_path / "saves" / "w") is None


def test_a_fork_locks_its_target_before_it_writes(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    run_session(cfg, 60)
    source = SaveFolder.open(tmp_path / "saves" / "w")
    target = tmp_path / "saves" / "branch"
    target.mkdir()
    held = WorldLock.acquire(target, "branch")  # as another process starting it would
    try:
        with pytest.raises(WorldInUse, match="world 'branch' is in use"):
            fork_world(source, 30, "branch", cfg)
        assert [p.name for p in target.iterdir()] == [".lock"]
    finally:
        held.release()
    opened = fork_world(source, 30, "branch", cfg)
    assert lock_holder(target) == os.getpid()
    opened.close()
    assert lock_holder(target) is None
