"""Tier-3 mechanics without a model: ``reflect()`` on its schedule, the reasoning trace in
``/debug`` and the event log, faults in reflection counted apart from decisions; and brains
slow to import or to make, which delay nothing but their own agents."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from agent_world.config import Config
from agent_world.userbrains.registry import load_brains
from tests.persistence_helpers import records, saving_config
from tests.test_user_brains import run, session_with

BRAINS = '''
import time
from agent_world.agents import Brain, Decision, WindowMemory

time.sleep(0.5)  # a module slow to import (a model loaded at import, say)

class Reflects(Brain):
    reflect_every_ticks = 10
    def __init__(self):
        self.memory = WindowMemory(10)
        self.reflections = 0
    def on_event(self, event):
        self.memory.store(str(event.get("type")), tick=event["tick"], kind="event")
    def decide(self, obs, actions):
        self.trace(f"I hold {len(self.memory)} memories")
        self.trace(f"reflected {self.reflections} times")
        return Decision("wander", {"ticks": 3})
    def reflect(self):
        self.reflections += 1
        self.trace("thinking it over")
        if self.reflections == 2:
            raise ValueError("lost in thought")

class SlowToMake(Brain):
    def __init__(self):
        time.sleep(1.0)
    def decide(self, obs, actions):
        return Decision("rest", {"ticks": 3})
'''


def tier_config(tmp_path: Path, module: str, **registered: str) -> Config:
    folder = tmp_path / "brains"
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text(BRAINS)
    return saving_config(tmp_path).replace(brains={
        "registered": {k: f"{module}:{v}" for k, v in registered.items()},
        "path": str(folder), "deadline_ms": 300, "min_gap_ticks": 2,
        "think_interval_ticks": 6})


def test_reflection_runs_on_schedule_and_the_trace_reaches_debug_and_the_log(
        tmp_path: Path) -> None:
    config = tier_config(tmp_path, "bt_reflect", reflects="Reflects")
    session = session_with(config, ("Refla", "reflects"))
    brains = session.brains
    assert brains is not None
    eid = session.world.population.find("Refla")
    try:
        run(session, 4000, lambda: ("reflects", "reflect exception") in brains.faults
            and brains.metrics.applied >= 6)
        brain = next(iter(brains._brains.values()))
        assert brain.reflections >= 2 and len(brain.memory) > 0
        assert brains.faults == {("reflects", "reflect exception"): 1}
        assert brains.metrics.fallbacks == 0  # a reflection's fault costs no decision
        eid = session.world.population.find("Refla")
        assert eid is not None
        debug = brains.describe_entity(eid)
        assert any(line.startswith("reasoning trace (asked at t=") for line in debug), debug
        assert any("memories" in line for line in debug)
    finally:
        session.close()
    plans = [r["data"] for r in records(tmp_path / "saves" / "w")
             if r.get("kind") == "input" and r.get("type") == "plan"]
    assert plans and all(p["trace"][0].startswith("I hold") for p in plans)
    log = (tmp_path / "logs" / "world.log").read_text()
    assert log.count("reflect exception: ValueError: lost in thought") == 1


def test_a_brain_slow_to_import_or_to_make_delays_only_its_own_agent(tmp_path: Path) -> None:
    config = tier_config(tmp_path, "bt_slow", slow="SlowToMake")
    began = time.perf_counter()
    classes = load_brains(config.brains)  # the import's half second is spent here, once
    assert time.perf_counter() - began >= 0.5 and "slow" in classes
    session = session_with(config, ("Slowa", "slow"))
    brains = session.brains
    assert brains is not None
    try:
        # Making the brain takes a second: its first decision is given up at 300 ms (the
        # world goes on), and once made, the brain decides within its deadline.
        ticks = run(session, 20_000, lambda: brains.metrics.applied >= 1)
        assert brains.metrics.applied >= 1, brains.stats()
        assert ("slow", "timeout") in brains.faults
        assert ticks > 10  # the world ticked on while the brain was being made
    finally:
        session.close()
    sys.modules.pop("bt_slow", None)
