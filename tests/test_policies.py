"""Policies: agents' brains written as sandboxed code (docs/policies.md).

Real files on disk, the real sandbox (gate, RestrictedPython, step budget, worker
processes), real small worlds and the real program for the command line; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_world.agents import Observation, Self
from agent_world.app import Session
from agent_world.cli.replay import run_replay
from agent_world.config import Config, ConfigError
from agent_world.contract.brains import BrainFault
from agent_world.persistence import open_world
from agent_world.persistence.minds import read_minds
from agent_world.policies import (
    PolicyBrain,
    PolicyChecker,
    PolicyError,
    PolicyRunner,
    available_policies,
    example_policies,
    load_policy,
    policy_brain,
    read_policy,
)
from agent_world.policies.check import Sample, sample_observations
from agent_world.policies.runner import policy_seed
from agent_world.sandbox.gate import ABILITY, POLICY, GateError, gate
from agent_world.userbrains.registry import BrainError, load_brains
from tests.persistence_helpers import records, saving_config, session_with

MAIN = Path(__file__).resolve().parent.parent / "main.py"
EXAMPLES = Path(__file__).resolve().parent.parent / "agent_world" / "policies" / "examples"

HEAD = 'NAME = "{name}"\nDESCRIPTION = "A test policy."\nVERSION = 1\n\n\n'


def policy_source(name: str, *body: str, head: str = "") -> str:
    """A policy file: metadata, then ``head`` (constants, helpers), then decide's body."""
    return (HEAD.format(name=name) + head + "def decide(obs, memory):\n"
            + "".join(f"    {line}\n" for line in body))


COUNTER = policy_source(
    "counter",
    "n = memory.get('n', 0) + 1",
    "return {'action': 'idle', 'args': {'ticks': 5}, 'memory': {'n': n}, "
    "'reasoning': f'call {n}'}")
DICE = policy_source(
    "dice",
    "ticks = rand_int(MIN_TICKS, MAX_TICKS)",
    "if obs['items'] and rand_chance(0.5):",
    "    return {'action': 'pickup', 'args': {'target': obs['items'][0]['id']}}",
    "return {'action': 'wander', 'args': {'ticks': ticks}, 'memory': memory}",
    head="MIN_TICKS = 5\nMAX_TICKS = 40\n\n\n")
SPINNER = policy_source("spinner", "while True:", "    pass")
LIAR = policy_source("liar", "return {'action': 'fly', 'args': {'to': 'the moon'}}")
HOARDER = policy_source("hoarder", "return {'action': 'idle', 'memory': {'junk': 'x' * 5000}}")
RAISER = policy_source("raiser", "return {'action': 'idle'}['nothing']")


def drive(session: Session, ticks: int) -> None:
    """Run ``ticks`` ticks, waiting after each until every decision asked for is back (as
    an evaluation episode does), so that decisions land at the same ticks on any machine."""

    async def run() -> None:
        for _ in range(ticks):
            await session.loop.run(max_ticks=1, paced=False)
            began = time.perf_counter()
            while (any(part.thinking() for part in session.thinking_parts())  # noqa: ASYNC110
                   and time.perf_counter() - began < 30):
                await asyncio.sleep(0.0005)

    asyncio.run(run())


def policies_config(tmp_path: Path, *sources: str, **brains: Any) -> Config:
    folder = tmp_path / "policies"
    folder.mkdir(parents=True, exist_ok=True)
    for source in sources:
        name = source.split('"')[1]
        (folder / f"{name}.py").write_text(source)
    settings: dict[str, Any] = {"policies": str(folder), "deadline_ms": 2000,
                                "min_gap_ticks": 2, "think_interval_ticks": 10}
    settings.update(brains)
    return saving_config(tmp_path).replace(brains=settings)


@pytest.fixture(scope="module")
def runner() -> Iterator[PolicyRunner]:
    cfg = Config()
    policy_runner = PolicyRunner(cfg.sandbox, steps=20_000, memory_bytes=4096, timeout_s=10.0)
    yield policy_runner
    policy_runner.close()


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return sample_observations(Config())


