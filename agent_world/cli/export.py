"""``python main.py export saves/NAME``: a recorded world's decisions as trajectories
(``recorded.export``), for offline RL and preference tuning.

    python main.py export saves/w
    python main.py export saves/w --format parquet --reward foraging --window 200
    python main.py export saves/w --reward food_gathered=1,damage_taken=-0.5 --agents 17,23

Writes one record per logged decision (observation, decision, reasoning, model, tokens and,
with ``--reward``, the outcome over ``--window`` ticks) to ``--out`` (default
``NAME-trajectories.jsonl`` or ``.parquet`` in the current folder), streamed in bounded
memory. The save folder is only read, without its lock.

Exit status: 0 done; 1 the recording cannot be replayed to a decision; 2 bad input (no such
folder, a tick outside the log, an agent not alive then, an unknown metric or scenario, an
existing output file, Parquet without pyarrow), one line, with nothing written.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from agent_world.argtypes import positive_int
from agent_world.cli.recording import (
    EXIT_OK,
    EXIT_RECORDING,
    EXIT_USAGE,
    add_decision_range,
    usage_error,
)
from agent_world.cli.replay import resolve_world_path, sandboxed
from agent_world.config import ConfigError, load_config
from agent_world.persistence import SaveError, SaveFolder
from agent_world.recorded.decisions import RecordError, SelectionError
from agent_world.recorded.export import (
    FORMATS,
    ExportOptions,
    export,
    parquet_available,
)
from agent_world.recorded.outcomes import Reward, RewardError

__all__ = ["EXIT_OK", "EXIT_RECORDING", "EXIT_USAGE", "build_parser", "main"]

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py export",
        description="Write every decision a saved world logged, with the observation it "
                    "answered, its reasoning, model and tokens and the outcome that "
                    "followed, as JSON Lines or Parquet. Exit status: 0 done, 1 the "
                    "recording cannot be replayed, 2 bad input.")
    add_decision_range(parser, "export")
    parser.add_argument("--format", choices=FORMATS, default="jsonl",
                        help="jsonl (default) or parquet (needs pyarrow: pip install "
                             "'agent-world[export]')")
    parser.add_argument("--out", type=Path, help="the file to write (default "
                                                 "NAME-trajectories.FORMAT here)")
    parser.add_argument("--reward", metavar="SCENARIO|METRIC=W,...",
                        help="the outcome's reward: a scenario's score weights (a built-in "
                             "name or a YAML file) or weights of metrics, e.g. "
                             "food_gathered=1,damage_taken=-0.5; without it, no outcome")
    parser.add_argument("--window", type=positive_int, default=100, metavar="TICKS",
                        help="ticks after a decision is applied over which its outcome is "
                             "measured (default 100; shorter at a death or the log's end)")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="configuration (default: config.yaml if present)")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config)
        folder = SaveFolder.open(resolve_world_path(args.path, config))
        reward = Reward.parse(args.reward) if args.reward is not None else None
    except (ConfigError, SaveError, RewardError) as exc:
        return usage_error(str(exc))
    out: Path = args.out or Path(f"{folder.name}-trajectories.{args.format}")
    if args.format == "parquet" and not parquet_available():
        return usage_error("--format parquet needs pyarrow: pip install 'agent-world[export]' "
                      "(or export --format jsonl)")
    if out.exists():
        return usage_error(f"--out {out} exists already; give another --out or remove it")
    if not out.parent.is_dir():
        return usage_error(f"--out {out}: no folder {out.parent}; make it first")
    if out.resolve().is_relative_to(folder.root.resolve()):
        return usage_error(f"--out {out} is inside the save folder, which export only reads; "
                      "write it elsewhere")
    options = ExportOptions(out=out, format=args.format, reward=reward, window=args.window,
                            first=args.first, last=args.last, agents=args.agents or ())
    began = time.perf_counter()
    try:
        result = export(folder, config, options, setup_factory=sandboxed,
                        progress=lambda n: print(f"  {n:,} decisions", file=sys.stderr,
                                                 flush=True))
    except (SelectionError, RewardError) as exc:
        return usage_error(str(exc))
    except RecordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RECORDING
    selection = result.selection
    skipped = (f"; {selection.undated} logged before decisions recorded their asked tick, "
               "skipped" if selection.undated else "")
    print(f"{result.records:,} decisions of {folder.name} (asked at ticks {selection.first}.."
          f"{selection.last}) to {result.path}{skipped} "
          f"({time.perf_counter() - began:.1f} s)")
    return EXIT_OK
