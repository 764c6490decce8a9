"""How fast the report reads a save folder's event log.

``python -m agent_world.report.speed saves/NAME [--repeat N]`` builds the report N times
(default 3) and prints the best rate in log lines per second, beside the rate of the event
log reader alone (what reading and parsing cost before any counting). The bench calls
``measure``. Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_world.persistence.eventlog import LogReader
from agent_world.report.build import build_report
from agent_world.report.reader import ReportError, open_save

__all__ = ["Speed", "main", "measure"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Speed:
    lines: int  # log lines read by one report
    seconds: float  # the best (shortest) of the runs
    lines_per_s: float
    reader_lines_per_s: float  # the event log reader alone, best of the same number of runs
    runs: int


def _best(runs: int, work: Callable[[], int]) -> tuple[int, float]:
    """What ``work`` returned and its shortest time over ``runs`` runs."""
    best, lines = float("inf"), 0
    for _ in range(runs):
        began = time.perf_counter()
        lines = work()
        best = min(best, time.perf_counter() - began)
    return lines, best


def measure(path: Path, runs: int = 3) -> Speed:
    """Build the report of ``path`` ``runs`` times and read its log as many times."""
    folder = open_save(path)

    def report() -> int:
        return build_report(path).lines

    def read() -> int:
        return sum(1 for _ in LogReader(folder))

    lines, seconds = _best(runs, report)
    read_lines, read_seconds = _best(runs, read)
    return Speed(lines=lines, seconds=seconds, lines_per_s=lines / seconds if seconds else 0.0,
                 reader_lines_per_s=read_lines / read_seconds if read_seconds else 0.0,
                 runs=runs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent_world.report.speed",
        description="Measure how many event-log lines per second the report reads.")
    parser.add_argument("path", type=Path, help="a save folder")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="runs; the best counts (default 3)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    try:
        speed = measure(args.path, args.repeat)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {speed.lines:,} log lines in {speed.seconds:.3f} s: "
          f"{speed.lines_per_s:,.0f} lines/s (best of {speed.runs}); the log reader alone: "
          f"{speed.reader_lines_per_s:,.0f} lines/s ({args.path})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
