"""Issue 30, item 2: training runs from the web read the server's files and outlive the
world. Each attack as the issue describes it, against a real server: scenario names that are
files of the working folder (an oracle, and PyYAML quoting the offending line), a name too
long for the file system, episodes of 10,000,000 ticks, a flooding training socket; then
real programs: SIGTERM to a world whose run has an episode under way, and kill -9 of it, after
which no process it started may remain (the episode's worker and its sandbox workers)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from agent_world.persistence.lock import lock_holder
from agent_world.web.training import FLOOD_CLOSE
from tests.web_helpers import Served, served, web_config

MAIN = Path(__file__).resolve().parents[1] / "main.py"
SECRET = "hunter2-do-not-show"
LINUX_PROC = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="needs /proc (Linux)")


async def train(s: Served, body: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    async with s.http.post(s.url + "/api/train", json=body) as resp:
        text = await resp.text()
        assert resp.content_type == "application/json", text  # never a plain-text 500
        return resp.status, json.loads(text), text


def plant_files(folder: Path) -> None:
    """Files an attacker would like read: broken YAML with a secret on the bad line, a file
    named like a built-in scenario, and YAML that is not a scenario."""
    (folder / "secrets").write_text(f"password: {SECRET}\n  broken: [\n", encoding="utf-8")
    (folder / "foraging").write_text(f"{SECRET}: [\n", encoding="utf-8")
    (folder / "notes.yaml").write_text(f"name: {SECRET}\n", encoding="utf-8")


def test_a_scenario_name_never_opens_a_file_of_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plant_files(tmp_path)
    monkeypatch.chdir(tmp_path)

    async def go() -> None:
        config = web_config(tmp_path).replace(paths={"runs": str(tmp_path / "runs")})
        async with served(tmp_path, config=config) as s:
            # A file that exists and one that does not get the same answer: no oracle.
            status, body, text = await train(s, {"scenario": "secrets"})
            assert status == 400 and SECRET not in text
            assert body["error"].startswith("unknown scenario 'secrets'; the scenarios are")
            _status, ghost, _text = await train(s, {"scenario": "ghosts"})
            assert ghost["error"] == body["error"].replace("'secrets'", "'ghosts'")
            # A built-in name is the built-in scenario, whatever the working folder holds
            # (it gets as far as the starting policy, which does not exist).
            status, body, text = await train(s, {"scenario": "foraging", "from": "ghost"})
            assert status == 400 and SECRET not in text
            assert body["error"].startswith("--from 'ghost': no such policy")
            # Paths, files and names too long for the file system are not names at all.
            for name in ("notes.yaml", "../secrets", "/etc/passwd", "secrets\n", "Secrets",
                         "a" * 300, "a" * 5000, "./secrets", "", 7):
                status, body, text = await train(s, {"scenario": name})
                assert status == 400 and SECRET not in text, (name, text)
                assert "must be a scenario's name" in body["error"], body
            for start in ("../../etc/passwd", "x.py", "/tmp/x", "a" * 400):
                status, body, text = await train(s, {"scenario": "foraging", "from": start})
                assert status == 400 and "'from' must be a policy's name" in body["error"]
        assert not (tmp_path / "runs").exists()  # nothing started

    asyncio.run(go())


def test_scenarios_of_the_configured_folder_are_taken_by_name_without_their_contents(
        tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "short.yaml").write_text(yaml.safe_dump({
        "name": "short", "subjects": {"count": 2}, "end": {"ticks": 50},
        "score": {"food_gathered": 1.0}}), encoding="utf-8")
    (folder / "broken.yaml").write_text(f"name: x\nscore: {{{SECRET}: [\n", encoding="utf-8")
    (folder / "wrong.yaml").write_text(f"name: x\n{SECRET}: 1\nscore: {{eaten: 1}}\n",
                                       encoding="utf-8")
    (folder / "long.yaml").write_text(yaml.safe_dump({
        "name": "long", "end": {"ticks": 10_000_000}, "score": {"eaten": 1.0}}),
        encoding="utf-8")
    outside = tmp_path / "outside.yaml"
    outside.write_text((folder / "short.yaml").read_text(), encoding="utf-8")
    (folder / "linked.yaml").symlink_to(outside)

    async def go() -> None:
        config = web_config(tmp_path).replace(paths={"runs": str(tmp_path / "runs"),
                                                     "scenarios": str(folder)})
        async with served(tmp_path, config=config) as s:
            status, body, _text = await train(s, {"scenario": "short", "from": "ghost"})
            assert status == 400 and body["error"].startswith("--from 'ghost'")  # it loaded
            status, body, text = await train(s, {"scenario": "broken"})
            assert status == 400 and SECRET not in text
            assert re.fullmatch(r"scenario broken \(paths.scenarios\): not valid YAML at line "
                                r"\d+, column \d+", body["error"]), body
            status, body, text = await train(s, {"scenario": "wrong"})
            assert status == 400 and SECRET not in text
            assert "is not a valid scenario" in body["error"]
            status, body, _text = await train(s, {"scenario": "long"})
            assert status == 400 and "more than the 50,000 allowed here" in body["error"]
            status, body, _text = await train(s, {"scenario": "linked"})
            assert status == 400 and body["error"].startswith("unknown scenario 'linked'")

    asyncio.run(go())


def test_episode_lengths_and_disk_use_are_capped(tmp_path: Path) -> None:
    async def go() -> None:
        config = web_config(tmp_path).replace(paths={"runs": str(tmp_path / "runs"),
                                                     "runs_max_bytes": 100_000_000})
        async with served(tmp_path, config=config) as s:
            status, body, _text = await train(s, {"scenario": "foraging",
                                                  "ticks": 10_000_000})
            assert status == 400
            assert body["error"] == ("'ticks' 10000000: an episode started over the web runs "
                                     "1 to 50,000 ticks (web.train_max_ticks)")
            status, body, _text = await train(s, {"scenario": "foraging", "iterations": 1000,
                                                  "episodes": 1000, "ticks": 50_000})
            assert status == 507 and "\n" not in body["error"]
            assert body["error"].startswith("this run would write about 17.5 TB (1,001 "
                                            "versions x 1,000 episodes x 50,000 ticks")
            assert "paths.runs_max_bytes 100.0 MB" in body["error"]
        assert not (tmp_path / "runs").exists()

    asyncio.run(go())


def test_a_flooding_training_socket_is_closed(tmp_path: Path) -> None:
    async def go() -> None:
        config = web_config(tmp_path, messages_per_s=2).replace(
            paths={"runs": str(tmp_path / "runs")})
        async with served(tmp_path, config=config) as s:
            status, run, _text = await train(s, {"scenario": "foraging", "iterations": 20,
                                                 "episodes": 1, "ticks": 20_000})
            assert status == 202
            async with s.bare.ws_connect(s.url + run["watch"]) as ws:
                for _ in range(50):
                    await ws.send_str('{"type": "hello"}')
                said = []
                async for msg in ws:
                    said.append(json.loads(msg.data))
                assert ws.close_code == FLOOD_CLOSE
            assert any("flooding" in m.get("error", "") for m in said)
            assert s.server.training.closed_flooding == 1
        # Closing the server stopped the run: its episodes ended with it.
        record = json.loads((Path(run["out"]) / "run.json").read_text())
        assert record["ended"] is not None and lock_holder(Path(run["out"])) is None

    asyncio.run(go())


# -- real programs: the world stopped and killed with a run under way ---------------------------


def _proc_stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def descendants(pid: int) -> dict[int, str]:
    """Every live descendant of ``pid``, by id, with its start time (a pid used again by an
    unrelated process later has another)."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        fields = _proc_stat(int(entry.name)) if entry.name.isdigit() else None
        if fields is not None and fields[0] != "Z":
            parents[int(entry.name)] = (int(fields[1]), fields[19])
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, started) in parents.items():
            if ppid == parent and child not in found:
                found[child] = started
                todo.append(child)
    return found