# -- the contract: gate and metadata -------------------------------------------------------------


def test_the_examples_are_policies_parameterised_by_literal_constants() -> None:
    policies = {p.name: p for p in example_policies()}
    assert sorted(policies) == ["forager", "survivor", "trader"]
    for policy in policies.values():
        meta = policy.meta
        assert meta.version == 1 and meta.parent is None and policy.origin == "builtin"
        assert policy.brain == f"policy:{policy.name}"
        numbers = [v for v in meta.constants.values() if type(v) in (int, float)]
        assert len(numbers) >= 5, meta.constants  # what a generator will change
        file = EXAMPLES / f"{policy.name}.py"
        assert read_policy(file).source == policy.source


@pytest.mark.parametrize(("source", "message"), [
    (policy_source("x1", "return {'action': 'idle'}").replace('VERSION = 1\n', ''),
     "missing metadata: VERSION"),
    (HEAD.format(name="nod") + "def decide(obs):\n    return {}\n",
     "decide takes exactly two parameters, obs and memory"),
    (HEAD.format(name="nod") + "def act(obs, memory):\n    return {}\n",
     "a policy defines def decide(obs, memory)"),
    (policy_source("low", "return {}", head="speed = 3\n"),
     "top-level name 'speed' is neither metadata"),
    (policy_source("imp", "return {}", head="import os\n"), "Import is not allowed in a policy"),
    (policy_source("twice", "return {}", head="X = 1\nX = 2\n"), "X is assigned twice"),
    (policy_source("calls", "return {}", head="X = len([1])\n"), "X must be a literal value"),
    (policy_source("dunder", "return {'action': obs.__class__}"), "starts with '_'"),
    (policy_source("getter", "return getattr(obs, 'me')"),
     "name 'getattr' is not available to policies"),
    (policy_source("fmt", "return '{0.__class__}'.format(obs)"),
     "attribute 'format' is not available to policies"),
    (policy_source("view", "return obs.keys().mapping"),
     "attribute 'mapping' is not available; policies may use"),
    (policy_source("glob", "global X", "return {}"), "Global is not allowed in a policy"),
    (policy_source("clash", "return {}", head="def X():\n    return 1\n\n\nX = 1\n"),
     "X is both a function and a constant"),
])
def test_the_gate_refuses_what_breaks_the_policy_contract(source: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy(source)
    assert message in str(caught.value), caught.value
    assert caught.value.category == "gate"


def test_metadata_problems_are_one_line_each() -> None:
    source = ('NAME = "Bad Name"\nDESCRIPTION = ""\nVERSION = 0\nPARENT = 7\n\n\n'
              "def decide(obs, memory):\n    return {'action': 'idle'}\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(source)
    problems = caught.value.problems
    assert caught.value.category == "metadata" and len(problems) == 4
    assert [p.split(" ")[0] for p in problems] == ["NAME", "DESCRIPTION", "VERSION", "PARENT"]
    child = load_policy(policy_source("forager_b", "return {'action': 'idle'}")
                        .replace("VERSION = 1", "VERSION = 3\nPARENT = 'forager@1'"))
    assert (child.meta.version, child.meta.parent) == (3, "forager@1")


def test_abilities_and_policies_keep_their_own_contracts() -> None:
    ability = (EXAMPLES.parent.parent / "abilities" / "heal.py").read_text()
    gate(ability)  # unchanged for abilities
    with pytest.raises(GateError, match=r"a policy defines def decide\(obs, memory\)"):
        gate(ability, POLICY)
    with pytest.raises(GateError, match="'VERSION' is not metadata"):
        gate(COUNTER, ABILITY)
    helpers = policy_source("helper", "return pick(obs)",
                            head="def pick(obs):\n    return {'action': 'idle'}\n\n\n")
    assert gate(helpers, POLICY).values["NAME"] == "helper"  # helpers at the top level


# -- running in the sandbox -----------------------------------------------------------------------


def test_the_examples_pass_policy_check_with_their_step_figures(samples: list[Sample]) -> None:
    with PolicyChecker(Config()) as checker:
        for policy in example_policies():
            report = checker.check(policy.source, origin="builtin", samples=samples)
            assert report.lines() == ["accepted"], report.problems
            assert len(report.runs) == 6 and report.step_budget == 20_000
            assert 0 < report.max_steps < 2000, report.details()
            assert all(run.outcome.ok for run in report.runs)
            details = "\n".join(report.details())
            assert f"{policy.name} v1 (parent none)" in details
            assert "steps: at most" in details and "memory" in details


@pytest.mark.parametrize(("source", "kind", "reason"), [
    (SPINNER, "limit", "step budget of 20000 steps spent"),
    (policy_source("big", "x = [0] * 10 ** 8", "return {'action': 'idle'}"), "limit",
     "repeating 1 items 100000000 times"),
    (policy_source("hog", "x = []", "for i in range(10 ** 6):", "    x.append('a' * 500)",
                   "return {'action': 'idle'}"), "limit",
     "allocation budget spent (1000000 characters and list items per policy call)"),
    (policy_source("power", "return {'action': 'idle', 'args': {'ticks': 10 ** 10 ** 6}}"),
     "limit", "to the power 1000000"),
    (policy_source("deep", "def down(n):", "    return down(n + 1)", "return down(0)"),
     "exception", "recursion too deep"),
    (RAISER, "exception", "raised KeyError: 'nothing'"),
    (policy_source("leak", "return {'action': 'say', 'args': {'text': str(decide)}}"),
     "exception", "str() of a function is not available to policies"),
    (policy_source("caught", "try:", "    while True:", "        pass",
                   "except Exception:", "    return {'action': 'idle'}"),
     "limit", "step budget"),
    (LIAR, "invalid", "unknown action 'fly'"),
    (policy_source("noarg", "return {'action': 'attack'}"), "invalid",
     "attack: missing argument 'target'"),
    (policy_source("list", "return ['idle']"), "invalid", "decide must return a dict"),
    (policy_source("extra", "return {'action': 'idle', 'plan': []}"), "invalid",
     "decide returned the key 'plan'"),
    (HOARDER, "invalid", "memory holds a text of 5000 characters; at most 4096"),
    (policy_source("wide", "return {'action': 'idle', 'memory': {str(i): i for i in "
                           "range(1000)}}"), "invalid", "bytes of JSON; at most 4096"),
    (policy_source("setty", "return {'action': 'idle', 'memory': {'s': {1, 2}}}"),
     "invalid", "memory holds a set"),
    (policy_source("tupled", "return {'action': 'idle', 'memory': {'t': (1, 2)}}"),
     "invalid", "memory holds a tuple"),
    (policy_source("intkey", "return {'action': 'idle', 'memory': {1: 2}}"),
     "invalid", "memory has a key of type int; keys must be text"),
    (policy_source("nomem", "return {'action': 'idle', 'memory': None}"),
     "invalid", "memory must be a dict, got a None"),
])
def test_hostile_or_broken_code_is_stopped_with_a_clear_reason(
        runner: PolicyRunner, samples: list[Sample], source: str, kind: str,
        reason: str) -> None:
    policy = load_policy(source)
    obs = samples[0].observations[0]
    outcome = runner.decide(policy, obs.to_dict(), {"kept": 1}, seed=1)
    assert (outcome.ok, outcome.kind) == (False, kind), outcome
    assert reason in outcome.reason, outcome.reason
    assert "0x" not in outcome.reason  # never an address
    # The runner serves the next call as before.
    good = runner.decide(load_policy(COUNTER), obs.to_dict(), {}, seed=1)
    assert good.ok and good.memory == {"n": 1}


def test_a_call_past_its_wall_clock_time_is_killed_and_the_worker_replaced(
        samples: list[Sample]) -> None:
    slow = load_policy(policy_source("slow", "for i in range(3000):", "    for j in range(3000):",
                                     "        pass", "return {'action': 'idle'}"))
    runner = PolicyRunner(Config().sandbox, steps=10_000_000, memory_bytes=4096,
                          timeout_s=0.2)
    try:
        obs = samples[0].observations[0].to_dict()
        outcome = runner.decide(slow, obs, {}, seed=1)
        assert (outcome.ok, outcome.kind) == (False, "timeout"), outcome
        assert "wall-clock" in outcome.reason
        assert runner.decide(load_policy(COUNTER), obs, {}, seed=1, timeout_s=5.0).ok
        assert runner.stats()["kills"] == 1
    finally:
        runner.close()


def test_policy_check_refuses_what_would_time_out_in_a_world(samples: list[Sample]) -> None:
    """A list comparison looks at every item in C: within the default budget it stops on
    its steps (it was one step for 60,000 comparisons, and timed out in every world); with a
    budget large enough to finish, a decision that takes more than a fifth of a world's time
    for it fails as too slow."""
    compare = load_policy(policy_source(
        "comparer", "xs = [0] * 60000", "n = 0", "for i in range(20000):",
        "    if xs == xs[:]:", "        n = n + 1", "return {'action': 'idle'}")).source
    with PolicyChecker(Config()) as checker:
        report = checker.check(compare, samples=samples[:1])
    assert report.verdict == "failed" and report.category == "dry-run"
    assert "limit: step budget of 20000 steps spent" in report.problems[0]
    slow = load_policy(policy_source(
        "ponder", "x = 0", "for i in range(1000000):", "    x = x + i",
        "return {'action': 'idle'}")).source
    roomy = Config().replace(brains={"policy_steps": 5_000_000})
    with PolicyChecker(roomy) as checker:
        report = checker.check(slow, samples=samples[:1])
        quick = checker.check(COUNTER, samples=samples[:1])
    assert report.verdict == "failed" and report.category == "slow", report.problems
    assert "too slow" in report.problems[0] and "must take under a fifth of that (80 ms)" \
        in report.problems[0]
    assert quick.accepted, quick.problems


def test_memory_is_carried_from_call_to_call_and_a_fault_keeps_it(
        runner: PolicyRunner, samples: list[Sample]) -> None:
    brain = policy_brain(load_policy(COUNTER))()
    assert isinstance(brain, PolicyBrain)
    brain.runner = runner
    sample = samples[0]
    brain.on_spawn(sample.agent)
    for n in (1, 2, 3):
        decision = brain.decide(sample.observations[0], {})
        assert decision.reasoning == f"call {n}" and brain.memory == {"n": n}
    assert "memory 7 of 4096 bytes" in "\n".join(brain.describe())
    # The dry runs of policy check carry each agent's memory too.
    with PolicyChecker(Config(), runner=runner) as checker:
        report = checker.check(COUNTER, samples=samples)
    thoughts = [run.outcome.decision["reasoning"] for run in report.runs]
    assert thoughts == ["call 1"] * 3 + ["call 2"] * 3
    # A faulted call changes nothing.
    hoarder = policy_brain(load_policy(HOARDER))()
    hoarder.runner = runner
    hoarder.memory = {"kept": True}
    with pytest.raises(BrainFault, match="at most 4096") as caught:
        hoarder.decide(sample.observations[0], {})
    assert caught.value.kind == "invalid" and hoarder.memory == {"kept": True}


def test_the_same_call_draws_the_same_random_numbers(runner: PolicyRunner,
                                                     samples: list[Sample]) -> None:
    dice = load_policy(DICE)
    obs = samples[1].observations[0]
    first = [runner.decide(dice, obs.to_dict(), {}, seed=policy_seed(obs.me.id, t)).decision
             for t in range(12)]
    again = [runner.decide(dice, obs.to_dict(), {}, seed=policy_seed(obs.me.id, t)).decision
             for t in range(12)]
    assert first == again and len({str(d) for d in first}) > 1


# -- a policy is a brain ----------------------------------------------------------------------


def test_policy_agents_decide_off_the_tick_and_replay_without_the_policies(
        tmp_path: Path) -> None:
    config = policies_config(tmp_path, COUNTER)
    session = session_with(config, ("Fora", "policy:forager"), ("Trad", "policy:trader"),
                           ("Surv", "policy:survivor"), ("Coun", "policy:counter"))
    brains = session.brains
    assert brains is not None
    try:
        drive(session, 300)
        assert brains.metrics.applied >= 30 and brains.metrics.fallbacks == 0, brains.stats()
        stats = brains.stats()
        assert "policy sandbox" in stats and stats["faults"] == "none"
        counter = session.world.population.find("Coun")
        assert counter is not None
        debug = "\n".join(brains.describe_entity(counter))
        assert "policy counter v1" in debug and "in 1 of 20000 steps" in debug, debug
        final = session.world.state_hash()
    finally:
        session.close()
    plans = [r["data"] for r in records(tmp_path / "saves" / "w")
             if r.get("kind") == "input" and r.get("type") == "plan"]
    by_brain: dict[str, list[dict[str, Any]]] = {}
    for plan in plans:
        by_brain.setdefault(plan["brain"], []).append(plan)
    assert set(by_brain) == {"policy:forager", "policy:trader", "policy:survivor",
                             "policy:counter"}
    thoughts = [p["thought"] for p in by_brain["policy:counter"]]
    assert thoughts == [f"call {n}" for n in range(1, len(thoughts) + 1)]  # memory kept
    foraged = {a["name"] for p in by_brain["policy:forager"] for a in p["actions"]}
    assert foraged & {"pickup", "use", "eat"}, foraged
    # The recording replays exactly without any policy file (decisions are inputs).
    for file in (tmp_path / "policies").iterdir():
        file.unlink()
    assert run_replay(tmp_path / "saves" / "w", config, to=None, playback=None) == 0
    resumed = open_world(config)
    assert resumed.world.state_hash() == final
    resumed.close()


def test_the_same_seed_and_policies_give_the_same_world(tmp_path: Path) -> None:
    hashes = []
    other = DICE.replace("MAX_TICKS = 40", "MAX_TICKS = 90")  # another constant
    for run, dice in (("a", DICE), ("b", DICE), ("c", other)):
        # Agents' metrics hold each decision's wall-clock latency (this machine's, logged
        # with the decision for replays); everything else must be the same.
        config = policies_config(tmp_path / run, dice).replace(
            persistence={"enabled": False}, world={"seed": 11},
            game={"agent_metrics": False})
        session = session_with(config, ("Dice", "policy:dice"), ("Fora", "policy:forager"),
                               ("Trad", "policy:trader"))
        try:
            drive(session, 250)
            assert session.brains is not None and session.brains.metrics.applied >= 20
            hashes.append(session.world.state_hash())
        finally:
            session.close()
    assert hashes[0] == hashes[1]
    assert hashes[2] != hashes[0]


def test_faulty_policies_fall_back_count_their_faults_and_never_stop_the_world(
        tmp_path: Path) -> None:
    config = policies_config(tmp_path, SPINNER, LIAR, HOARDER, RAISER)
    spawns = (("Spin", "policy:spinner"), ("Lia", "policy:liar"), ("Hoa", "policy:hoarder"),
              ("Rai", "policy:raiser"))
    session = session_with(config, *spawns)
    brains = session.brains
    assert brains is not None
    try:
        drive(session, 120)
        faults = brains.stats()["faults"]
        assert set(faults) == {"policy:spinner limit", "policy:liar invalid",
                               "policy:hoarder invalid", "policy:raiser exception"}, faults
        assert brains.metrics.applied == 0 and session.world.tick >= 120
        world = session.world
        for name, _brain in spawns:
            eid = world.population.find(name)
            assert eid is not None and world.metrics.of(eid)["decision_faults"] >= 2
        spin = world.population.find("Spin")
        assert spin is not None
        debug = "\n".join(brains.describe_entity(spin))
        assert "last fault" in debug and "step budget of 20000 steps spent" in debug, debug
    finally:
        session.close()
    log = (tmp_path / "logs" / "world.log").read_text()
    lines = [line for line in log.splitlines() if "falls back to its built-in brain" in line]
    assert len(lines) == 4, lines  # one line per policy and kind of fault
    assert any("Spin#" in line and "limit: step budget" in line for line in lines)


def test_memory_is_saved_with_the_world_and_a_resumed_world_remembers_it(
        tmp_path: Path) -> None:
    config = policies_config(tmp_path, COUNTER)
    session = session_with(config, ("Coun", "policy:counter"))
    try:
        drive(session, 60)
    finally:
        session.close()
    folder = tmp_path / "saves" / "w"
    saved = read_minds(folder / "minds", 10**9)
    (record,) = saved.records.values()
    assert record["brain"] == "policy:counter" and record["kind"] == "brain"
    counted = record["state"]["memory"]["n"]
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder, resumed=True,
                      brains=load_brains(config.brains))
    try:
        drive(session, 30)
    finally:
        session.close()
    lines = [r for r in records(folder) if (r.get("kind") == "input" and r.get("type") == "plan")
             or (r.get("kind") == "marker" and r.get("type") == "resume")]
    restart = next(i for i, r in enumerate(lines) if r["kind"] == "marker")
    before = [r["data"]["thought"] for r in lines[:restart]]
    after = [r["data"]["thought"] for r in lines[restart + 1:]]
    assert before == [f"call {n}" for n in range(1, len(before) + 1)]
    # The count goes on from the memory saved with the last snapshot (a decision answered
    # after the last tick counted, though it never reached the world).
    assert counted in (len(before), len(before) + 1)
    assert after == [f"call {n}" for n in range(counted + 1, counted + 1 + len(after))]


def test_policies_are_registered_brains_from_the_examples_and_the_folder(
        tmp_path: Path) -> None:
    config = policies_config(tmp_path, COUNTER)
    classes = load_brains(config.brains)
    assert {"policy:forager", "policy:trader", "policy:survivor",
            "policy:counter"} <= set(classes)
    assert issubclass(classes["policy:counter"], PolicyBrain)
    assert set(available_policies(None)) == {"forager", "trader", "survivor"}
    # A mix gives a new world's agents to a policy.
    mixed = config.replace(world={"starting_agents": 8},
                           brains={"mix": {"policy:forager": 0.5}})
    session = session_with(mixed)
    try:
        given = [row[0].brain for _eid, row in session.world.agents()]
        assert given.count("policy:forager") == 4
        assert session.brains is not None and len(session.brains.minds) == 4
        assert session.brains.names()[-3:] == ["policy:forager", "policy:survivor",
                                               "policy:trader"]
        drive(session, 30)
        assert session.brains.metrics.applied >= 4
    finally:
        session.close()


@pytest.mark.parametrize(("files", "brains", "message"), [
    ({"broken.py": "NAME = 'broken'\n"}, {}, "broken.py: a policy defines def decide"),
    ({"a.py": COUNTER, "b.py": COUNTER}, {}, "a policy named 'counter' exists already"),
    ({"forager.py": policy_source("forager", "return {'action': 'idle'}")}, {},
     "(a built-in example); give this one another NAME"),
    ({}, {"mix": {"policy:nobody": 0.5}}, "brains.mix: no policy named 'nobody'"),
])
def test_a_policy_that_cannot_be_used_stops_start_up_with_one_line(
        tmp_path: Path, files: dict[str, str], brains: dict[str, Any], message: str) -> None:
    folder = tmp_path / "policies"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    config = Config().replace(brains={"policies": str(folder), **brains})
    with pytest.raises(BrainError) as caught:
        load_brains(config.brains)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_brain_names_are_checked_where_they_are_given() -> None:
    with pytest.raises(ConfigError, match="is a policy, which runs in the sandbox"):
        Config().replace(brains={"mix": {"policy:forager": 0.1},
                             "processes": {"policy:forager": 1}})
    with pytest.raises(ConfigError, match="a brain's name is 2-32 of a-z"):
        Config().replace(brains={"registered": {"policy:x1": "m:A"}})
    with pytest.raises(ConfigError, match="'policy:Bad' is not a registered brain"):
        Config().replace(brains={"mix": {"policy:Bad": 0.5}})


# -- the command line -----------------------------------------------------------------------


def test_policy_check_and_list_on_the_command_line(tmp_path: Path) -> None:
    def main(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(MAIN), "policy", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=False)

    done = main("check", str(EXAMPLES / "forager.py"))
    assert (done.returncode, done.stdout) == (0, "accepted\n"), done.stderr
    assert "forager v1 (parent none)" in done.stderr
    assert "dry run 6 (" in done.stderr and "steps: at most" in done.stderr
    (tmp_path / "spin.py").write_text(SPINNER)
    done = main("check", "spin.py")
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 1
    assert done.stdout.startswith("failed: limit: step budget of 20000 steps spent (6 of 6 "
                                  "dry runs, the first 1: ")
    (tmp_path / "sneaky.py").write_text(policy_source("sneaky", "return obs.__class__"))
    done = main("check", "sneaky.py")
    assert (done.returncode, done.stdout) == (
        1, "rejected: line 7: attribute '__class__' starts with '_'\n")
    done = main("check", "nowhere.py")
    assert done.returncode == 2 and "error: cannot read nowhere.py" in done.stderr
    # A file of the policies folder (./policies by default) is listed, and checked as itself.
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "counter.py").write_text(COUNTER)
    done = main("list")
    assert done.returncode == 0
    assert [line.split()[0] for line in done.stdout.splitlines()] == [
        "policy:forager", "policy:survivor", "policy:trader", "policy:counter"]
    assert main("check", "policies/counter.py").returncode == 0
    (tmp_path / "copy.py").write_text(COUNTER.replace("call {n}", "n={n}"))
    done = main("check", "copy.py")
    assert done.stdout == "rejected: a policy named 'counter' exists already\n"


