"""What every command that reads a recording's decisions shares (``reask``, ``export``):
its arguments (the save folder, the asked ticks and the agents) and its exit statuses."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agent_world.argtypes import agent_ids, tick

__all__ = ["EXIT_OK", "EXIT_RECORDING", "EXIT_USAGE", "add_decision_range", "usage_error"]

EXIT_OK = 0
EXIT_RECORDING = 1  # the recording cannot be replayed to a decision
EXIT_USAGE = 2  # bad input: one line, nothing written


def usage_error(text: str) -> int:
    """Say ``text`` as the one line of bad input; the exit status for it."""
    print(f"error: {text}", file=sys.stderr)
    return EXIT_USAGE


def add_decision_range(parser: argparse.ArgumentParser, verb: str) -> None:
    """``path``, ``--from``, ``--to`` and ``--agents``; ``verb`` says what is done to the
    decisions chosen (``re-ask``, ``export``)."""
    parser.add_argument("path", type=Path, help="the save folder (e.g. saves/default), or "
                                                "the name of a world in paths.saves")
    parser.add_argument("--from", dest="first", type=tick, metavar="T",
                        help=f"the first asked tick to {verb} (default: the log's first)")
    parser.add_argument("--to", dest="last", type=tick, metavar="T",
                        help=f"the last asked tick to {verb} (default: the log's last)")
    parser.add_argument("--agents", type=agent_ids, metavar="ID,ID",
                        help="only these agents' decisions (ids)")