def still_running(processes: dict[int, str]) -> dict[int, str]:
    """Those of ``processes`` still alive (not zombies) and the same processes."""
    alive = {}
    for pid, started in processes.items():
        fields = _proc_stat(pid)
        if fields is not None and fields[0] != "Z" and fields[19] == started:
            alive[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ") \
                .decode(errors="replace")[:120]
    return alive


def wait_for(condition: Callable[[], Any], what: str, limit: float = 120.0) -> Any:
    """Poll ``condition`` until it holds (``limit`` seconds: a safety net, not a measure)."""
    deadline = time.monotonic() + limit
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


@pytest.fixture
def reap() -> Iterator[dict[int, str]]:
    """Processes a test saw started (pid: start time); any left at the end are killed by
    id, so that a failing test leaves nothing behind."""
    seen: dict[int, str] = {}
    yield seen
    for pid in still_running(seen):
        os.kill(pid, signal.SIGKILL)


def _world_with_a_run(tmp_path: Path, reap: dict[int, str]
                      ) -> tuple[subprocess.Popen[bytes], dict[str, Any], int]:
    """main.py with a training run whose first episode is under way: the world, the run, and
    the episode's worker process (the holder of the episode world's lock)."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "world": {"size": [32, 32], "starting_agents": 6, "seed": 3},
        "web": {"port": 0, "runtime_dir": str(tmp_path / "runtime")},
        "paths": {"logs": str(tmp_path / "logs"), "saves": str(tmp_path / "saves"),
                  "runs": str(tmp_path / "runs")}}), encoding="utf-8")
    with (tmp_path / "out.txt").open("wb") as out:
        world = subprocess.Popen([sys.executable, str(MAIN), "--config", str(config),
                                  "--headless"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                                 stdout=out, stderr=subprocess.STDOUT)
    reap[world.pid] = (_proc_stat(world.pid) or ["?"] * 20)[19]

    def url() -> str | None:
        assert world.poll() is None, (tmp_path / "out.txt").read_text()
        found = re.search(r"viewer:\s+(http://\S+/)", (tmp_path / "out.txt").read_text())
        return found.group(1) if found else None

    base = wait_for(url, "the viewer's address")
    token = json.loads(next((tmp_path / "runtime").glob("web-*.json")).read_text())["token"]

    async def start() -> dict[str, Any]:
        async with aiohttp.ClientSession() as http, http.post(
                base + "api/train", headers={"Authorization": f"Bearer {token}"},
                json={"scenario": "foraging", "iterations": 5, "episodes": 1,
                      "ticks": 50_000}) as resp:
            assert resp.status == 202, await resp.text()
            answer: dict[str, Any] = await resp.json()
            return answer

    run = asyncio.run(start())
    out = Path(run["out"])

    def episode() -> int | None:
        for lock in out.glob("versions/*/episodes/saves/*/.lock"):
            holder = lock_holder(lock.parent)
            if holder:
                return holder
        return None

    worker = wait_for(episode, "an episode under way")
    # The episode's brains are policies: its sandbox workers are up once it has ticked.
    wait_for(lambda: len(descendants(worker)) >= 2, "the episode's sandbox workers")
    reap.update(descendants(world.pid))
    return world, run, worker


@LINUX_PROC
def test_no_process_of_a_run_outlives_a_kill_9_of_the_world(
        tmp_path: Path, reap: dict[int, str]) -> None:
    world, run, worker = _world_with_a_run(tmp_path, reap)
    out = Path(run["out"])
    started = descendants(world.pid)
    assert worker in started and set(descendants(worker)) <= set(started)
    # While it runs, the run is in use: listed so, and never deleted.
    config = str(tmp_path / "config.yaml")
    listing = subprocess.run([sys.executable, str(MAIN), "runs", "--config", config],
                             capture_output=True, text=True, timeout=120, check=True)
    assert re.search(rf"^{out.name}\s+train\s+foraging\s.*\spid {world.pid}$", listing.stdout,
                     re.MULTILINE), listing.stdout
    refused = subprocess.run([sys.executable, str(MAIN), "runs", "delete", out.name, "--yes",
                              "--config", config], capture_output=True, text=True,
                             timeout=120, check=False)
    assert refused.returncode == 2
    assert refused.stderr == (f"error: run '{out.name}' is in use by process {world.pid}; "
                              "stop that run first (or wait for it to end), then delete it\n")
    assert out.is_dir()

    world.send_signal(signal.SIGKILL)
    world.wait(timeout=60)
    left = wait_for(lambda: not still_running(started) or None, "the run's processes to end")
    assert left is True
    assert lock_holder(out) is None and lock_holder(tmp_path / "saves" / "default") is None


@LINUX_PROC
def test_sigterm_stops_the_world_and_its_run_and_frees_the_lock(
        tmp_path: Path, reap: dict[int, str]) -> None:
    world, run, worker = _world_with_a_run(tmp_path, reap)
    started = descendants(world.pid)
    world.send_signal(signal.SIGTERM)
    # The episode runs 50,000 ticks; the world must not wait for it to end.
    assert world.wait(timeout=120) == 0, (tmp_path / "out.txt").read_text()
    said = (tmp_path / "out.txt").read_text()
    assert "stopped at tick" in said and "Traceback" not in said
    # A process the world stopped may still be on its way out (its memory already gone):
    # it must end, soon, without anything else being done to it.
    assert wait_for(lambda: not still_running(started), "the run's processes to end")
    assert worker in started
    out = Path(run["out"])
    assert lock_holder(out) is None and lock_holder(tmp_path / "saves" / "default") is None
    record = json.loads((out / "run.json").read_text())
    assert record["ended"] is not None


@LINUX_PROC
def test_ctrl_c_of_train_ends_its_episodes_at_once(tmp_path: Path,
                                                   reap: dict[int, str]) -> None:
    # Episode processes lead groups of their own, so a terminal's Ctrl-C reaches only the
    # command: it must end them itself rather than wait out a 50,000-tick episode.
    out = tmp_path / "run"
    # As from a terminal: a shell that starts the tests in the background (no job control)
    # makes them ignore SIGINT, a child inherits that, and Python then keeps ignoring it, so
    # a Ctrl-C could never reach train (the two timeouts of this test, both in background
    # runs). A handler does not survive exec: the child starts with SIGINT's default.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        train = subprocess.Popen(
            [sys.executable, str(MAIN), "train", "foraging", "--iterations", "3",
             "--episodes", "1", "--ticks", "50000", "--workers", "1", "--out", str(out)],
            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, ignored)
    reap[train.pid] = (_proc_stat(train.pid) or ["?"] * 20)[19]

    def episode() -> int | None:
        assert train.poll() is None
        for lock in out.glob("versions/*/episodes/saves/*/.lock"):
            if holder := lock_holder(lock.parent):
                return holder
        return None

    worker = wait_for(episode, "an episode under way")
    started = descendants(train.pid)
    reap.update(started)
    assert worker in started
    train.send_signal(signal.SIGINT)
    try:
        _out, err = train.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # say where it hangs
        train.send_signal(signal.SIGUSR1)  # the train command dumps every thread's stack
        time.sleep(2)
        train.kill()
        _out, err = train.communicate()
        raise AssertionError(f"train did not end after Ctrl-C; its threads:\n{err}") from None
    assert train.returncode == 130, err
    assert f"interrupted: the versions so far are in {out}" in err
    assert wait_for(lambda: not still_running(started), "the episodes' processes to end")
    assert lock_holder(out) is None


CHILD = """
import os, sys, time
from agent_world import lifeline
lifeline._prctl_pdeathsig = lambda sig: False  # the portable path: a watchdog thread
parent = int(sys.argv[1])
lifeline.die_with_parent(parent)
print(os.getpid(), flush=True)
time.sleep(600)
"""
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(__import__("os").getpid())],
                         stdout=sys.stdout)
time.sleep(600)
"""


@LINUX_PROC
def test_without_the_kernels_signal_a_watchdog_ends_the_orphan(
        tmp_path: Path, reap: dict[int, str]) -> None:
    root = str(Path(__file__).resolve().parents[1])
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD], cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": root},
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    watched = {child: (_proc_stat(child) or ["?"] * 20)[19]}
    reap.update(watched)
    assert still_running(watched)
    parent.kill()
    parent.wait(timeout=30)
    parent.stdout.close()
    wait_for(lambda: not still_running(watched), "the orphan to end")
