"""``python main.py verify RESULTS.json``: re-check a published result from its save folders.

Every episode of an eval's or a training run's results file (every branch of a fork-eval's)
is replayed from its folder, with no model and no brain code, and every recorded figure
compared (``eval.verify``). Prints OK, or the first episode and figure that do not match.

Exit status: 0 every episode checks out, 1 a mismatch (a changed log, a figure the replay
does not give), 2 nothing to check (no such file, not a results file, an episode's folder
missing).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from agent_world.eval.verify import ResultsError, verify_results

__all__ = ["EXIT_MISMATCH", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py verify",
        description="Replay every episode (or fork branch) of a results file from its save "
                    "folder (no model or brain code needed) and check each recorded score "
                    "and metric. Exit status: 0 OK, 1 a mismatch, 2 nothing to check.")
    parser.add_argument("results", type=Path,
                        help="a results.json written by eval, fork-eval or train")
    parser.add_argument("--quiet", action="store_true", help="print only the verdict")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    began = time.perf_counter()
    say = (lambda _line: None) if args.quiet else (lambda line: print(line, flush=True))
    try:
        verdict = verify_results(args.results, progress=say)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if verdict.mismatch is not None:
        print(verdict.mismatch.line())
        return EXIT_MISMATCH
    plural = "es" if verdict.noun == "branch" else "s"
    print(f"OK: {verdict.episodes} {verdict.noun}{plural * (verdict.episodes != 1)} replayed "
          "from their logs; every recorded score and metric matches "
          f"({time.perf_counter() - began:.1f} s)")
    return EXIT_OK
