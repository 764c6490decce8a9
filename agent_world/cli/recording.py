"""The arguments every command that reads a recording's decisions takes (``reask``,
``export``): the save folder, and which decisions (the asked ticks and the agents)."""

from __future__ import annotations

import argparse
from pathlib import Path

from agent_world.argtypes import agent_ids, tick

__all__ = ["add_decision_range"]


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
