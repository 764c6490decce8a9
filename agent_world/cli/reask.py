"""``python main.py reask saves/NAME --brain BRAIN``: put a recorded world's decisions to
another brain, model or prompt (``recorded.reask``).

    python main.py reask saves/w --brain builtin
    python main.py reask saves/w --brain builtin,forager --from 1000 --to 5000 --sample 500
    python main.py reask saves/w --brain llm --model gpt-4o-mini --agents 17,23

Prints a row per brain (valid answers, agreement with the logged action, latency, tokens and
cost) and the actions chosen, and writes ``BRAIN.jsonl`` (every observation with its logged
and new decision) and ``report.json`` to ``--out`` (default ``paths.runs/reask-NAME-DATE``).
The save folder is only read, without its lock: a running world can be re-asked.

Exit status: 0 done; 1 the recording cannot be replayed to a decision (it diverges or its
log stops short); 2 bad input (no such folder, a tick outside the log, an agent not alive
then, an unknown brain or model), one line, with nothing written anywhere.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import sys
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
from agent_world.cli.replay import available_cpus, resolve_world_path, sandboxed
from agent_world.config import ConfigError, load_config
from agent_world.persistence import SaveError, SaveFolder
from agent_world.persistence.lock import lock_holder
from agent_world.recorded.askers import ModelRefused
from agent_world.recorded.decisions import RecordError, SelectionError
from agent_world.recorded.reask import (
    ReaskError,
    ReaskOptions,
    prepare_reask,
    render,
    run_reask,
)
from agent_world.runs import RunFolder, RunInUse, prune_runs

__all__ = ["EXIT_OK", "EXIT_RECORDING", "EXIT_USAGE", "build_parser", "main"]

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python main.py reask",
        description="Rebuild the exact observation behind each decision a saved world "
                    "logged (by replaying to its tick) and ask other brains for their "
                    "decision there, without changing the world. Exit status: 0 done, 1 the "
                    "recording cannot be replayed, 2 bad input.")
    add_decision_range(parser, "re-ask")
    parser.add_argument("--brain", required=True, metavar="BRAIN[,BRAIN]",
                        help="comma-separated: builtin, llm, a registered brain or "
                             "policy:NAME (the names eval --brains takes)")
    parser.add_argument("--model", help="with --brain llm: the model to ask (default "
                                        "llm.model)")
    parser.add_argument("--sample", type=positive_int, metavar="N",
                        help="re-ask N of the decisions, drawn with --seed (the same N and "
                             "seed draw the same decisions)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--workers", type=positive_int, default=available_cpus(),
                        help="processes, each replaying a span of the log from a saved "
                             "state (default: the cores); a short recording is one span")
    parser.add_argument("--out", type=Path, help="where the records and the report go "
                                                 "(default paths.runs/reask-NAME-DATE)")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="configuration: the LLM, registered brains (default: "
                             "config.yaml if present)")
    parser.add_argument("--brains-path", metavar="DIR", help="a folder to import brains from")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    brains = tuple(b.strip() for b in args.brain.split(",") if b.strip())
    try:
        config = load_config(args.config)
        root = resolve_world_path(args.path, config)
        folder = SaveFolder.open(root)
    except (ConfigError, SaveError) as exc:
        return usage_error(str(exc))
    options = ReaskOptions(brains=brains, model=args.model, brains_path=args.brains_path,
                           first=args.first, last=args.last, agents=args.agents,
                           sample=args.sample, seed=args.seed)
    out = args.out or Path(config.paths.runs) / (
        f"reask-{folder.name}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    try:  # everything is checked before anything is written
        plan = prepare_reask(folder.root, config, options, out, workers=args.workers)
    except (ReaskError, SelectionError, SaveError) as exc:
        return usage_error(str(exc))
    if lock_holder(folder.root) is not None:
        print(f"note: world '{folder.name}' is running; re-asking what it has written so "
              "far", file=sys.stderr)
    made = not out.exists()
    try:
        run = RunFolder.start(out, kind="reask", scenario=folder.name, episodes=0, ticks=0)
    except (RunInUse, OSError) as exc:
        return usage_error(f"--out {out}: {exc}")
    try:
        result = run_reask(plan, setup_factory=sandboxed,
                           log=lambda text: print(text, file=sys.stderr, flush=True))
    except ModelRefused as exc:
        run.finish()
        if made:  # the model was refused at its first call: nothing worth keeping
            shutil.rmtree(out, ignore_errors=True)
        return usage_error(str(exc))
    except RecordError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RECORDING
    finally:
        run.finish()
    for line in prune_runs(config.paths, spare=out):
        print(line, file=sys.stderr)
    print("\n".join(render(result.report)))
    print(f"\nreport: {out / 'report.json'} ({result.seconds:.1f} s, {result.spans} "
          f"span{'s' * (result.spans != 1)})", file=sys.stderr)
    return EXIT_OK

