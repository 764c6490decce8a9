"""Users' own brains (tiers 1 and 2): registered in the configuration, run off the tick on
worker threads, their decisions logged as plan inputs so a replay needs none of their code;
brains that raise, hang or answer garbage never stop the world. Real modules on disk, real
threads, the real program for start-up and the console."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from agent_world.agents import Decision, SimpleBrain, observe, sensible_args
from agent_world.app import Session
from agent_world.cli.replay import run_replay
from agent_world.commands.dispatch import COMMANDS
from agent_world.config import Config, ConfigError
from agent_world.console.completion import WorldCompleter
from agent_world.persistence import open_world
from agent_world.userbrains.registry import BrainError, load_brains
from tests.helpers import add_agent, small_world
from tests.persistence_helpers import records, saving_config, session_with

MAIN = Path(__file__).resolve().parent.parent / "main.py"

BRAINS = '''
import time
from agent_world.agents import Brain, Decision, SimpleBrain

SEEN = {"spawned": [], "results": [], "events": 0}

class Forager(Brain):
    def on_spawn(self, agent_id):
        SEEN["spawned"].append(agent_id)
    def on_result(self, action, outcome):
        SEEN["results"].append((action, outcome))
    def on_event(self, event):
        SEEN["events"] += 1
    def decide(self, obs, actions):
        assert "eat" in actions and obs.me.id in SEEN["spawned"]
        return [Decision("wander", {"ticks": 4}, reasoning=f"looking around at {obs.tick}")]

class Resting(SimpleBrain):
    def decide_action(self, ctx):
        return "rest"

class Raises(Brain):
    def decide(self, obs, actions):
        raise RuntimeError("my bug")

class Garbage(Brain):
    def decide(self, obs, actions):
        return [{"action": "wander"}] if obs.tick % 2 else "wander"

class Huge(Brain):
    def decide(self, obs, actions):
        return [Decision("wander")] * 100_000

class Hangs(Brain):
    def decide(self, obs, actions):
        time.sleep(3)
        return Decision("rest")

class NotABrain:
    pass
'''


def brain_module(tmp_path: Path, name: str = "user_brains") -> Path:
    folder = tmp_path / "brains"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(BRAINS.replace("SEEN", f"SEEN_{name}"))
    return folder


def brains_config(tmp_path: Path, module: str, **registered: str) -> Config:
    folder = brain_module(tmp_path, module)
    return saving_config(tmp_path).replace(brains={
        "registered": {k: f"{module}:{v}" for k, v in registered.items()},
        "path": str(folder), "deadline_ms": 300, "min_gap_ticks": 2,
        "think_interval_ticks": 10})


def run(session: Session, ticks: int, until: Any = None, wall_s: float = 30.0) -> int:
    began = time.monotonic()

    async def drive() -> int:
        for n in range(ticks):
            await session.loop.run(max_ticks=1, paced=False)
            if until is not None and until():
                return n + 1
            await asyncio.sleep(0.001)  # room for the worker threads
            if time.monotonic() - began > wall_s:
                return n + 1
        return ticks

    return asyncio.run(drive())


def test_brains_decide_off_the_tick_and_a_replay_needs_none_of_their_code(
        tmp_path: Path) -> None:
    config = brains_config(tmp_path, "ub_replay", forager="Forager", resting="Resting")
    session = session_with(config, ("Zed", "forager"), ("Ida", "resting"))
    brains = session.brains
    assert brains is not None
    try:
        run(session, 2000, lambda: brains.metrics.applied >= 6)
        assert brains.metrics.applied >= 6 and brains.metrics.fallbacks == 0
        zed = session.world.population.find("Zed")
        assert zed is not None and zed in brains.minds
        debug = brains.describe_entity(zed)
        assert debug[0].startswith("brain forager: ") and "wander(ticks=4)" in debug[1]
        module = sys.modules["ub_replay"]
        seen = module.SEEN_ub_replay
        assert seen["spawned"] and seen["results"]  # hooks ran, on the workers
        final = session.world.state_hash()
    finally:
        session.close()
    plans = [r for r in records(tmp_path / "saves" / "w")
             if r.get("kind") == "input" and r.get("type") == "plan"]
    assert {p["source"] for p in plans} == {"brain"}
    assert {p["data"]["brain"] for p in plans} == {"forager", "resting"}
    assert any(p["data"]["thought"].startswith("looking around") for p in plans)
    assert any(p["data"]["actions"] == [{"name": "rest", "args": {}}] for p in plans)
    # Without the module, the recording replays exactly.
    (tmp_path / "brains" / "ub_replay.py").unlink()
    del sys.modules["ub_replay"]
    assert run_replay(tmp_path / "saves" / "w", config, to=None, playback=None) == 0
    resumed = open_world(config)
    assert resumed.world.state_hash() == final
    resumed.close()


def test_faulty_brains_fall_back_and_never_stop_the_world(tmp_path: Path) -> None:
    config = brains_config(tmp_path, "ub_faults", raises="Raises", garbage="Garbage",
                           huge="Huge", hangs="Hangs")
    session = session_with(config, ("Rai", "raises"), ("Gar", "garbage"), ("Hug", "huge"),
                           ("Han", "hangs"))
    brains = session.brains
    assert brains is not None
    try:
        kinds = {"raises exception", "garbage invalid", "huge invalid", "hangs timeout"}
        ran = run(session, 3000, lambda: kinds <= set(brains.stats()["faults"]))
        faults = brains.stats()["faults"]
        assert kinds <= set(faults), faults
        assert brains.metrics.applied == 0 and brains.metrics.fallbacks >= 4
        assert session.world.tick >= ran  # ticked on throughout
        han = session.world.population.find("Han")
        assert han is not None and brains.minds[han].errors >= 1
    finally:
        session.close()
    log = (tmp_path / "logs" / "world.log").read_text()
    for name, kind in (("Rai", "exception: RuntimeError: my bug"), ("Gar", "invalid: "),
                       ("Hug", "invalid: a plan of 100000 decisions")):
        lines = [line for line in log.splitlines() if f"{name}#" in line and "falls back" in line]
        assert len(lines) == 1 and kind in lines[0], lines  # one line per brain and kind
    assert "decide() has not returned" in log or "took over 300 ms" in log


def test_simple_brains_get_sensible_arguments() -> None:
    world = small_world(5)
    me = add_agent(world, "Brin", 5, 5)
    other = add_agent(world, "Elio", 7, 5)
    apple = world.spawn_item("apple", 1, 6, 6)
    for _ in range(6):
        world.step()
    obs = observe(world, me)
    assert sensible_args("attack", obs) == {"target": other}
    if any(i.id == apple for i in obs.items):
        assert sensible_args("pickup", obs) == {"target": apple}
    assert sensible_args("eat", obs) == {}

    class Picky(SimpleBrain):
        def decide_action(self, ctx: Any) -> str:
            return "trade_offer"

    with pytest.raises(Exception, match="cannot pick its arguments"):
        Picky().decide(obs, {})
    assert Decision("rest") == type("R", (SimpleBrain,), {
        "decide_action": lambda self, ctx: "rest"})().decide(obs, {})
    world.close()


def test_a_brain_that_cannot_be_used_stops_start_up_with_one_line(tmp_path: Path) -> None:
    folder = brain_module(tmp_path, "ub_start")
    for target, message in (("no_such_module:Ghost", "cannot import no_such_module"),
                            ("ub_start:Missing", "ub_start has no Missing"),
                            ("ub_start:NotABrain", "NotABrain is not a Brain")):
        config = saving_config(tmp_path).replace(brains={"registered": {"ghost": target},
                                                         "path": str(folder)})
        with pytest.raises(BrainError, match=message):
            load_brains(config.brains)
    with pytest.raises(ConfigError, match=r"brains\.Bad"):
        Config().replace(brains={"registered": {"Bad": "a:B"}})
    (tmp_path / "config.yaml").write_text(
        f"paths: {{saves: '{tmp_path / 'saves'}', logs: '{tmp_path / 'logs'}'}}\n"
        "brains: {ghost: 'no_such_module:Ghost'}\n")
    done = subprocess.run([sys.executable, str(MAIN), "--config", str(tmp_path / "config.yaml"),
                           "--headless", "--ticks", "5"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: brains.ghost = 'no_such_module:Ghost': cannot import no_such_module "
        "(ModuleNotFoundError: No module named 'no_such_module'); check the module name "
        "and --brains-path"]
    assert not (tmp_path / "saves").exists() or not any((tmp_path / "saves").iterdir())


def test_spawn_with_a_registered_brain_from_the_console(tmp_path: Path) -> None:
    folder = brain_module(tmp_path, "ub_console")
    (tmp_path / "config.yaml").write_text(
        f"paths: {{saves: '{tmp_path / 'saves'}', logs: '{tmp_path / 'logs'}'}}\n"
        "world: {size: [32, 32], starting_agents: 4, seed: 3}\n"
        "log: {echo: false}\n"
        "brains: {forager: 'ub_console:Forager'}\n")
    done = subprocess.run(
        [sys.executable, str(MAIN), "--config", str(tmp_path / "config.yaml"), "--headless",
         "--brains-path", str(folder)],
        input="/pause\n/spawn agent Zed brain=forager\n/spawn agent Eve brain=farmer\n"
              "/step 40\n/debug Zed\n/quit\n",
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "spawning agent 'Zed'" in out and "(brain=forager)" in out
    assert ("error: unknown brain 'farmer' (brains: builtin, llm, forager, policy:forager, "
            "policy:survivor, policy:trader)") in out
    assert "brain builtin" not in out.split("Zed#")[1].splitlines()[0]
    assert "brains: brain forager: " in out  # /debug shows the brain's state
    # Resumed without its brain, the agent thinks with its built-in one, and we are told.
    (tmp_path / "config.yaml").write_text(
        f"paths: {{saves: '{tmp_path / 'saves'}', logs: '{tmp_path / 'logs'}'}}\n"
        "world: {size: [32, 32], starting_agents: 4, seed: 3}\nlog: {echo: false}\n")
    done = subprocess.run(
        [sys.executable, str(MAIN), "--config", str(tmp_path / "config.yaml"), "--headless",
         "--ticks", "3"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert ("1 agent(s) have brain 'forager', which is not registered (brains: in the "
            "config); they use their built-in brains") in done.stderr


def test_a_mix_gives_a_new_worlds_agents_to_brains_and_completion_knows_them(
        tmp_path: Path) -> None:
    config = brains_config(tmp_path, "ub_mix", forager="Forager", resting="Resting")
    config = config.replace(world={"starting_agents": 8},
                            brains={"mix": {"forager": 0.5, "resting": 0.25}})
    session = session_with(config)
    try:
        counts: dict[str, int] = {}
        for _eid, row in session.world.agents():
            counts[row[0].brain] = counts.get(row[0].brain, 0) + 1
        assert counts == {"forager": 4, "resting": 2, "builtin": 2}
        brains = session.brains
        assert brains is not None and len(brains.minds) == 6
        run(session, 2000, lambda: brains.metrics.applied >= 6)
        assert brains.metrics.applied >= 6
        completer = WorldCompleter(session, COMMANDS)
        got = [c.text for c in completer.get_completions(
            Document("/spawn agent Zed brain="), CompleteEvent())]
        assert got == ["brain=builtin", "brain=llm", "brain=forager", "brain=resting",
                       "brain=policy:forager", "brain=policy:survivor", "brain=policy:trader"]
    finally:
        session.close()
    for bad, message in (({"mix": {"farmer": 0.5}}, "'farmer' is not a registered brain"),
                         ({"mix": {"forager": 0.7, "resting": 0.5}}, "add up to 1.2")):
        with pytest.raises(ConfigError, match=message):
            config.replace(brains=bad)
