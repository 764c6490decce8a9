"""Crash recovery: SIGKILL the real program at many moments, resume, compare with a run
that was never interrupted."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import yaml

from agent_world.config import Config

ROOT = Path(__file__).resolve().parent.parent
TARGET_TICK = 4000
KILLS = 12
TICK_RATE = 400  # paced, so kills at random moments spread over the whole run


def _config(tmp_path: Path) -> tuple[Config, Path]:
    cfg = Config().replace(
        world={"name": "crashy", "size": [48, 48], "starting_agents": 40,
               "tick_rate": TICK_RATE},
        paths={"saves": str(tmp_path / "saves"), "logs": str(tmp_path / "logs")},
        persistence={"snapshot_interval_ticks": 25, "hash_interval_ticks": 5,
                     "events_chunk_ticks": 400, "snapshots_kept": 4},
        log={"echo": False},
    )
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg.to_dict()))
    return cfg, path


def _start(config_path: Path, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "--config", str(config_path),
         "--until", str(TARGET_TICK)],
        cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_until_running(proc: subprocess.Popen[bytes]) -> list[bytes]:
    """Read the banner (stdout in a paced run): the world exists and ticks from here on."""
    assert proc.stdout is not None
    banner = []
    for line in proc.stdout:
        banner.append(line)
        if b"Ctrl-C stops cleanly" in line:
            return banner
    raise AssertionError(f"the program ended before running: {b''.join(banner)!r}")


def _kill_during_snapshot_write(proc: subprocess.Popen[bytes], folder: Path) -> bool:
    """SIGKILL the moment a snapshot's temporary file exists (mid-write)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and proc.poll() is None:
        if any(folder.glob(".*.tmp")) or any(folder.glob("snapshots/.*.tmp")):
            proc.send_signal(signal.SIGKILL)
            return True
        time.sleep(0.0005)
    proc.send_signal(signal.SIGKILL)
    return False


def _uninterrupted_hash(config_path: Path, home: Path) -> str:
    """The hash of the same program run to the same tick without a kill (flat out: the
    world is the same whatever the pace, its sandbox and angel included)."""
    home.mkdir()
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "--config", str(config_path),
                           "--headless", "--no-save", "--until", str(TARGET_TICK)],
                          cwd=home, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(done.stdout.strip().splitlines()[-1])
    assert summary["tick"] == TARGET_TICK
    return str(summary["state_hash"])


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_matches_an_uninterrupted_run(
        tmp_path: Path) -> None:
    _cfg, config_path = _config(tmp_path)
    expected = _uninterrupted_hash(config_path, tmp_path / "reference")
    folder = tmp_path / "saves" / "crashy"
    rng = random.Random(2026)
    resumed_ticks = []
    mid_write = 0
    for i in range(KILLS):
        proc = _start(config_path, tmp_path)
        banner = _wait_until_running(proc)
        if i % 3 == 2:
            mid_write += _kill_during_snapshot_write(proc, folder)
        else:
            time.sleep(rng.uniform(0.05, 0.8))
            proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        text = b"".join(banner).decode() + out.decode() + err.decode()
        assert "Traceback" not in text and "error:" not in text, text
        if proc.returncode == 0:
            break  # it finished before the kill landed
        assert proc.returncode == -signal.SIGKILL
        if "resumed at tick" in text:
            resumed_ticks.append(int(text.split("resumed at tick ")[1].split(",")[0]))
    assert len(resumed_ticks) >= KILLS // 2, "too few kills landed to test recovery"
    assert mid_write >= 1, "no kill landed during a snapshot write"
    final = _start(config_path, tmp_path)
    out, err = final.communicate(timeout=120)
    assert final.returncode == 0, err.decode()
    summary = orjson.loads(out.decode().strip().splitlines()[-1])
    assert summary["tick"] == TARGET_TICK
    assert summary["state_hash"] == expected
    replayed = subprocess.run([sys.executable, str(ROOT / "main.py"), "replay", str(folder)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              check=False)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.startswith(f"OK: replayed ticks 1..{TARGET_TICK}")
