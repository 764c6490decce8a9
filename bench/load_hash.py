"""The same seed on a busy machine: a world run quietly, then again at the lowest priority
beside busy loops on every core, compared by state hash.

    .venv/bin/python bench/load_hash.py [--ticks 20000] [--seed 913] [--runs 3]
        [--spinners-per-core 2] [--root .]

Each run is ``python main.py --headless --no-save --ticks N --seed S`` in a process of its
own (``--root`` picks the checkout whose main.py runs: an older one gives the before
figures). Prints one line per run: the hash, whether it equals the quiet run's, the calls a
sandbox backstop stopped and the run's time, then a verdict. No figure here is a timing
target; the hashes are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def busy_cores(per_core: int) -> Iterator[int]:
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(per_core * (os.cpu_count() or 1))]
    try:
        yield len(spinners)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def run_world(root: Path, ticks: int, seed: int, *, niced: bool) -> dict[str, Any]:
    command = [sys.executable, str(root / "main.py"), "--headless", "--no-save", "--ticks",
               str(ticks), "--seed", str(seed)]
    if niced:
        command = ["nice", "-n", "19", *command]
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=root)
    if done.returncode != 0:
        raise SystemExit(f"the world failed (exit {done.returncode}): {done.stderr[-1000:]}")
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    summary["run_s"] = round(time.monotonic() - began, 1)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ticks", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=913)
    parser.add_argument("--runs", type=int, default=3, help="loaded runs (default 3)")
    parser.add_argument("--spinners-per-core", type=int, default=2)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the busy loops end with the script.
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(143))
    root = args.root.resolve()
    quiet = run_world(root, args.ticks, args.seed, niced=False)
    print(f"quiet:   {quiet['state_hash']}  stopped "
          f"{quiet.get('sandbox_calls_stopped', '?')}  casts {quiet.get('ability_casts')}  "
          f"{quiet['run_s']} s")
    same = 0
    with busy_cores(args.spinners_per_core) as spinners:
        for n in range(1, args.runs + 1):
            loaded = run_world(root, args.ticks, args.seed, niced=True)
            equal = loaded["state_hash"] == quiet["state_hash"]
            same += equal
            print(f"loaded {n}: {loaded['state_hash']}  {'same' if equal else 'DIFFERENT'}  "
                  f"stopped {loaded.get('sandbox_calls_stopped', '?')}  casts "
                  f"{loaded.get('ability_casts')}  {loaded['run_s']} s "
                  f"(nice 19, {spinners} busy loops)", flush=True)
    print(f"{same} of {args.runs} loaded runs ended on the quiet run's hash "
          f"({args.ticks:,} ticks, seed {args.seed}, {root})")
    return 0 if same == args.runs else 1


if __name__ == "__main__":
    raise SystemExit(main())
