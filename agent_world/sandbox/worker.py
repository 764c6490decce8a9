"""Layer 4: the worker process. ``python -m agent_world.sandbox.worker MEMORY_MB``.

Started by the host (``pool.py``) with only three file descriptors (requests on 0, results
on 1, /dev/null on 2), a controlled environment (``PYTHONHASHSEED=0``, so set order is the
same everywhere) and its own session (a Ctrl-C at the terminal does not reach it). Before it
reads any request it imports everything it needs, then limits itself: address space
(RLIMIT_AS), file size 0 (RLIMIT_FSIZE), no new processes (RLIMIT_NPROC), no core dumps, and
before each call a CPU allowance (RLIMIT_CPU soft limit = CPU used + the allowance; the
kernel kills it with SIGXCPU past that). The host kills it on wall-clock time too, and
replaces it after any kill. Both are backstops for code that runs away from its step budget
(work done in C that the budget does not see): the step budget decides about code that
finishes, and a kill is recorded by the world as an outside event.

Requests: ``{"op": "run", "steps", "alloc", "cpu_s", "tick_steps", "sources":
{digest: source}, "calls": [{"digest", "ctx"}]}``. For each call, in order, one result frame
``{"status", "effects" | "reason", "steps", "cpu_ms"}``, then ``{"op": "done"}``. Compiled
code is cached by kind and digest. With ``tick_steps`` (the steps the tick's calls may take
in all, ``abilities.tick_steps``; 0: no limit) a call is started only while the calls before
it in the batch took fewer steps than that; later ones come back ``postponed``. That depends
on the code and its inputs only, so it is the same on every machine. ``cpu_ms`` (the thread's
CPU time during the call, for statistics and the checker's verdict on slow code; the process
clock is only as fine as the scheduler's tick while a CPU limit is armed) is the one figure
that is not.

A request with ``"kind": "policy"`` (and ``"memory_bytes"``) holds policies
(docs/policies.md): their sources pass the gate under the policy contract, and each call
runs ``decide(ctx["obs"], ctx["memory"])``, whose answer ``runtime.export_decision`` checks
(the memory within ``memory_bytes``); the frame's ``effects`` is the decision.

A reason becomes world state (the "disabled" reason), and a replay computes it again in
another worker, so it is built from the exception's type name and its arguments rendered by
``plain.exception_text`` (never ``str(exc)``, which may show an address or a set in hash
order), and every reason passes ``plain.clean_reason`` on its way out.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import time
from types import CodeType
from typing import Any

from agent_world.sandbox.compiler import compile_source
from agent_world.sandbox.gate import CONTRACTS, GateError
from agent_world.sandbox.plain import clean_reason, exception_text
from agent_world.sandbox.protocol import encode, read_frame, write_all
from agent_world.sandbox.runtime import (
    Escalated,
    Meter,
    ResultError,
    SandboxLimit,
    build_globals,
    export_decision,
    export_result,
)
from agent_world.types import (
    ABILITY_ERROR,
    ABILITY_KILLED,
    ABILITY_OK,
    ABILITY_POSTPONED,
    TICK_STEPS_SPENT,
)

__all__ = ["main", "run_call"]

RECURSION_LIMIT = 300
CODE_CACHE = 256


def _limit_self(memory_mb: int) -> None:
    memory = memory_mb * 1024 * 1024
    for limit, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_FSIZE, 0),
                         (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, 0)):
        with contextlib.suppress(ValueError, OSError):  # some limits may already be lower
            resource.setrlimit(limit, (value, value))


def _cpu_allowance(seconds: int) -> None:
    """Let this process use ``seconds`` more CPU seconds (and up to one more: the limit is
    in whole seconds) before the kernel stops it."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _failed(exc: BaseException, meter: Meter) -> dict[str, Any]:
    """The frame of a call that raised ``exc`` (caught by the ability or not)."""
    if isinstance(exc, MemoryError):  # depends on the process: a kill, recorded as an input
        return {"status": ABILITY_KILLED, "reason": "memory limit reached",
                "steps": meter.steps_used}
    if isinstance(exc, RecursionError):
        reason = "recursion too deep"
    elif isinstance(exc, ResultError):
        reason = f"bad result: {exc}"
    else:
        reason = f"raised {type(exc).__name__}: {exception_text(exc, 200)}"
    return {"status": ABILITY_ERROR, "reason": clean_reason(reason), "steps": meter.steps_used}