def test_spawn_a_policy_agent_from_the_console(tmp_path: Path) -> None:
    # The world never waits for a brain, and a stepped tick of this world takes about a
    # millisecond: 300 ticks leave the policy's sandbox worker, started at its first
    # request, time to start and answer on a loaded machine (50 were not always enough).
    (tmp_path / "config.yaml").write_text(
        f"paths: {{saves: '{tmp_path / 'saves'}', logs: '{tmp_path / 'logs'}'}}\n"
        "world: {size: [32, 32], starting_agents: 4, seed: 3}\n"
        "log: {echo: false}\nweb: {enabled: false}\n")
    done = subprocess.run(
        [sys.executable, str(MAIN), "--config", str(tmp_path / "config.yaml"), "--headless"],
        input="/pause\n/spawn agent Zed brain=policy:forager\n"
              "/spawn agent Eve brain=policy:farmer\n/step 300\n/debug Zed\n/quit\n",
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(brain=policy:forager)" in out
    assert ("error: unknown brain 'policy:farmer' (brains: builtin, llm, policy:forager, "
            "policy:survivor, policy:trader); put its file in the brains.policies folder") in out
    assert "brain policy:forager" in out and "policy forager v1 (builtin)" in out, out


def test_the_contract_names_every_field_and_shows_every_example() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "policies.md").read_text()
    for cls in (Observation, Self):
        for name in cls.__dataclass_fields__:
            assert f"`{name}`" in doc, f"docs/policies.md does not name {cls.__name__}.{name}"
    for policy in example_policies():  # the few-shot examples, exactly as they ship
        assert f"```python\n{policy.source}```" in doc, policy.name
