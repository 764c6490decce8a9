"""The two ways a golden world is continued, shared by its maker and its test: replayed
from its first snapshot (every logged hash verified), or resumed from its last snapshot;
then ``ticks`` more ticks with no inputs. Both return (hash at the log's end, hash after)."""

from __future__ import annotations

from pathlib import Path

from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence import SaveFolder, open_world, replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.sandbox import Sandbox

GOLDEN = Path(__file__).resolve().parent
INDEX = GOLDEN / "golden.json"


def reading_config(saved: Path) -> Config:
    """Settings to open ``saved`` with: its own simulation settings come from its
    snapshots; these say only where it lies."""
    return Config().replace(world={"name": saved.name},
                            paths={"saves": str(saved.parent),
                                   "logs": str(saved.parent.parent / "logs")},
                            log={"echo": False})


def _continue(world: World, ticks: int) -> str:
    for _ in range(ticks):
        world.step()
    return world.state_hash()


def continued_by_replay(saved: Path, ticks: int) -> tuple[str, str]:
    """Replay the whole log from the first snapshot, verifying every logged state hash and
    every snapshot passed, then run ``ticks`` more. Raises at the first divergence."""
    config = reading_config(saved)
    folder = SaveFolder.open(saved)
    with Sandbox(config) as sandbox:
        start = load_first_snapshot(folder, config)
        world = start.world
        sandbox.install(world)
        try:
            result = replay(world, folder, check_snapshots=True)
            problems = [*result.problems, *result.torn, *([result.damaged]
                                                          if result.damaged else [])]
            if problems or result.gap or result.checks == 0:
                raise AssertionError(f"{saved.name}: the replay was not whole: {problems}, "
                                     f"gap {result.gap}, {result.checks} hashes checked")
            if world.tick != result.last_logged_tick:
                raise AssertionError(f"{saved.name}: the replay stopped at tick {world.tick}"
                                     f" of {result.last_logged_tick}")
            return world.state_hash(), _continue(world, ticks)
        finally:
            world.close()


def continued_by_resume(saved: Path, ticks: int) -> tuple[str, str]:
    """Resume ``saved`` as ``python main.py`` would (it writes into the folder: give it a
    copy), then run ``ticks`` more."""
    config = reading_config(saved)
    with Sandbox(config) as sandbox:
        opened = open_world(config, setup=sandbox.install)
        try:
            if not opened.resumed:
                raise AssertionError(f"{saved.name}: made a new world instead of resuming")
            return opened.world.state_hash(), _continue(opened.world, ticks)
        finally:
            opened.close()
