"""``python main.py schema``: JSON Schema for what a brain reads and answers.

Prints one JSON document: the observation, the decision, every action, and every ability
(the built-in ones, plus those generated in a saved world with ``--world``). ``--part``
prints one of them. Exit status 0, or 2 for bad usage (no such world, not a save).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import orjson

from agent_world.cli.replay import resolve_world_path
from agent_world.config import Config, ConfigError, load_config
from agent_world.contract.schema import every_schema
from agent_world.core.abilities import AbilityError, AbilityMeta
from agent_world.persistence import SaveError, SaveFolder
from agent_world.persistence.snapshots import load_latest_snapshot
from agent_world.sandbox.host import load_builtins

__all__ = ["PARTS", "build_parser", "main"]

PARTS = ("observation", "decision", "actions", "abilities")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py schema",
        description="Print JSON Schema (draft 2020-12) for the observation a brain reads, "
                    "the decision it answers, every action and every ability.")
    parser.add_argument("--part", choices=PARTS, help="print only this part")
    parser.add_argument("--world", type=Path, metavar="PATH",
                        help="also the abilities generated in this saved world (a save "
                             "folder or a world's name)")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="configuration file (paths.saves and llm.plan_actions)")
    return parser


def _generated(path: Path, config: Config) -> list[AbilityMeta]:
    folder = SaveFolder.open(resolve_world_path(path, config))
    notes: list[str] = []
    loaded = load_latest_snapshot(folder, config, notes)
    try:
        return [spec.meta for spec in loaded.world.abilities.generated.values()]
    finally:
        loaded.world.close()


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config)
        metas = [spec.meta for spec in load_builtins()]
        if args.world is not None:
            metas.extend(_generated(args.world, config))
    except (ConfigError, SaveError, AbilityError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    doc = every_schema(metas, max_actions=config.llm.plan_actions)
    out = doc if args.part is None else doc[args.part]
    sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0
