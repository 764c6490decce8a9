"""The sandbox's layers one by one: gate, compiler, runtime guards, worker processes, runner.

Hostile sources, family by family, are in test_hostile.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from ability_helpers import source

from agent_world.config import Config
from agent_world.core.abilities import source_digest
from agent_world.sandbox.compiler import compile_ability
from agent_world.sandbox.gate import GateError, gate
from agent_world.sandbox.host import load_builtins
from agent_world.sandbox.runner import SandboxRunner
from agent_world.sandbox.runtime import Meter, Rng, SandboxLimit, build_globals, export_result
from agent_world.sandbox.worker import run_call
from agent_world.types import ABILITY_ERROR, ABILITY_KILLED, ABILITY_OK, AbilityCall

CTX = {"seed": 11, "caster": {"id": 1, "name": "Ann"}, "target": None, "args": {}}


def call(body: str, ctx: dict | None = None, **meta) -> AbilityCall:
    text = source(body, **meta)
    return AbilityCall(caster=1, ability=meta.get("name", "probe"), digest=source_digest(text),
                       source=text, ctx=ctx or CTX)


def run_here(body: str, steps: int = 20_000, alloc: int = 4_000_000) -> dict:
    """Run in this process (the runtime layer alone, no worker)."""
    _meta, code = compile_ability(source(body))
    return run_call(code, CTX, steps, alloc)


@pytest.fixture(scope="module")
def runner():
    r = SandboxRunner(Config().sandbox)
    yield r
    r.close()


# -- layer 1: the gate -------------------------------------------------------------------------


def test_a_good_source_passes_with_its_metadata() -> None:
    text = source("    return []\n", name="calm", energy=2, cooldown=5, range_=1,
                  args={"target": "agent?"})
    assert gate(text).values["NAME"] == "calm"
    meta, _code = compile_ability(text)
    assert meta.name == "calm" and meta.args == {"target": "agent?"}


@pytest.mark.parametrize(("text", "message"), [
    (b"NAME = 'x'", "source must be text"),
    ("x" * 16_001, "the limit is 16000"),
    ("NAME = 'a'\x00", "NUL"),
    ("\n" * 700, "more than 600 lines"),
    ("x = " + "(" * 300 + ")" * 300, "syntax error"),
    ("x = " + "[" * 60 + "]" * 60, "nesting deeper than 40"),
    ("x = " + "+".join(["1"] * 7000), "nesting deeper"),
    ("NAME = 'a'\nDESCRIPTION = 'b'\nENERGY_COST = 1\nCOOLDOWN = 1\nRANGE = 1\n",
     "exactly one top-level function"),
    (source("    return []\n").replace("def execute(ctx)", "def execute(ctx, more)"),
     "exactly one parameter"),
    (source("    return []\n").replace("RANGE = 3", "RANGE = 1 + 2"), "must be a literal"),
    (source("    return []\n") + "\nRANGE = 4\n", "assigned twice"),
    (source("    return []\n").replace("ENERGY_COST = 0\n", ""), "missing metadata"),
    (source("    return []\n", name="BAD"), "NAME must be"),
])
def test_the_gate_refuses_malformed_files(text, message) -> None:
    with pytest.raises(GateError, match=message):
        compile_ability(text)


def test_the_gate_walks_deep_trees_without_recursing() -> None:
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(120)  # a recursive walk of this tree would fail here
    try:
        with pytest.raises(GateError, match="nesting deeper"):
            gate("x = " + "-" * 90 + "1")
    finally:
        sys.setrecursionlimit(limit)


def test_every_builtin_ability_passes_the_same_gate() -> None:
    names = [s.name for s in load_builtins()]
    assert {"heal", "dash", "fire_bolt", "build_shelter", "harvest"} <= set(names)
    assert len(names) >= 10


# -- layers 2 and 3: compiler and runtime ------------------------------------------------------


def test_the_step_budget_is_injected_where_loops_calls_and_handlers_begin() -> None:
    import dis

    _meta, code = compile_ability(source(
        "    def f():\n        return 1\n    for i in range(2):\n        pass\n"
        "    while False:\n        pass\n    try:\n        pass\n    except ValueError:\n"
        "        pass\n    finally:\n        pass\n    return [f() for i in range(1)]\n"))
    execute = next(c for c in code.co_consts if getattr(c, "co_name", "") == "execute")
    names = [i.argval for i in dis.get_instructions(execute) if i.opname == "LOAD_GLOBAL"]
    # execute's own entry, the for body, the except handler, the finally block (twice: the
    # normal and the exceptional path); the compiler drops the dead while loop
    assert names.count("_step_") >= 5
    assert "_getiter_" in names


def test_a_spent_budget_raises_at_every_later_step() -> None:
    meter = Meter(steps=3, alloc=10)
    for _ in range(3):
        meter.step()
    for _ in range(2):
        with pytest.raises(SandboxLimit, match="step budget of 3 steps spent"):
            meter.step()
    assert meter.failure is not None


def test_the_guards_refuse_attributes_outside_the_allowlist() -> None:
    g = build_globals(Meter(100, 1000), 1)
    getattr_ = g["_getattr_"]
    assert getattr_("a b", "split")() == ["a", "b"]
    for obj, name in ((CTX, "__class__"), ((), "count"[:0] + "index"), (len, "__self__"),
                      (KeyError(), "args"), (AttributeError(obj=CTX), "obj"), (1.5, "hex")):
        if obj == () and name == "index":
            assert getattr_(obj, name)  # tuple.index is allowed
            continue
        with pytest.raises(AttributeError, match="not available"):
            getattr_(obj, name)

    class Sneaky(str):
        def startswith(self, prefix: object, *args: object) -> bool:
            return False

    with pytest.raises(TypeError, match="must be str"):
        getattr_("x", Sneaky("__class__"))  # the 7.2 safer_getattr mechanism
    with pytest.raises(TypeError, match="cannot be changed"):
        g["_write_"]("text")


def test_the_rng_is_fully_specified() -> None:
    rng = Rng(42)
    assert [rng.next64() for _ in range(2)] == [13679457532755275413, 2949826092126892291]
    assert run_here("    return [rand_int(1, 6), rand_choice('xyz'), rand()]\n")["effects"] == \
        run_here("    return [rand_int(1, 6), rand_choice('xyz'), rand()]\n")["effects"]


@pytest.mark.parametrize(("body", "reason"), [
    ("    return [10 ** 400]\n", "to the power"),
    ("    return [1 << 5000]\n", "shifting by 5000 bits"),
    ("    return ['ab' * 60000]\n", "repeating 2 items 60000 times"),
    ("    s = 'x' * 60000\n    return [s + s]\n", "joining 60000 + 60000"),
    ("    s = 'x' * 60000\n    return [''.join([s, s])]\n", "joining 120000 characters"),
    ("    s = 'x' * 60000\n    return [s.replace('x', 'xx')]\n", "replace would make"),
    ("    s = 'x' * 60000\n    return [f'{s}{s}']\n", "120000 items or characters"),
    ("    return [list(range(10 ** 7))]\n", "a range of 10000000 numbers"),
    ("    return [sorted('x' * 90000)]\n", "step budget"),
    ("    return [int('9' * 400)]\n", "an integer of 1329 bits; the limit is 1024"),
    ("    a = 1 << 1023\n    return [a - (0 - a)]\n", "an integer of 1025 bits"),
    ("    a = 1 << 1023\n    a -= 0 - a\n    return [a]\n", "an integer of 1025 bits"),
    ("    a = []\n    a.extend(range(99999))\n    return a\n", "step budget"),
])
def test_size_guards_stop_values_that_would_be_built_in_c(body, reason) -> None:
    result = run_here(body)
    assert result["status"] == ABILITY_ERROR
    assert reason in result["reason"]


# Work done in C in proportion to a value's size costs steps: without that, each of these
# took from a tenth of a second to seconds of CPU within a budget of 20,000 steps.
@pytest.mark.parametrize("body", [
    "    xs = [0] * 60000\n    n = 0\n    for i in range(20000):\n"
    "        if 1 in xs:\n            n = n + 1\n    return [n]\n",
    "    s = 'ab' * 49000\n    n = 0\n    for i in range(20000):\n"
    "        if 'abb' in s:\n            n = n + 1\n    return [n]\n",
    "    s = 'a' * 99000\n    n = 0\n    for i in range(20000):\n"
    "        n = n + s.count('b')\n    return [n]\n",
    "    a = [[0] * 2000] * 40\n    b = [[0] * 2000] * 40\n    n = 0\n"
    "    for i in range(20000):\n        if a == b:\n            n = n + 1\n    return [n]\n",
    "    xs = [0] * 60000\n    for i in range(20000):\n        xs.sort()\n    return []\n",
    "    t = (0,) * 60000\n    d = {}\n    for i in range(20000):\n        d[t] = i\n"
    "    return []\n",
    "    s = '1' * 99000\n    n = 0\n    for i in range(20000):\n        n = float(s)\n"
    "    return [n]\n",
])
def test_work_done_in_c_is_charged_to_the_step_budget(body) -> None:
    out = run_here(body)
    assert out["status"] == "error" and out["reason"] == "limit: step budget of 20000 steps spent"


def test_small_values_cost_no_extra_steps_and_comparisons_keep_their_meaning() -> None:
    body = ("    xs = [3, 1, 2]\n    n = 0\n    for i in range(10):\n"
            "        if i in xs and xs != [i] and 0 <= i < 5 != i:\n            n = n + 1\n"
            "    d = {'a': [1, 2], 'b': 'text'}\n    d['c'] = d.get('a')\n"
            "    return [n, sorted(xs), 'b' in 'abc', (1, 2) < (1, 3), 'x'.upper(), len(d)]\n")
    # 24 steps, as many as before comparisons and methods were charged for their values.
    assert run_here(body) == {"status": "ok", "steps": 24,
                              "effects": [3, [1, 2, 3], True, True, "X", 3]}


def test_a_chained_comparison_evaluates_each_operand_once_and_stops_at_the_first_false(
        ) -> None:
    body = ("    seen = []\n"
            "    def f(x):\n        seen.append(x)\n        return x\n"
            "    a = f(1) < f(2) < f(0) < f(5)\n"
            "    b = f(1) < f(3) <= f(3)\n"
            "    return [a, b, seen]\n")
    assert run_here(body)["effects"] == [False, True, [1, 2, 0, 1, 3, 3]]


def test_an_assignment_inside_a_chained_comparison_is_refused_with_the_fix() -> None:
    with pytest.raises(GateError, match="assign it on a line of its own"):
        compile_ability(source("    return [0 < (n := 3) < 5]\n"))


def test_a_call_reports_its_cpu_time(runner) -> None:
    (result,) = runner.run([call("    x = 0\n    for i in range(5000):\n        x = x + i\n"
                                 "    return [x]\n")], replaying=False, steps=20_000,
                           alloc=1000)
    assert result.status == ABILITY_OK and result.cpu_ms > 0


def test_the_allocation_budget_is_deterministic() -> None:
    body = "    out = []\n    for i in range(60):\n        out.append('y' * 90000)\n    return []\n"
    first, second = run_here(body), run_here(body)
    assert first == second
    assert "allocation budget" in first["reason"]


def test_export_checks_the_result_iteratively() -> None:
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    with pytest.raises(Exception, match="nested deeper"):
        export_result(deep)
    with pytest.raises(Exception, match="not finite"):
        export_result([{"amount": float("nan")}])
    with pytest.raises(Exception, match="holds a tuple"):
        export_result([(1, 2)])
    assert export_result([{"type": "heal", "target": 1, "amount": 2.5}])


# -- layer 4: worker processes -----------------------------------------------------------------


def _proc(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_text()


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="needs /proc")
def test_workers_are_limited_isolated_and_hold_no_extra_files(monkeypatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-secret-value")
    cfg = Config().replace(sandbox={"memory_mb": 192, "spare_workers": 0}).sandbox
    r = SandboxRunner(cfg)
    try:
        r.run([call("    return []\n")], replaying=False, steps=100, alloc=1000)
        (worker,) = r.pool.workers
        limits = _proc(worker.pid, "limits")
        assert f"{192 * 1024 * 1024}" in next(line for line in limits.splitlines()
                                              if line.startswith("Max address space"))
        assert next(line for line in limits.splitlines()
                    if line.startswith("Max file size")).split()[3] == "0"
        cpu = next(line for line in limits.splitlines() if line.startswith("Max cpu time"))
        assert cpu.split()[3] != "unlimited"
        assert sorted(os.listdir(f"/proc/{worker.pid}/fd")) == ["0", "1", "2"]
        assert os.readlink(f"/proc/{worker.pid}/fd/2") == "/dev/null"
        environ = _proc(worker.pid, "environ")
        assert "sk-secret-value" not in environ and "PYTHONHASHSEED=0" in environ
        assert os.getsid(worker.pid) != os.getsid(0)
    finally:
        r.close()
    assert not Path(f"/proc/{worker.pid}").exists()


def test_a_call_past_its_wall_time_is_killed_and_the_worker_replaced() -> None:
    cfg = Config().replace(sandbox={"call_timeout_ms": 30}).sandbox
    r = SandboxRunner(cfg)
    try:
        first = [w.pid for w in r.pool.workers]
        calls = [call("    while True:\n        pass\n"), call("    return [1]\n")]
        results = r.run(calls, replaying=False, steps=10**9, alloc=1000)
        assert [x.status for x in results] == [ABILITY_KILLED, ABILITY_OK]
        assert "longer than 30 ms" in results[0].reason
        assert r.pool.replaced == 1 and first[0] not in r.pool.pids()
        assert not Path(f"/proc/{first[0]}").exists()  # killed and reaped
        assert r.stats()["round_trips"] == 2  # the rest went to the spare in one more trip
    finally:
        r.close()


def test_the_cpu_limit_stops_a_worker_the_wall_clock_did_not() -> None:
    cfg = Config().replace(sandbox={"call_timeout_ms": 20_000, "cpu_seconds": 1,
                                    "spare_workers": 0}).sandbox
    r = SandboxRunner(cfg)
    try:
        (result,) = r.run([call("    while True:\n        pass\n")], replaying=False,
                          steps=10**12, alloc=1000)
        assert result.status == ABILITY_KILLED
        assert "SIGXCPU" in result.reason or "SIGKILL" in result.reason
    finally:
        r.close()


def test_the_memory_limit_kills_and_replaces_the_worker() -> None:
    cfg = Config().replace(sandbox={"call_timeout_ms": 5000, "memory_mb": 128}).sandbox
    r = SandboxRunner(cfg)
    try:
        body = ("    out = []\n    while True:\n        out.append('z' * 99000)\n")
        (result,) = r.run([call(body)], replaying=False, steps=10**9, alloc=10**12)
        assert result.status == ABILITY_KILLED and "memory" in result.reason
        assert r.pool.replaced == 1
        r.warm()
        (after,) = r.run([call("    return [2]\n")], replaying=False, steps=100, alloc=100)
        assert after.status == ABILITY_OK
    finally:
        r.close()


def test_calls_of_a_tick_share_one_round_trip(runner) -> None:
    runner.warm()
    before = runner.stats()["round_trips"]
    results = runner.run([call(f"    return [{i}]\n", name=f"p{i}") for i in range(20)],
                         replaying=False, steps=1000, alloc=1000)
    assert [r.effects for r in results] == [[i] for i in range(20)]
    assert runner.stats()["round_trips"] == before + 1


def test_results_are_the_same_in_any_worker(runner) -> None:
    body = ("    s = {'pear', 'fig', 'apple', 'kiwi'}\n"
            "    return [','.join(s), rand(), rand_int(0, 1000)]\n")
    here = runner.run([call(body)], replaying=False, steps=1000, alloc=10_000)[0]
    other = SandboxRunner(Config().replace(sandbox={"spare_workers": 0}).sandbox)
    try:
        there = other.run([call(body)], replaying=False, steps=1000, alloc=10_000)[0]
    finally:
        other.close()
    assert here.status == ABILITY_OK and here.effects == there.effects


def test_the_tick_steps_postpone_calls_the_same_way_every_time_and_a_replay_never(
        runner) -> None:
    slow = "    x = 0\n    for i in range(15000):\n        x = x + i\n    return []\n"
    # Each call takes 30,001 steps (a turn and an item each time round): the calls after
    # the one that reaches 70,000 wait.
    for _ in range(2):
        live = runner.run([call(slow)] * 6, replaying=False, steps=100_000, alloc=1000,
                          tick_steps=70_000)
        assert [x.status for x in live] == [ABILITY_OK] * 3 + ["postponed"] * 3
        assert live[3].reason == "the tick's ability steps ran out (abilities.tick_steps)"
        assert [x.steps for x in live] == [30_001] * 3 + [0] * 3
    replayed = runner.run([call(slow)] * 6, replaying=True, steps=100_000, alloc=1000,
                          tick_steps=70_000)
    assert {x.status for x in replayed} == {ABILITY_OK}


def test_stats_report_time_per_tick_and_per_call(runner) -> None:
    runner.run([call("    return []\n")], replaying=False, steps=100, alloc=100)
    stats = runner.stats()
    assert stats["ms_per_tick"]["p99"] >= stats["ms_per_tick"]["p50"] > 0
    assert stats["round_trips_per_tick"] >= 1
    assert time.monotonic() > 0
