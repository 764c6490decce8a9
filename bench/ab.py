"""This checkout against another commit, interleaved: the tick's cost at each size.

    python -m bench.ab --base HEAD~1 [--sizes 1000,10000] [--rounds 5] [--ticks 40]
                       [--measure ticks,paced,replay]

``--measure`` picks what each run times: ``ticks`` (flat out, no persistence: the
simulation's CPU and wall time per tick), ``paced`` (a real 10 Hz session with persistence,
``--ticks`` ticks: the p99 of a period's busy time, tick plus the work between ticks) and
``replay`` (``--ticks`` ticks recorded flat out, then replayed from the log with every state
hash verified: ticks per second).

Each round runs one fresh process per checkout and size (the order alternating from round to
round, so a machine that gets busier slows both alike). A process builds the same scaled
world from the same seed (``bench.scenario.scaled_config``), warms it up, then times the
same ticks: the work is identical in both, so the difference is the code's. The CPU time of
the process (less disturbed by other work on the machine than wall time) and the wall time
per tick are reported as medians over the rounds, with the ratio new / base. ``--base`` is
checked out into a temporary worktree, removed afterwards (``--base-root DIR``: an existing
checkout instead).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["main"]

HERE = Path(__file__).resolve().parent.parent

FLAT = """
import gc, json, sys, tempfile, time
from pathlib import Path
from agent_world.core.world import World
from bench.scenario import scaled_config
agents, warmup, ticks = (int(a) for a in sys.argv[1:4])
world = World.create(scaled_config(agents, Path(tempfile.mkdtemp())))
for _ in range(warmup):
    world.step()
gc.collect()
gc.freeze()  # the world built so far is never examined again, as GcPolicy does
cpu, wall = time.process_time(), time.perf_counter()
for _ in range(ticks):
    world.step()
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"cpu_ms": cpu * 1000 / ticks, "wall_ms": wall * 1000 / ticks,
                  "hash": world.state_hash()}))
"""

PACED = """
import json, sys, tempfile
from pathlib import Path
from bench.engine import build_world, measure_paced
agents, warmup, ticks = (int(a) for a in sys.argv[1:4])
world, config, _ = build_world(agents, Path(tempfile.mkdtemp()), warmup)
got = measure_paced(world, config, "ab", seconds=0.0, min_ticks=ticks, max_ticks=ticks,
                    tick_estimate_s=0.1)
print(json.dumps({"busy_p99_ms": got["busy"]["p99_ms"], "tick_p99_ms": got["tick"]["p99_ms"],
                  "hash": ""}))
"""

REPLAY = """
import asyncio, json, sys, tempfile
from pathlib import Path
from bench.engine import _replay, build_world
from bench.scenario import saved_session
agents, warmup, ticks = (int(a) for a in sys.argv[1:4])
world, config, _ = build_world(agents, Path(tempfile.mkdtemp()), warmup)
session = saved_session(world, config, "ab")
asyncio.run(session.run(max_ticks=ticks, paced=False))
folder = session.persistence.folder
session.close()
final = world.state_hash()
got = _replay(folder, config, verify=True)
print(json.dumps({"replay_ticks_per_s": got["ticks_per_s"], "checks": got["checks"],
                  "hash": final}))
"""

CHILDREN = {"ticks": (FLAT, ("cpu_ms", "wall_ms")),
            "paced": (PACED, ("busy_p99_ms", "tick_p99_ms")),
            "replay": (REPLAY, ("replay_ticks_per_s",))}


@contextmanager
def checkout(rev: str) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="aw-ab-"))
    subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", "-q",
                    str(folder / "base"), rev], check=True)
    try:
        yield folder / "base"
    finally:
        subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force",
                        str(folder / "base")], check=False)


def measure(root: Path, child: str, agents: int, warmup: int, ticks: int
            ) -> dict[str, float | str]:
    done = subprocess.run([sys.executable, "-c", child, str(agents), str(warmup), str(ticks)],
                          cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench.ab: the run in {root} failed:\n{done.stderr[-2000:]}")
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("--base", default="HEAD", help="the commit to compare with")
    parser.add_argument("--base-root", type=Path, help="an existing checkout instead")
    parser.add_argument("--sizes", default="1000,10000", help="agent counts (default "
                        "1000,10000)")
    parser.add_argument("--rounds", type=int, default=5, help="runs per checkout and size")
    parser.add_argument("--ticks", type=int, default=40, help="ticks timed per run")
    parser.add_argument("--warmup", type=int, default=30, help="ticks before the timing")
    parser.add_argument("--measure", default="ticks", help="what to time, any of "
                        f"{','.join(CHILDREN)} (default ticks)")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",")]
    kinds = args.measure.split(",")
    unknown = [k for k in kinds if k not in CHILDREN]
    if unknown:
        parser.error(f"--measure {','.join(unknown)}: expected any of {','.join(CHILDREN)}")

    def run(base: Path) -> None:
        print(f"base {args.base_root or args.base} ({base}) against this checkout ({HERE}); "
              f"{args.rounds} rounds of {args.ticks} ticks after {args.warmup}")
        for kind in kinds:
            child, figures = CHILDREN[kind]
            for agents in sizes:
                got: dict[str, list[dict[str, float | str]]] = {"base": [], "new": []}
                for round_ in range(args.rounds):
                    order = [("base", base), ("new", HERE)]
                    for label, root in order if round_ % 2 == 0 else reversed(order):
                        got[label].append(measure(root, child, agents, args.warmup,
                                                  args.ticks))
                hashes = {str(r["hash"]) for runs in got.values() for r in runs}
                line = [f"{kind:<6} {agents:>6} agents:"]
                for figure in figures:
                    old = statistics.median(float(r[figure]) for r in got["base"])
                    new = statistics.median(float(r[figure]) for r in got["new"])
                    line.append(f"{figure} {old:.2f} -> {new:.2f} ({new / old:.3f}x)")
                if hashes != {""}:
                    line.append("same state" if len(hashes) == 1 else
                                f"STATES DIFFER ({len(hashes)} hashes)")
                print("  ".join(line), flush=True)

    if args.base_root is not None:
        run(args.base_root.resolve())
    else:
        with checkout(args.base) as base:
            run(base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