def run_call(code: CodeType, ctx: Any, steps: int, alloc: int, *, kind: str = "ability",
             memory_bytes: int = 0) -> dict[str, Any]:
    """Run one call; the result frame. Deterministic for the same code, ctx and limits
    (except MemoryError, which depends on the process and is reported as a kill). An
    ability's ``execute(ctx)`` returns effects; a policy's ``decide(ctx["obs"],
    ctx["memory"])`` (``kind="policy"``) a decision, its memory within ``memory_bytes``."""
    seed = ctx.get("seed", 0) if type(ctx) is dict else 0
    meter = Meter(steps, alloc)
    try:
        scope = build_globals(meter, seed if type(seed) is int else 0, kind)
        exec(code, scope)
        entry = scope[CONTRACTS[kind].entry]
        if kind == "policy":
            value = entry(ctx.get("obs"), ctx.get("memory"))
            if meter.failure is None:
                value = export_decision(value, memory_bytes)
        else:
            value = entry(ctx)
            if meter.failure is None:
                export_result(value)
    except SandboxLimit:
        pass  # the meter holds the reason
    except Escalated as exc:
        return _failed(exc.original, meter)
    except Exception as exc:
        return _failed(exc, meter)
    if meter.failure is not None:
        return {"status": ABILITY_ERROR, "reason": f"limit: {meter.failure}",
                "steps": meter.steps_used}
    return {"status": ABILITY_OK, "effects": value, "steps": meter.steps_used}


def _serve(memory_mb: int) -> None:
    compiled: dict[tuple[str, str], CodeType | str] = {}
    write_all(1, encode({"op": "ready", "pid": os.getpid()}))
    while True:
        try:
            request = read_frame(0)
        except Exception:
            return  # the host went away or sent garbage: stop
        if request.get("op") != "run":
            return
        kind = request.get("kind", "ability")
        contract = CONTRACTS.get(kind)
        if contract is None:
            return  # a request this worker does not understand: stop
        for digest, source in request.get("sources", {}).items():
            try:
                compiled[kind, digest] = compile_source(source, contract=contract)
            except GateError as exc:
                compiled[kind, digest] = f"rejected: {exc}"
            if len(compiled) > CODE_CACHE:
                del compiled[next(iter(compiled))]
        cpu_s = int(request.get("cpu_s", 2))
        steps, alloc = int(request["steps"]), int(request["alloc"])
        tick_steps = int(request.get("tick_steps", 0))
        memory_bytes = int(request.get("memory_bytes", 0))
        spent = 0  # steps the batch's calls took so far
        for call in request["calls"]:
            entry = compiled.get((kind, call["digest"]))
            if tick_steps and spent >= tick_steps:
                result: dict[str, Any] = {"status": ABILITY_POSTPONED, "reason": TICK_STEPS_SPENT}
            elif entry is None:
                result = {"status": ABILITY_ERROR, "reason": "unknown code (not sent)"}
            elif isinstance(entry, str):
                result = {"status": ABILITY_ERROR, "reason": entry}
            else:
                _cpu_allowance(cpu_s)
                began = time.thread_time()
                result = run_call(entry, call["ctx"], steps, alloc, kind=kind,
                                  memory_bytes=memory_bytes)
                result["cpu_ms"] = round((time.thread_time() - began) * 1000, 3)
                spent += result["steps"]
            if "reason" in result:
                result["reason"] = clean_reason(result["reason"])
            try:
                frame = encode(result)
            except Exception as exc:  # export_result makes this unreachable; fail closed
                frame = encode({"status": ABILITY_ERROR,
                                "reason": f"bad result: {type(exc).__name__}"})
            write_all(1, frame)
            if result["status"] == ABILITY_KILLED:
                return  # memory ran out: this process is no longer trustworthy
        write_all(1, encode({"op": "done"}))


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.setrecursionlimit(RECURSION_LIMIT)
    sys.set_int_max_str_digits(4300)
    memory_mb = int(argv[0]) if argv else 256
    _limit_self(memory_mb)
    # Nothing may write to fd 1 but the frames: with no sys.stdout, print does nothing.
    sys.stdout = None
    _serve(memory_mb)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
