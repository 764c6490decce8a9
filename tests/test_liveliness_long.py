"""The default world stays alive over a long run: 200,000 ticks (about 5.5 hours of world
time) on three seeds, run as ``python main.py --headless`` runs it (save folder, sandbox,
angel, no LLM), judged by the liveliness report's checks in windows of 50,000 ticks.

Slow (a minute or so per seed), and part of the default run all the same: this is the test
that a world a person leaves running does not degenerate. The million-tick version, with
ticks per second per window, is ``python -m bench --only liveliness``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import MAIN, base_env, write_config

TICKS = 200_000
WINDOW = 50_000


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", [913, 4271, 2026])
def test_the_default_world_stays_lively_for_200000_ticks(tmp_path: Path, seed: int) -> None:
    config = write_config(tmp_path, {"log": {"echo": False}})
    run = subprocess.run(
        [sys.executable, str(MAIN), "--config", str(config), "--headless", "--seed",
         str(seed), "--ticks", str(TICKS)],
        cwd=tmp_path, env=base_env(), capture_output=True, text=True, timeout=850,
        stdin=subprocess.DEVNULL, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    report = subprocess.run(
        [sys.executable, str(MAIN), "report", "default", "--config", str(config),
         "--window", str(WINDOW), "--check", "--json"],
        cwd=tmp_path, env=base_env(), capture_output=True, text=True, timeout=300,
        check=False)
    assert report.returncode in (0, 1), report.stderr
    data = json.loads(report.stdout)
    violated = [c for c in data["checks"] if c["status"] == "violated"]
    assert not violated, "\n".join(f"{c['check']} (ticks {c['ticks']}): {c['detail']}"
                                   for c in violated)
    assert report.returncode == 0
    # The checks that need activity to judge must have had it: none may hide as skipped.
    judged = {c["check"] for c in data["checks"] if c["status"] == "passed"}
    for needed in ("personalities_alive", "richest_gold_share", "carrying_capacity",
                   "trade_acceptance", "speech_distinct", "casts_per_personality",
                   "failed_actions", "population"):
        assert needed in judged, f"{needed!r} was never judged"
