"""Hostile ability sources: every one is refused before it runs, or contained while it runs.

Each case asserts that nothing outside was touched: no file appears, the host's builtins and
the sandbox's tables are unchanged, the world changed exactly as it does for an ability that
simply fails (or, for a forged effect, not at all), and the host still serves the next call
in the same runner. Families follow the issue (escapes through dunders, frames, formatting,
getattr, type(), guard shadowing, Unicode names, except*, the budget, finally, results,
forgery, loops, recursion, big numbers and strings, C-level iteration, memory, validator
bombs) and the mechanism of every published RestrictedPython advisory:

- CVE-2023-37271 / GHSA-wqc8-x2pr-7jqh: generator and frame attributes (gi_frame, f_back ...)
- CVE-2023-41039 / GHSA-xjw2-6jm9-rf67: str.format / format_map attribute traversal
- CVE-2024-47532 / GHSA-5rfv-66g4-jr8h: AttributeError.obj and the string module
- RestrictedPython 7.2: safer_getattr breakout with a str subclass as the name
- CVE-2025-22153 / GHSA-gmj9-h825-chq2: try/except* type confusion
- CVE-2026-55830 / GHSA-ffg3-p8fm-mjx2: positional-only parameters shadowing guard hooks
- CVE-2026-76825 / GHSA-hp3v-5vw7-fx9w: string.Formatter field resolution
- RestrictedPython 8.5: unpacking in comprehensions, lazy imports, async generator frames
- RestrictedPython 9.0 (#335): bytes/sorted/tuple/zip/reversed iterating in C
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import os
from pathlib import Path

import pytest
from ability_helpers import FakeRunner, cast, source, spec, staged
from helpers import give_plan, of_type, run

from agent_world.config import Config
from agent_world.core.abilities import AbilityMeta, AbilitySpec, source_digest
from agent_world.sandbox import runtime
from agent_world.sandbox.check import AbilityChecker
from agent_world.sandbox.compiler import compile_ability
from agent_world.sandbox.gate import GateError
from agent_world.sandbox.pool import PACKAGE_ROOT
from agent_world.sandbox.runner import SandboxRunner
from agent_world.types import ABILITY_ERROR, AbilityResult


def body(*lines: str) -> str:
    return "".join(f"    {line}\n" for line in lines)


# -- refused before running --------------------------------------------------------------------

MODULE_LEVEL = source(body("return []"))

REJECTED: dict[str, str] = {
    # imports and the import machinery
    "import": "import os\n" + MODULE_LEVEL,
    "import-in-execute": source(body("from subprocess import run", "return []")),
    "dunder-import": source(body("return [__import__('os').system('true')]")),
    # object graph walks through dunders
    "class-subclasses": source(body("return [().__class__.__bases__[0].__subclasses__()]")),
    "ctx-class": source(body("return [ctx.__class__]")),
    "function-globals": source(body("return [execute.__globals__['__builtins__']]")),
    "builtins-name": source(body("return [__builtins__]")),
    # frames (CVE-2023-37271 and the 8.5 additions)
    "generator-frame": source(body("g = (x for x in [1])",
                                   "return [g.gi_frame.f_back.f_globals]")),
    "generator-code": source(body("g = (x for x in [1])", "return [g.gi_code]")),
    "coroutine-frame": source(body("async def f():", "    return 1",
                                   "return [f().cr_frame]")),
    "async-generator-frame": source(body("g = (x async for x in y)", "return [g.ag_frame]")),
    "traceback-frame": source(body("try:", "    1 / 0", "except ZeroDivisionError as e:",
                                   "    return [e.__traceback__.tb_frame.f_globals]")),
    "with-traceback": source(body("try:", "    1 / 0", "except ZeroDivisionError as e:",
                                  "    return [e.with_traceback(None)]")),
    # formatting (CVE-2023-41039, CVE-2026-76825)
    "str-format": source(body("return ['{0.__class__}'.format(ctx)]")),
    "str-format-map": source(body("return ['{a}'.format_map(ctx)]")),
    "string-formatter": source(body("return [string.Formatter().get_field('0', [ctx], {})]")),
    "format-builtin": source(body("return [format(ctx, '')]")),
    "fstring-width": source(body("return [f'{1:>999999999}']")),
    "fstring-nested-spec": source(body("w = 9", "return [f'{1:{w}}']")),
    # AttributeError.obj (CVE-2024-47532)
    "attribute-error-obj": source(body("try:", "    ctx.get(1)", "except AttributeError as e:",
                                       "    return [e.obj]")),
    # getattr family and type()
    "getattr-computed": source(body("return [getattr(ctx, '__cl' + 'ass__')]")),
    "setattr": source(body("setattr(ctx, 'x', 1)", "return []")),
    "vars": source(body("return [vars(ctx)]")),
    "type-three-args": source(body("T = type('T', (), {'x': 1})", "return [T]")),
    "class-str-subclass": source(body("class S(str):", "    pass", "return []")),
    # guard hooks (CVE-2026-55830) and injected names
    "posonly-shadows-getattr": source(body("def f(_getattr_=None, /):", "    return ctx.get",
                                           "return [f()]")),
    "posonly-plain": source(body("def f(a, /):", "    return a", "return [f(1)]")),
    "rebind-getiter": source(body("_getiter_ = list", "return []")),
    "rebind-step": source(body("_step_ = abs", "return []")),
    "single-underscore": source(body("_ = 1", "return []")),
    # Unicode names that normalise to forbidden ones
    "unicode-eval": source(body("return [\uff45val('1')]")),
    "unicode-dunder": source(body("return [ctx.\uff3f\uff3fclass\uff3f\uff3f]")),
    "unicode-in-fstring": source(body("return [f'{\uff47etattr}']")),
    # except* (CVE-2025-22153) and catching everything
    "except-star": source(body("try:", "    pass", "except* ValueError:", "    pass",
                               "return []")),
    "bare-except": source(body("try:", "    pass", "except:", "    pass", "return []")),
    "except-baseexception": source(body("try:", "    pass", "except BaseException:",
                                        "    pass", "return []")),
    # syntax the gate does not allow
    "global": source(body("global NAME", "return []")),
    "nonlocal": source(body("x = 1", "def f():", "    nonlocal x", "return []")),
    "decorator": source(body("@abs", "def f():", "    pass", "return []")),
    "yield": source(body("yield 1")),
    "with": source(body("with ctx:", "    pass", "return []")),
    "match": source(body("match ctx:", "    case _:", "        pass", "return []")),
    "lambda-default": source(body("f = lambda x=ctx: x", "return []")),
    "star-args": source(body("a = [1]", "return [max(*a)]")),
    "double-star-dict": source(body("d = {**ctx}", "return []")),
    "starred-display": source(body("a = [1]", "return [*a, *a]")),
    "unpack-in-comprehension": source(body("return [*x for x in [[1]]]")),
    "lazy-import": "lazy import os\n" + MODULE_LEVEL,
    "attribute-store": source(body("ctx.x = 1", "return []")),
    "attribute-delete": source(body("del ctx.items", "return []")),
    # dangerous and nondeterministic builtins
    "eval": source(body("return [eval('1')]")),
    "exec": source(body("exec('x = 1')", "return []")),
    "compile": source(body("return [compile('1', 'x', 'eval')]")),
    "open": source(body("open('/tmp/pwned', 'w')", "return []")),
    "print": source(body("print('hello')", "return []")),
    "id-hash": source(body("return [id(ctx), hash('x')]")),
    "globals": source(body("return [globals()]")),
    "bytes-c-iteration": source(body("return [bytes(range(10))]")),
    "iter-next": source(body("return [next(iter([1]))]")),
    # the file's shape
    "module-level-code": "open('/tmp/pwned', 'w')\n" + MODULE_LEVEL,
    "second-function": MODULE_LEVEL + "\n\ndef helper():\n    return 1\n",
    "non-literal-metadata": MODULE_LEVEL.replace("RANGE = 3", "RANGE = len('abc')"),
    "huge-int-literal": source(body("return [" + "9" * 200 + "]")),
    "huge-string-literal": source(body("return ['" + "x" * 3000 + "']")),
    "bytes-literal": source(body("return [b'x']")),
    "nesting-bomb": source(body("return " + "[" * 200 + "]" * 200)),
    "oversized": source(body("x = 1") * 2000),
}


@pytest.fixture(scope="module")
def checker():
    with AbilityChecker(Config()) as ch:
        yield ch


@pytest.fixture
def quiet_dirs(tmp_path: Path, monkeypatch):
    """Run in an empty folder and check afterwards that no file appeared anywhere we look."""
    monkeypatch.chdir(tmp_path)
    watched = [tmp_path, PACKAGE_ROOT, PACKAGE_ROOT / "agent_world", Path("/tmp")]
    before = {d: set(os.listdir(d)) for d in watched}
    builtins_before = dict(vars(builtins))
    tables_before = {k: frozenset(v) for k, v in runtime.SAFE_ATTRIBUTES.items()}
    yield
    assert set(os.listdir(tmp_path)) == set()
    for d in watched[1:3]:
        assert set(os.listdir(d)) == before[d], f"a file appeared in {d}"
    assert "pwned" not in set(os.listdir("/tmp")) - before[Path("/tmp")]
    assert dict(vars(builtins)) == builtins_before
    assert {k: frozenset(v) for k, v in runtime.SAFE_ATTRIBUTES.items()} == tables_before


def test_there_are_at_least_forty_hostile_sources() -> None:
    assert len(REJECTED) + len(CONTAINED) + len(FORGED) + 1 >= 40  # + WALL_CLOCK


@pytest.mark.parametrize("case", list(REJECTED))
def test_a_hostile_source_is_refused_before_it_runs(case, checker, quiet_dirs) -> None:
    text = REJECTED[case]
    with pytest.raises(GateError):
        compile_ability(text)
    report = checker.check(text)
    assert report.verdict == "rejected", report.line()
    assert report.reason


# -- contained while running -------------------------------------------------------------------

# case -> (body, what the disabling reason says, step budget override)
CONTAINED: dict[str, tuple[str, str, int | None]] = {
    "infinite-loop": (body("while True:", "    pass"), "step budget", None),
    "catch-the-budget": (body("try:", "    while True:", "        pass",
                              "except Exception:", "    return []"), "step budget", None),
    "finally-continue": (body("while True:", "    try:", "        while True:",
                              "            pass", "    finally:", "        continue"),
                         "step budget", None),
    "finally-return": (body("try:", "    while True:", "        pass", "finally:",
                            "    return [{'type': 'message', 'text': 'escaped'}]"),
                       "step budget", None),
    "handler-loop": (body("n = 0", "while True:", "    try:", "        n = n + 1",
                          "        raise ValueError(n)", "    except ValueError:",
                          "        continue"), "step budget", None),
    "deep-recursion": (body("def f(n):", "    return f(n + 1)", "return f(0)"),
                       "recursion too deep", None),
    "lambda-recursion": (body("f = lambda n: f(n + 1)", "return [f(0)]"),
                         "recursion too deep", None),
    "huge-int-squaring": (body("x = 3", "for i in range(20):", "    x = x * x", "return []"),
                          "multiplying integers", None),
    "huge-int-power": (body("return [10 ** 10 ** 6]"), "to the power", None),
    "huge-int-shift": (body("return [1 << 10 ** 7]"), "shifting by", None),
    "huge-int-augmented": (body("x = 7", "for i in range(30):", "    x **= 3", "return []"),
                           "to the power", None),
    "int-to-str-digits": (body("return [str(int('9' * 4400))]"), "integer string conversion",
                          None),
    "huge-string-repeat": (body("return ['a' * 10 ** 9]"), "repeating", None),
    "string-doubling": (body("s = 'ab'", "for i in range(40):", "    s = s + s", "return []"),
                        "joining", None),
    "join-doubling": (body("s = 'ab'", "for i in range(40):", "    s = ''.join([s, s])",
                           "return []"), "joining", None),
    "replace-doubling": (body("s = 'ab'", "for i in range(40):",
                              "    s = s.replace('a', 'aa')", "return []"), "replace would",
                         None),
    "fstring-doubling": (body("s = 'ab'", "for i in range(40):", "    s = f'{s}{s}'",
                              "return []"), "items or characters", None),
    "list-repeat": (body("return [[0] * 10 ** 8]"), "repeating", None),
    "extend-doubling": (body("a = [1]", "for i in range(40):", "    a.extend(a)",
                             "return []"), "step budget", None),
    "percent-format": (body("return ['%s' % (ctx,)]"), "% formatting", None),
    "sum-huge-range": (body("return [sum(range(10 ** 12))]"), "a range of", None),
    "sorted-c-iteration": (body("return [sorted('x' * 99999)]"), "step budget", None),
    "tuple-c-iteration": (body("return [tuple(range(999999))]"), "step budget", None),
    "zip-c-iteration": (body("return [list(zip(range(999999), range(999999)))]"),
                        "step budget", None),
    "reversed-c-iteration": (body("return [reversed(range(999999))]"), "step budget", None),
    "any-generator": (body("return [any(x < 0 for x in range(999999))]"), "step budget",
                      None),
    "join-generator": (body("return [''.join(str(i) for i in range(999999))]"),
                       "step budget", None),
    "dict-comprehension": (body("return [{i: i for i in range(999999)}]"), "step budget",
                           None),
    "allocation-bomb": (body("out = []", "for i in range(19000):",
                             "    out.append('y' * 90000)", "return []"),
                        "allocation budget", None),
    "lazy-generator-result": (body("return (x for x in [1])"), "got a generator", None),
    "generator-in-effect": (body("return [{'type': 'message', 'text': (c for c in 'ab')}]"),
                            "holds a generator", None),
    "shared-reference-result": (body("a = [{'type': 'message', 'text': 'x'}]",
                                     "for i in range(14):", "    a = a + a", "return a"),
                                "more than 512 values", None),
    "deep-result": (body("a = []", "for i in range(3000):", "    a = [a]",
                         "return [{'type': 'message', 'text': 'x', 'deep': a}]"),
                    "nested deeper", None),
    "nan-result": (body("return [{'type': 'heal', 'target': 1, 'amount': float('nan')}]"),
                   "not finite", None),
    "raise-anything": (body("raise KeyError(ctx)"), "raised KeyError", None),
}

# Only the wall clock stops this one (its step budget is out of reach): see
# test_wall_clock_kills_fail_each_cast_and_disable_only_in_a_row.
WALL_CLOCK = body("while True:", "    pass")

# case -> (effects, disabled?, what the refusal or disabling says); T = target, C = caster
FORGED: dict[str, tuple[list[dict[str, object]], bool, str]] = {
    "extra-key": ([{"type": "heal", "target": "C", "amount": 5, "caster": 1}], True,
                  "unknown key"),
    "too-many-effects": ([{"type": "message", "text": "x"}] * 9, True, "at most 8"),
    "bool-as-id": ([{"type": "damage", "target": True, "amount": 5}], True, "entity id"),
    "huge-damage": ([{"type": "damage", "target": "T", "amount": 1e9}], False, "exceeds the cap"),
    "steal-by-transfer": ([{"type": "transfer", "item": "apple", "qty": 1, "from": "T",
                            "to": "C"}], False, "none of these"),
    "mint-gold": ([{"type": "create_item", "item": "gold", "qty": 1}], False,
                  "cannot be created"),
    "endless-status": ([{"type": "status", "target": "T", "status": "root",
                         "ticks": 5000}], False, "exceeds the cap"),
    "two-spawns": ([{"type": "spawn_object", "kind": "shelter", "x": 5, "y": 6},
                    {"type": "spawn_object", "kind": "shelter", "x": 6, "y": 6}], False,
                   "one spawn_object per cast"),
    "teleport-far": ([{"type": "move", "x": 19, "y": 19}], False, "move distance"),
    "half-valid": ([{"type": "heal", "target": "C", "amount": 5},
                    {"type": "damage", "target": 999, "amount": 5}], False,
                   "not a living agent"),
}


def _projection(w) -> dict[str, object]:
    """What a failing or refused ability must leave alone: bodies, goods, places, objects,
    the map and the gold ledger."""
    state = json.loads(w.state_bytes())
    keep = ("Position", "Needs", "Inventory", "Item", "StaticObject", "Combat", "Social")
    return {"entities": [{k: row[k] for k in keep if k in row} for row in state["entities"]],
            "terrain": state["terrain"], "ledger": state["ledger"]}


def _twin_after_failure(ticks: int) -> dict[str, object]:
    failing = FakeRunner(lambda call: AbilityResult(status=ABILITY_ERROR, reason="raised"))
    w, caster, _ = staged(failing, spec("probe"))
    give_plan(w, caster, cast("probe"))
    run(w, ticks)
    return _projection(w)


@pytest.fixture(scope="module")
def hostile_runner():
    cfg = Config().replace(sandbox={"call_timeout_ms": 80, "memory_mb": 256}).sandbox
    r = SandboxRunner(cfg)
    yield r
    r.close()


def _hostile_world(runner, text: str, budget: int | None):
    meta = AbilityMeta(name="probe", description="A test ability.", energy_cost=0.0,
                       cooldown=0, range=3, args={})
    w, caster, target = staged(runner, AbilitySpec(meta=meta, source=text,
                                                   digest=source_digest(text)))
    if budget is not None:
        w.ability_rules = dataclasses.replace(w.ability_rules, step_budget=budget)
    return w, caster, target


def _host_still_serves(runner) -> None:
    runner.warm()
    w, caster, _ = staged(runner, spec("calm", body=body("return [{'type': 'message', "
                                                         "'text': 'still here'}]")))
    give_plan(w, caster, cast("calm"))
    events = run(w, 1)
    assert of_type(events, "ability"), "the next call did not run"


@pytest.mark.parametrize("case", list(CONTAINED))
def test_hostile_code_is_contained_while_it_runs(case, hostile_runner, quiet_dirs) -> None:
    code, reason, budget = CONTAINED[case]
    hostile_runner.warm()
    w, caster, _ = _hostile_world(hostile_runner, source(code), budget)
    give_plan(w, caster, cast("probe"))
    events = run(w, 2)
    assert "probe" in w.abilities.disabled, f"not disabled; events: {events}"
    assert reason in w.abilities.disabled["probe"], w.abilities.disabled["probe"]
    assert of_type(events, "ability_disabled")
    assert not of_type(events, "ability")  # nothing it returned was applied
    assert _projection(w) == _twin_after_failure(2)
    _host_still_serves(hostile_runner)


def test_wall_clock_kills_fail_each_cast_and_disable_only_in_a_row(hostile_runner,
                                                                    quiet_dirs) -> None:
    """A kill on wall-clock time may come from the machine's load, not the code: each one
    fails its cast and counts a strike; abilities.kills_to_disable in a row disable it."""
    limit = Config().abilities.kills_to_disable
    assert limit > 1
    w, caster, _ = _hostile_world(hostile_runner, source(WALL_CLOCK), 10**12)
    seen: list[dict[str, object]] = []
    for strike in range(1, limit + 1):
        assert "probe" not in w.abilities.disabled
        hostile_runner.warm()
        give_plan(w, caster, cast("probe"))
        events = run(w, 1)
        seen += events
        assert [e["strikes"] for e in of_type(events, "ability_killed")] == [strike]
        assert "wall-clock" in of_type(events, "action_failed")[0]["reason"]
    disabled = w.abilities.disabled["probe"]
    assert "wall-clock" in disabled and f"{limit} killed calls in a row" in disabled
    assert len(of_type(seen, "ability_disabled")) == 1
    assert not of_type(seen, "ability")  # nothing it returned was applied
    assert _projection(w) == _twin_after_failure(limit)
    _host_still_serves(hostile_runner)


@pytest.mark.parametrize("case", list(FORGED))
def test_forged_effects_change_nothing(case, hostile_runner, quiet_dirs) -> None:
    effects, disabled, message = FORGED[case]
    w, caster, target = _hostile_world(hostile_runner, source(body("return []")), None)
    ids = {"T": target, "C": caster}
    resolved = [{k: ids.get(v, v) if isinstance(v, str) and k in ("target", "from", "to")
                 else v for k, v in e.items()} for e in effects]
    text = source(body(f"return {resolved!r}"))
    w.abilities.generated.clear()
    w.abilities.add(AbilitySpec(meta=AbilityMeta(name="probe", description="A test ability.",
                                                 energy_cost=0.0, cooldown=0, range=3,
                                                 args={}),
                                source=text, digest=source_digest(text)))
    before = _projection(w)
    give_plan(w, caster, cast("probe"))
    events = run(w, 1)
    assert ("probe" in w.abilities.disabled) is disabled
    said = " | ".join([*w.abilities.disabled.values(),
                       *(e["reason"] for e in of_type(events, "action_failed"))])
    assert message in said
    assert not of_type(events, "ability")
    after = _projection(w)
    if disabled:
        assert after == _twin_after_failure(1)
    else:
        # refused whole: no effect applied (the world only lived one tick on)
        assert after == _projection_of_idle_tick(before)


def _projection_of_idle_tick(before: dict[str, object]) -> dict[str, object]:
    w, caster, _ = staged(FakeRunner(lambda call: AbilityResult(status="ok", effects=[])),
                          spec("probe"))
    assert _projection(w) == before
    give_plan(w, caster, cast("probe"))
    run(w, 1)
    return _projection(w)


def test_no_state_survives_from_one_call_to_the_next(hostile_runner, quiet_dirs) -> None:
    text = source(body("ARGS['n'] = ARGS.get('n', 0) + 1",
                       "return [{'type': 'message', 'text': str(ARGS['n'])}]"))
    w, caster, target = _hostile_world(hostile_runner, text, None)
    give_plan(w, caster, cast("probe"))
    give_plan(w, target, cast("probe"))
    events = run(w, 1)
    assert [e["effects"] for e in of_type(events, "ability")] == [["message '1' (heard by 1)"]] * 2
