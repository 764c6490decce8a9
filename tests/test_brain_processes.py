"""Brains in worker processes (``brains.processes``): they decide like brains on threads,
keep their state between decisions, and one that hangs is stopped at the deadline and its
process restarted, while the world runs on. Real processes, real modules on disk."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_world.cli.replay import run_replay
from agent_world.config import Config
from agent_world.persistence import open_world
from agent_world.userbrains.registry import BrainError, load_brains
from tests.persistence_helpers import records, saving_config
from tests.test_user_brains import run, session_with

BRAINS = '''
import os
import time
from agent_world.agents import Brain, Decision, LLMBrain

class Counter(Brain):
    """Keeps a count across decisions: it lives in one process."""
    def __init__(self):
        self.count = 0
    def decide(self, obs, actions):
        self.count += 1
        self.trace(f"pid {os.getpid()} decision {self.count}")
        total = sum(i * i for i in range(20_000))  # a little CPU work
        return Decision("wander", {"ticks": 3}, reasoning=f"{self.count} {total % 7}")

class HangsOnce(Brain):
    """Its second decision never returns, in whichever process it is."""
    def __init__(self):
        self.count = 0
    def decide(self, obs, actions):
        self.count += 1
        if self.count == 2:
            time.sleep(3600)
        return Decision("rest", {"ticks": 3}, reasoning=f"pid {os.getpid()}")

class Crashes(Brain):
    def decide(self, obs, actions):
        os._exit(3)

class Thinker(LLMBrain):
    pass
'''


def process_config(tmp_path: Path, module: str, **brains: tuple[str, int]) -> Config:
    folder = tmp_path / "brains"
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text(BRAINS)
    return saving_config(tmp_path).replace(brains={
        "registered": {k: f"{module}:{v[0]}" for k, v in brains.items()},
        "processes": {k: v[1] for k, v in brains.items()},
        "path": str(folder), "deadline_ms": 2000, "min_gap_ticks": 2,
        "think_interval_ticks": 6})


def test_brains_in_processes_decide_keep_their_state_and_replay_without_them(
        tmp_path: Path) -> None:
    config = process_config(tmp_path, "bp_count", counter=("Counter", 2))
    session = session_with(config, ("Proca", "counter"), ("Procb", "counter"), ("Procc", "counter"))
    brains = session.brains
    assert brains is not None
    try:
        def each_decided() -> bool:
            minds = brains.minds.values()
            return len(minds) == 3 and all(mind.decisions >= 3 for mind in minds)

        run(session, 5000, each_decided)
        assert each_decided() and not brains.faults, brains.stats()
        assert brains.stats()["processes"] == "counter 2 (0 restarted)"
        ada = session.world.population.find("Proca")
        assert ada is not None
        trace = "\n".join(brains.describe_entity(ada))
        assert "reasoning trace" in trace and f"pid {__import__('os').getpid()}" not in trace
        final = session.world.state_hash()
    finally:
        session.close()
    plans = [r["data"] for r in records(tmp_path / "saves" / "w")
             if r.get("kind") == "input" and r.get("type") == "plan"]
    counts: dict[int, list[int]] = {}
    for plan in plans:
        counts.setdefault(plan["agent"], []).append(int(plan["thought"].split()[0]))
    # Each brain counted its own decisions, 1, 2, 3 ...: one object per agent, kept.
    assert len(counts) == 3
    assert all(seen == list(range(1, len(seen) + 1)) for seen in counts.values()), counts
    (tmp_path / "brains" / "bp_count.py").unlink()
    sys.modules.pop("bp_count", None)
    assert run_replay(tmp_path / "saves" / "w", config, to=None, playback=None) == 0
    resumed = open_world(config)
    assert resumed.world.state_hash() == final
    resumed.close()


def test_a_hanging_or_crashing_brain_process_is_replaced_and_the_world_runs_on(
        tmp_path: Path) -> None:
    config = process_config(tmp_path, "bp_hang", hangs=("HangsOnce", 1),
                            crashes=("Crashes", 1))
    config = config.replace(brains={"deadline_ms": 300})
    session = session_with(config, ("Hangsy", "hangs"), ("Crashy", "crashes"))
    brains = session.brains
    assert brains is not None
    try:
        run(session, 2, lambda: False)  # the spawns apply
        han = session.world.population.find("Hangsy")
        assert han is not None

        def recovered() -> bool:
            # Hangsy decides, hangs (its process killed at 300 ms), then decides again in
            # a new one; Crashy's process dies and is replaced.
            mind = brains.minds.get(han)
            return (mind is not None and mind.decisions >= 2
                    and brains.pools["crashes"].restarts >= 1
                    and brains.pools["hangs"].restarts >= 1)

        run(session, 200_000, recovered, wall_s=60.0)
        assert recovered(), brains.stats()
        faults = brains.stats()["faults"]
        assert "hangs timeout" in faults and "crashes exception" in faults, faults
        assert "hangs 1 (" in brains.stats()["processes"]
    finally:
        session.close()
    log = (tmp_path / "logs" / "world.log").read_text()
    assert "its process died" in log


def test_an_llm_brain_is_not_run_in_a_process(tmp_path: Path) -> None:
    config = process_config(tmp_path, "bp_llm", thinker=("Thinker", 1))
    with pytest.raises(BrainError, match="waits on the network"):
        load_brains(config.brains, llm=True)
