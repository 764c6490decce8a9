"""Checkpoints of a recorded world, so that a served replay can seek to any tick quickly.

The running world leaves seek points in its save folder, about a second of replay apart
(``persistence.seek_target_ms``), but not always everywhere: older ones thin out past the
budget, a world recorded with ``seek_interval_ticks: 0`` has none, and neither have folders
written before seek points existed. While a replay is served, a child process (``python
-m agent_world.web.checkpoints``) replays the whole log once, ahead of the viewer and
verifying every logged state hash on the way, and writes the state every ``every`` ticks
into a private temporary folder, where the folder lacks a seek point of that tick. The files
are snapshot files (``persistence.seekpoints.write_state_file``), like seek points. A seek
starts from the nearest of those, the folder's snapshots and seek points, or the world on
screen, whichever is latest.

The child writes each checkpoint whole (a temporary name, then a rename) and says on stdout,
one JSON line each, how far it got (``{"tick": T}``), where it ended (``{"end": T}``) or
what stopped it (``{"error": "..."}``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from agent_world.config import config_from_dict
from agent_world.persistence import DivergenceError, SaveFolder
from agent_world.persistence.folder import snapshot_files
from agent_world.persistence.replay import LogStepper
from agent_world.persistence.seekpoints import write_state_file
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.sandbox import Sandbox

__all__ = ["CHECKPOINT_EVERY", "checkpoint_path"]

CHECKPOINT_EVERY = 100  # ticks: at ~130 verified ticks/s (1,000 agents) under a second


def checkpoint_path(directory: Path, tick: int) -> Path:
    return directory / f"{tick:010d}.json.gz"


def _say(**line: object) -> None:
    sys.stdout.write(orjson.dumps(line).decode() + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_world.web.checkpoints")
    parser.add_argument("folder", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--every", type=int, default=CHECKPOINT_EVERY)
    args = parser.parse_args(argv)
    config = config_from_dict(orjson.loads((args.out / "config.json").read_bytes()))
    sandbox = Sandbox(config, wait=False)
    try:
        folder = SaveFolder.open(args.folder)
        world = load_first_snapshot(folder, config).world
        sandbox.install(world)
        stepper = LogStepper(world, folder, verify=True)
        present = {tick for tick, _path in snapshot_files(folder.seek_dir)}
        while stepper.more():
            stepper.step()
            if world.tick % args.every == 0:
                if world.tick not in present:
                    write_state_file(checkpoint_path(args.out, world.tick), world.tick,
                                     world.state_bytes())
                _say(tick=world.tick)
        _say(end=world.tick)
        return 0
    except DivergenceError as exc:
        _say(error=f"the log does not replay: {str(exc).splitlines()[0]}")
        return 1
    except Exception as exc:  # the viewer keeps working without checkpoints; say why
        _say(error=f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        sandbox.close()


if __name__ == "__main__":
    sys.exit(main())
