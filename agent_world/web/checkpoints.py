"""Checkpoints of a recorded world, so that a served replay can seek to any tick quickly.

A save folder keeps a snapshot every ``persistence.snapshot_interval_ticks`` (3,000 by
default): replaying that far takes tens of seconds at 1,000 agents. While a replay is served,
a child process (``python -m agent_world.web.checkpoints``) replays the whole log once,
ahead of the viewer and verifying every logged state hash on the way, and writes the state
every ``every`` ticks into a private temporary folder. A seek starts from the nearest of
those, the folder's own snapshots, or the world on screen, whichever is latest.

The child writes each checkpoint whole (a temporary name, then a rename) and says on stdout,
one JSON line each, how far it got (``{"tick": T}``), where it ended (``{"end": T}``) or
what stopped it (``{"error": "..."}``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import zlib
from pathlib import Path

import orjson

from agent_world.config import Config, config_from_dict
from agent_world.core.world import World
from agent_world.persistence import DivergenceError, SaveFolder
from agent_world.persistence.replay import LogStepper
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.sandbox import Sandbox

__all__ = ["CHECKPOINT_EVERY", "load_checkpoint", "nearest_checkpoint", "write_checkpoint"]

CHECKPOINT_EVERY = 100  # ticks: at ~130 verified ticks/s (1,000 agents) under a second
_NAME = re.compile(r"^(\d{12})\.state\.z$")


def write_checkpoint(directory: Path, world: World) -> Path:
    path = directory / f"{world.tick:012d}.state.z"
    partial = path.with_suffix(".partial")
    partial.write_bytes(zlib.compress(world.state_bytes(), 1))
    os.replace(partial, path)
    return path


def nearest_checkpoint(directory: Path, tick: int) -> int | None:
    """The latest checkpoint tick at or before ``tick``, if any."""
    best = None
    for entry in os.scandir(directory):
        found = _NAME.match(entry.name)
        if found is not None:
            at = int(found.group(1))
            if at <= tick and (best is None or at > best):
                best = at
    return best


def load_checkpoint(directory: Path, tick: int, config: Config) -> World:
    data = zlib.decompress((directory / f"{tick:012d}.state.z").read_bytes())
    return World.from_state(orjson.loads(data), config)


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
        while stepper.more():
            stepper.step()
            if world.tick % args.every == 0:
                write_checkpoint(args.out, world)
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
