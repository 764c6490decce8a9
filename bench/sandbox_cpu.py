"""CPU time of ability calls that spend their whole step budget on work done in C.

    .venv/bin/python bench/sandbox_cpu.py [--steps 20000] [--root .]

Each probe is an ability that spends the default step budget (20,000) doing something whose
cost in C grows with a value's size: searching a long list or text, comparing nested values,
sorting, hashing a long key, converting long text to numbers. The step budget is what lets
the sandbox's wall-clock and CPU limits be backstops (issue 29): the slower the slowest
probe, the nearer code within its budget comes to them. Prints each probe's status, steps
and CPU milliseconds (the worker's own CPU time, measured around the call), then the
slowest. ``--root`` runs another checkout's sandbox (an older one gives the before figures;
it reports no CPU time of its own, so the wall time of the call stands in for it there).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

PROBES = {
    "x in long list": "    xs = [0] * 60000\n    n = 0\n    for i in range(20000):\n"
                      "        if 1 in xs:\n            n = n + 1\n    return []\n",
    "substring in long text": "    s = 'ab' * 49000\n    n = 0\n    for i in range(20000):\n"
                              "        if 'abb' in s:\n            n = n + 1\n    return []\n",
    "str.count": "    s = 'a' * 99000\n    n = 0\n    for i in range(20000):\n"
                 "        n = n + s.count('b')\n    return []\n",
    "== of nested lists": "    a = [[0] * 2000] * 40\n    b = [[0] * 2000] * 40\n    n = 0\n"
                          "    for i in range(20000):\n        if a == b:\n            n = n + 1\n"
                          "    return []\n",
    "list.sort": "    xs = [0] * 60000\n    for i in range(20000):\n        xs.sort()\n"
                 "    return []\n",
    "long dict key": "    t = (0,) * 60000\n    d = {}\n    for i in range(20000):\n"
                     "        d[t] = i\n    return []\n",
    "int() of text": "    s = '0' * 3700 + '9' * 300\n    n = 0\n    for i in range(20000):\n"
                     "        n = int(s) % 7\n    return []\n",
    "float() of text": "    s = '1' * 99000\n    n = 0\n    for i in range(20000):\n"
                       "        n = float(s)\n    return []\n",
    "plain loop": "    x = 0\n    for i in range(20000):\n        x = x + i\n    return []\n",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.root.resolve()))
    from agent_world.config import Config  # noqa: PLC0415 - from the chosen checkout
    from agent_world.core.abilities import source_digest  # noqa: PLC0415
    from agent_world.sandbox.runner import SandboxRunner  # noqa: PLC0415
    from agent_world.types import AbilityCall  # noqa: PLC0415

    # A roomy backstop: the probes are measured, not stopped.
    config = Config().replace(sandbox={"call_timeout_ms": 60_000, "cpu_seconds": 60})
    runner = SandboxRunner(config.sandbox)
    slowest = ("", 0.0)
    try:
        for name, body in PROBES.items():
            source = (f"NAME = 'probe'\nDESCRIPTION = 'A probe.'\nENERGY_COST = 0\n"
                      f"COOLDOWN = 0\nRANGE = 0\nARGS = {{}}\n\n\ndef execute(ctx):\n{body}")
            call = AbilityCall(caster=1, ability="probe", digest=source_digest(source),
                               source=source, ctx={"seed": 1})
            runner.run([call], replaying=True, steps=10, alloc=4_000_000)  # compile first
            began = time.perf_counter()
            (result,) = runner.run([call], replaying=True, steps=args.steps, alloc=4_000_000)
            wall_ms = (time.perf_counter() - began) * 1000
            cpu_ms = getattr(result, "cpu_ms", 0.0) or wall_ms
            if cpu_ms > slowest[1]:
                slowest = (name, cpu_ms)
            print(f"{name:24} {result.status:6} {result.steps:>7,} steps {cpu_ms:9.1f} ms CPU"
                  f"  {result.reason[:60]}", flush=True)
    finally:
        runner.close()
    print(f"slowest: {slowest[0]}, {slowest[1]:.1f} ms ({args.steps:,} steps, "
          f"{args.root.resolve()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
