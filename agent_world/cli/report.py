"""``python main.py report saves/NAME``: the liveliness report of a saved world.

Reads the save folder alone (the event log and snapshots; it never runs the world) and prints
per window of ticks who is alive, how wealth spreads, how trade, theft, fights, speech and
abilities go, and which bounds of a lively world were broken. ``--json`` prints one JSON
document instead, ``--png DIR`` also draws plots (the ``plots`` extra), and ``--check``
prints only the violated bounds, one a line, and exits 1 if there is any.

Exit status: 0 done (and, with --check, no bound violated), 1 a bound violated (--check),
2 bad usage (no such folder, not a save, a range outside the log, a log without events,
--png without matplotlib). Damage in the log is a note on stderr; the report covers what is
intact.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from agent_world.argtypes import tick
from agent_world.cli.replay import resolve_world_path
from agent_world.config import ConfigError, load_config
from agent_world.persistence import SaveError
from agent_world.report import DEFAULT_WINDOW, MIN_WINDOW, Report, ReportError, build_report
from agent_world.report.checks import Finding, evaluate, violations
from agent_world.report.plots import load_pyplot, write_plots
from agent_world.report.render import render_json, render_text

__all__ = ["EXIT_OK", "EXIT_USAGE", "EXIT_VIOLATED", "build_parser", "main"]

EXIT_OK = 0
EXIT_VIOLATED = 1
EXIT_USAGE = 2


def _window(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of ticks, got {text!r}") \
            from None
    if value < MIN_WINDOW:
        raise argparse.ArgumentTypeError(f"expected at least {MIN_WINDOW} ticks, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py report",
        description="The liveliness report of a saved world, per window of ticks, from its "
                    "event log alone (the world is not run). Exit status: 0 done, 1 a bound "
                    "violated (with --check), 2 bad usage.")
    parser.add_argument("path", type=Path, help="the save folder (e.g. saves/default), or "
                                                "the name of a world in paths.saves")
    parser.add_argument("--from", dest="first", type=tick, metavar="T",
                        help="first tick reported (default: the first after the first "
                             "snapshot)")
    parser.add_argument("--to", dest="last", type=tick, metavar="T",
                        help="last tick reported (default: the end of the log)")
    parser.add_argument("--window", type=_window, default=DEFAULT_WINDOW, metavar="N",
                        help=f"ticks per window (default {DEFAULT_WINDOW:,}; at least "
                             f"{MIN_WINDOW})")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (world, windows, total, census, notes, "
                             "checks) instead of the text")
    parser.add_argument("--check", action="store_true",
                        help="print only the violated bounds, one a line; exit 1 if any")
    parser.add_argument("--png", type=Path, metavar="DIR",
                        help="also draw plots into DIR (needs: pip install -e '.[plots]')")
    parser.add_argument("--config", metavar="FILE",
                        help="YAML config whose paths.saves resolves a bare NAME (default: "
                             "./config.yaml if present)")
    return parser


def _print_checks(findings: tuple[Finding, ...], out: TextIO) -> None:
    bad = violations(findings)
    for finding in bad:
        print(finding.line(), file=out)
    skipped = sum(1 for f in findings if f.status == "skipped")
    evaluated = len(findings) - skipped
    if bad:
        print(f"{len(bad)} of {evaluated} checks violated ({skipped} skipped)", file=out)
    else:
        print(f"all {evaluated} checks passed ({skipped} skipped)", file=out)


def _output(report: Report, findings: tuple[Finding, ...], args: argparse.Namespace) -> None:
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        sys.stdout.write(render_json(report, findings))
    elif args.check:
        _print_checks(findings, sys.stdout)
    else:
        sys.stdout.write(render_text(report, findings))


def main(argv: Sequence[str] | None = None) -> int:
    """The ``report`` command; returns the exit status (EXIT_*)."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        config = load_config(args.config)
        path = resolve_world_path(args.path, config)
        pyplot = load_pyplot() if args.png is not None else None
        report = build_report(path, first=args.first, last=args.last, window=args.window)
    except (ConfigError, SaveError, ReportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    findings = evaluate(report)
    _output(report, findings, args)
    if pyplot is not None:
        try:
            written = write_plots(report, args.png, pyplot)
        except OSError as exc:
            print(f"error: cannot write the plots to {args.png} ({exc.strerror or exc}); "
                  "give a folder you can write to", file=sys.stderr)
            return EXIT_USAGE
        print(f"wrote {len(written)} plots to {args.png}",
              file=sys.stderr if args.json else sys.stdout)
    if args.check and violations(findings):
        return EXIT_VIOLATED
    return EXIT_OK
