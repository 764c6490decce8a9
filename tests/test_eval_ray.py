"""Evaluation on Ray: a head and a second node started on this machine (loopback only, each
stopped by its own process id, never ``ray stop``), episodes run as tasks there, and the
results are exactly those of a local run of the same seeds (a fork's branches too)."""

from __future__ import annotations

import dataclasses
import io
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from persistence_helpers import run_session, saving_config

from agent_world.config import Config
from agent_world.eval import load_scenario
from agent_world.eval.forkplan import plan_fork
from agent_world.eval.forks import fork_evaluate
from agent_world.eval.raypool import RayError, RayPool
from agent_world.eval.runner import evaluate

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[dev]')")
RAY = str(Path(sys.executable).parent / "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start(*args: str, temp: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.Popen([RAY, "start", "--block", "--node-ip-address", "127.0.0.1",
                             "--num-cpus", "1", "--disable-usage-stats", *args,
                             *(["--temp-dir", temp] if "--head" in args else [])],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A two-node Ray cluster on loopback; its address."""
    port = _free_port()
    address = f"127.0.0.1:{port}"
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths are long
    started = [_start("--head", "--port", str(port), "--include-dashboard", "false",
                      temp=temp)]
    try:
        deadline = time.monotonic() + 90
        while True:  # the head takes a few seconds to come up
            try:
                ray.init(address=address, log_to_driver=False)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        started.append(_start("--address", address, temp=temp))
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, "the second Ray node did not join"
            time.sleep(1)
        ray.shutdown()
        yield address
    finally:
        ray.shutdown()
        for proc in reversed(started):  # ours, by their own process ids
            proc.send_signal(signal.SIGTERM)
        for proc in started:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def test_episodes_on_a_ray_cluster_equal_a_local_run(cluster: str, tmp_path: Path) -> None:
    scenario = dataclasses.replace(load_scenario("market"), ticks=300)
    base = Config()
    on_ray = evaluate(scenario, ["builtin"], [1, 2, 3], tmp_path / "ray", workers=1,
                      base=base, ray_address=cluster, progress=io.StringIO())
    local = evaluate(scenario, ["builtin"], [1, 2, 3], tmp_path / "local", workers=2,
                     base=base, progress=io.StringIO())
    assert not on_ray.failed and len(on_ray.episodes) == 3
    assert [(e.seed, e.score, e.metrics) for e in on_ray.episodes] == \
        [(e.seed, e.score, e.metrics) for e in local.episodes]
    assert all(Path(e.folder).is_dir() for e in on_ray.episodes)


def test_a_forks_branches_on_a_ray_cluster_equal_a_local_run(cluster: str,
                                                           tmp_path: Path) -> None:
    """Branches are jobs like episodes: the same pools, the same results."""
    config = saving_config(tmp_path, "src")
    session = run_session(config, 200)
    chosen = [row.agent.name for _eid, row in session.world.agents()][:2]
    plan = plan_fork(tmp_path / "saves" / "src", 150, chosen, 100, Config(), {})
    runs = [fork_evaluate(plan, ["builtin"], 2, tmp_path / where, workers=workers,
                          base=Config(), ray_address=address, progress=io.StringIO())
            for where, workers, address in (("ray", 1, cluster), ("local", 2, None))]
    assert not runs[0].failed and len(runs[0].results) == 2
    assert [(b.seed, b.metrics, b.world, b.state_hash) for b in runs[0].results] == \
        [(b.seed, b.metrics, b.world, b.state_hash) for b in runs[1].results]


def test_an_unreachable_cluster_is_one_line_before_any_episode() -> None:
    with pytest.raises(RayError, match=r"--ray 127\.0\.0\.1:1: cannot reach a Ray cluster"):
        RayPool("127.0.0.1:1")
