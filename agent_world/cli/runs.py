"""``python main.py runs``: the training and evaluation runs under ``paths.runs``.

``python main.py runs [list] [--config FILE]`` prints a table (name, kind, scenario, size on
disk, age, and the process running it, if any); it only reads.
``python main.py runs delete NAME [--yes] [--config FILE]`` deletes one run folder after
confirmation on a terminal (or with --yes), holding the run's lock while it does: a run in
use is refused, and so is anything that is not a run. Retention (``paths.runs_keep``,
``runs_max_age_days``, ``runs_max_bytes``) deletes old runs by itself (``agent_world.runs``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_world.cli.confirm import confirmation
from agent_world.config import ConfigError, load_config
from agent_world.persistence import SaveError
from agent_world.persistence.files import human_size
from agent_world.runs import RunRow, age_text, delete_run, list_runs

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py runs",
        description="List the training and evaluation runs under paths.runs, or delete one.")
    config_help = ("YAML config whose paths.runs is used (default: ./config.yaml if "
                   "present, else defaults)")
    parser.add_argument("--config", metavar="FILE", help=config_help)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    listing = commands.add_parser(
        "list", help="the table of runs (the default)",
        description="Print every run: name, kind (train or eval), scenario, size on disk, "
                    "age (since it ended, or started while it runs), and the process "
                    "running it.")
    listing.add_argument("--config", metavar="FILE", help=config_help,
                         default=argparse.SUPPRESS)
    delete = commands.add_parser(
        "delete", help="delete one run",
        description="Delete one run's folder. Asks for confirmation on a terminal; without "
                    "one, --yes is required. A run in use is refused.")
    delete.add_argument("name", metavar="NAME", help="the run's name (its folder under "
                                                     "paths.runs)")
    delete.add_argument("--yes", "-y", action="store_true", help="delete without asking")
    delete.add_argument("--config", metavar="FILE", help=config_help,
                        default=argparse.SUPPRESS)
    return parser


def _table(rows: list[RunRow]) -> list[str]:
    header = ("NAME", "KIND", "SCENARIO", "SIZE", "AGE", "IN USE")
    right = {3, 4}
    cells = [header] + [
        (r.name, r.kind, r.scenario, human_size(r.size), age_text(r.age_s),
         "-" if r.in_use is None else (f"pid {r.in_use}" if r.in_use else "yes"))
        for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  ".join(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                      for i, cell in enumerate(row)).rstrip() for row in cells]


def _list(runs: Path) -> int:
    rows, others = list_runs(runs)
    if rows:
        for line in _table(rows):
            print(line)
        total = sum(r.size for r in rows)
        print(f"{len(rows)} run{'s' if len(rows) != 1 else ''}, {human_size(total)} in {runs}")
    else:
        where = "does not exist yet" if not runs.exists() else "holds no run"
        print(f"{runs} (paths.runs) {where}; 'python main.py train' and 'eval' write there")
    for other in others:
        print(f"  also in {runs}: {other}")
    return 0


def main(argv: Sequence[str] | None = None, *,
         ask: Callable[[str], bool] | None = None) -> int:
    """The ``runs`` command. ``ask`` answers the delete question (tests); by default a
    terminal is asked, and without one --yes is required."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        runs = Path(load_config(args.config).paths.runs)
        if args.command != "delete":
            return _list(runs)
        confirm = confirmation(f"run '{args.name}'", yes=args.yes, ask=ask)
        done = delete_run(runs, args.name, confirm=confirm)
    except (ConfigError, SaveError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if done is None:
        print(f"kept run '{args.name}'")
        return 1
    print(done)
    return 0
