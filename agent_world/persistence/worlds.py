"""Opening a world for a run: a new one, a resumed one, or a fork of another."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence.eventlog import salvage_damaged
from agent_world.persistence.files import write_atomic
from agent_world.persistence.folder import SaveError, SaveFolder
from agent_world.persistence.replay import replay
from agent_world.persistence.snapshots import (
    encode_snapshot,
    load_latest_snapshot,
    load_snapshot_file,
)

__all__ = ["OpenedWorld", "Setup", "fork_world", "open_world", "write_first_snapshot"]

Setup = Callable[[World], None]
"""Prepares a world before it runs or replays (the sandbox attaches its runner and installs
the built-in abilities). Resume, replay and fork call it exactly as a new run does, so they
run the same code."""

_NOT_SIMULATION = ("name", "tick_rate")


@dataclass
class OpenedWorld:
    world: World
    folder: SaveFolder | None
    resumed: bool = False
    replayed_ticks: int = 0
    notes: list[str] = field(default_factory=list)


def write_first_snapshot(folder: SaveFolder, world: World) -> str:
    """The starting point every replay begins from; kept forever."""
    data, digest = encode_snapshot(world.tick, world.state_bytes())
    write_atomic(folder.snapshot_path(world.tick), gzip.compress(data, 3))
    write_atomic(folder.state_path, data)
    folder.update_meta(last_tick=world.tick, last_snapshot_tick=world.tick)
    return digest


def _setting_differences(saved: dict[str, Any], config: Config) -> list[str]:
    current = config.to_dict()
    notes = []
    for section in ("world", "game", "abilities"):
        for key, value in saved.get(section, {}).items():
            if key in _NOT_SIMULATION:
                continue
            now = current[section].get(key)
            if now != value:
                notes.append(f"{section}.{key}: the save uses {value!r}, the config says "
                             f"{now!r}; the save's value is kept (a world keeps its rules)")
    return notes


def _cut_torn_tail(path: Path, size: int) -> str:
    torn = path.stat().st_size - size
    os.truncate(path, size)
    return f"cut a torn line ({torn} bytes) off the end of {path.name}"


def _prepare(world: World, setup: Setup | None) -> World:
    if setup is not None:
        setup(world)
    return world


def open_world(config: Config, *, seed_given: bool = False,
               setup: Setup | None = None) -> OpenedWorld:
    """The configured world: resumed from its save folder, or new (and saved from tick 0).

    Resuming loads the latest good snapshot and re-applies every logged input after it,
    verifying each logged state hash, so the world is exactly where the log ends."""
    if not config.persistence.enabled:
        return OpenedWorld(_prepare(World.create(config), setup), None)
    root = Path(config.paths.saves) / config.world.name
    kind = SaveFolder.describe(root)
    if kind in ("missing", "empty"):
        world = _prepare(World.create(config), setup)
        folder = SaveFolder.create(root, {"world": config.world.name, "seed": world.seed,
                                          "config": config.to_dict(), "origin": None})
        write_first_snapshot(folder, world)
        return OpenedWorld(world, folder)
    folder = SaveFolder.open(root)
    meta = folder.read_meta()
    if seed_given and meta.get("seed") != config.world.seed:
        raise SaveError(f"world '{config.world.name}' already exists with seed "
                        f"{meta.get('seed')}; --seed only applies to a new world: add "
                        "--world NEW_NAME to start one")
    notes: list[str] = []
    snap = load_latest_snapshot(folder, config, notes)
    world = _prepare(snap.world, setup)
    saved_rules = world.config.to_dict()
    result = replay(world, folder)
    notes.extend(result.warnings)
    if result.torn_tail is not None:
        notes.append(_cut_torn_tail(*result.torn_tail))
    if result.damaged is not None:
        notes.extend(salvage_damaged(folder, result.damaged))
        notes.append(f"resumed at tick {world.tick}, the last tick the intact log reaches")
    notes.extend(_setting_differences(saved_rules, config))
    folder.update_meta(config=config.to_dict(), last_tick=world.tick)
    return OpenedWorld(world, folder, resumed=True, replayed_ticks=result.ticks, notes=notes)


def fork_world(source: SaveFolder, tick: int, new_name: str, config: Config, *,
               setup: Setup | None = None) -> OpenedWorld:
    """Replay ``source`` to ``tick`` and start a new save folder there; the source is only
    read."""
    target = Path(config.paths.saves) / new_name
    if SaveFolder.describe(target) not in ("missing", "empty"):
        raise SaveError(f"{target} already exists; fork into a new name")
    notes: list[str] = []
    starts = [(t, p) for t, p in source.history() if t <= tick]
    if not starts:
        raise SaveError(f"{source.root} has no snapshot at or before tick {tick}")
    snap = None
    for _t, path in reversed(starts):
        try:
            snap = load_snapshot_file(path, config)
            break
        except SaveError as exc:
            notes.append(f"skipping damaged snapshot: {exc}")
    if snap is None:
        raise SaveError(f"no usable snapshot at or before tick {tick} in {source.root}")
    world = _prepare(snap.world, setup)
    result = replay(world, source, until=tick)
    notes.extend(result.warnings)
    if world.tick != tick:
        raise SaveError(f"the log of {source.root} ends at tick {world.tick}; fork at or "
                        "before it")
    source_meta = source.read_meta()
    digest = world.state_hash()
    origin = {"world": source_meta.get("world", source.name), "path": str(source.root),
              "tick": tick, "state_hash": digest}
    folder = SaveFolder.create(target, {"world": new_name, "seed": world.seed,
                                        "config": config.to_dict(), "origin": origin})
    write_first_snapshot(folder, world)
    for spec in world.abilities.generated.values():
        folder.write_ability(spec.name, spec.source)
    notes.append(f"forked from {source.root} at tick {tick} (state {digest})")
    return OpenedWorld(world, folder, notes=notes)
