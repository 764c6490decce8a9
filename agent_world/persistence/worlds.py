"""Opening a world for a run: a new one, a resumed one, or a fork of another.

Whatever writes a world folder takes its lock first (``lock.py``) and keeps it in
``folder.lock`` until the session's persistence closes. A new world is written in an order
that makes an interruption recognisable: sub-folders, the first snapshot, world_state.json,
ability sources, and meta.json last. A folder without meta.json that holds only those is an
unfinished creation, which the next start replaces; a creation that fails removes what it
made, so the next try works.
"""

from __future__ import annotations

import gzip
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_world import __version__
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence.eventlog import ChunkWriter, salvage_damaged
from agent_world.persistence.files import disk_problem, write_atomic
from agent_world.persistence.folder import FORMAT_VERSION, SaveError, SaveFolder, now_iso
from agent_world.persistence.lock import WorldInUse, WorldLock
from agent_world.persistence.minds import copy_minds
from agent_world.persistence.replay import ReplayResult, replay
from agent_world.persistence.seekpoints import discard_seek_points_after
from agent_world.persistence.snapshots import (
    encode_snapshot,
    load_latest_snapshot,
    load_nearest_snapshot,
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

    def close(self) -> None:
        """Close the world and free its folder's lock: for an opened world that no session
        runs (a session's persistence frees the lock when it closes)."""
        self.world.close()
        if self.folder is not None and self.folder.lock is not None:
            self.folder.lock.release()


def write_first_snapshot(folder: SaveFolder, world: World) -> str:
    """The starting point every replay begins from; kept forever."""
    data, digest = encode_snapshot(world.tick, world.state_bytes())
    write_atomic(folder.snapshot_path(world.tick), gzip.compress(data, 3))
    write_atomic(folder.state_path, data)
    if folder.meta_path.exists():
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


# -- claiming a folder ------------------------------------------------------------------------


def _check_saves(saves: Path) -> None:
    if saves.exists() and not saves.is_dir():
        raise SaveError(f"paths.saves = {str(saves)!r} is a file, not a folder; set "
                        "paths.saves to a folder (it is created if missing) or move the file "
                        "away")


def _claim(root: Path, name: str) -> tuple[WorldLock, bool]:
    """Lock the world folder ``root`` before anything in it is written, making the folder
    if it is missing. Returns the lock and whether the folder was made here."""
    if SaveFolder.describe(root) == "foreign":
        raise SaveError(f"{root} is not an Agent World save (no meta.json); pick another "
                        "world name or move the folder away")
    made = not root.is_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SaveError(f"cannot create the folder of world '{name}': "
                        f"{disk_problem(exc, root.parent)}") from None
    try:
        return WorldLock.acquire(root, name), made
    except WorldInUse:
        raise
    except OSError as exc:
        left = _undo_creation(root, remove_root=True) if made else ""
        raise SaveError(f"cannot lock world '{name}' for this run: "
                        f"{disk_problem(exc, root)}{left}") from None


def _undo_creation(root: Path, *, remove_root: bool) -> str:
    """Remove what an unfinished creation made (it holds nothing to lose); returns what to
    add to the error when even that fails."""
    try:
        if remove_root:
            shutil.rmtree(root)
        elif root.is_dir():
            SaveFolder(root).clear()
    except OSError as exc:
        return (f"; the unfinished folder could not be removed ({exc.strerror or exc}): "
                f"delete {root} by hand")
    return ""


def recorded_config(config: Config, world: World, name: str) -> dict[str, Any]:
    """The run's configuration as meta.json keeps it, with the world's own name and seed: a
    fork or a resumed world keeps the seed it was made with whatever the run's config says
    (meta.json showed ``seed: 913`` beside ``config.world.seed: 42``)."""
    return config.replace(world={"seed": world.seed, "name": name}).to_dict()


def _create(root: Path, name: str, lock: WorldLock, *, remove_root: bool, config: Config,
            world: World, origin: dict[str, Any] | None) -> SaveFolder:
    """Write a new world's folder, meta.json last. On failure remove it again and close
    the world, which nobody else will."""
    try:
        folder = SaveFolder.prepare(root)
        folder.lock = lock
        write_first_snapshot(folder, world)
        for spec in world.abilities.generated.values():
            folder.write_ability(spec.name, spec.source)
        folder.write_meta({"format": FORMAT_VERSION, "app": f"agent-world {__version__}",
                           "created": now_iso(), "world": name, "seed": world.seed,
                           "rules": world.ruleset.version,
                           "config": recorded_config(config, world, name), "origin": origin,
                           "updated": now_iso(), "last_tick": world.tick,
                           "last_snapshot_tick": world.tick})
    except OSError as exc:
        world.close()
        left = _undo_creation(root, remove_root=remove_root)
        raise SaveError(f"cannot create world '{name}' in {root}: "
                        f"{disk_problem(exc, root)}{left}") from None
    except BaseException:
        world.close()
        _undo_creation(root, remove_root=remove_root)
        raise
    return folder


# -- opening ----------------------------------------------------------------------------------


def open_world(config: Config, *, seed_given: bool = False,
               setup: Setup | None = None) -> OpenedWorld:
    """The configured world: resumed from its save folder, or new (and saved from tick 0).

    Resuming loads the latest good snapshot and re-applies every logged input after it,
    verifying each logged state hash, so the world is exactly where the log ends. The
    returned folder holds the world's lock (``OpenedWorld.close`` or the session's
    persistence frees it); a world another process runs is refused with WorldInUse."""
    if not config.persistence.enabled:
        return OpenedWorld(_prepare(World.create(config), setup), None)
    saves = Path(config.paths.saves)
    _check_saves(saves)
    name = config.world.name
    root = saves / name
    lock, made = _claim(root, name)
    try:
        kind = SaveFolder.describe(root)
        if kind == "save":
            return _resume(config, root, lock, seed_given=seed_given, setup=setup)
        world = _prepare(World.create(config), setup)
        folder = _create(root, name, lock, remove_root=made or kind == "unfinished",
                         config=config, world=world, origin=None)
        return OpenedWorld(world, folder)
    except BaseException:
        lock.release()
        raise


def _resume(config: Config, root: Path, lock: WorldLock, *, seed_given: bool,
            setup: Setup | None) -> OpenedWorld:
    folder = SaveFolder.open(root)
    folder.lock = lock
    meta = folder.read_meta()
    name = config.world.name
    if seed_given and meta.get("seed") != config.world.seed:
        raise SaveError(f"world '{name}' already exists with seed {meta.get('seed')}; --seed "
                        "only applies to a new world: add --world NEW_NAME to start one")
    notes: list[str] = []
    try:
        notes.extend(folder.ensure_layout())
        notes.extend(folder.remove_temporary())
        folder.check_writable()
    except OSError as exc:
        raise SaveError(f"cannot resume world '{name}': {disk_problem(exc, root)}") from None
    snap = load_latest_snapshot(folder, config, notes)
    world = _prepare(snap.world, setup)
    try:
        saved_rules = world.config.to_dict()
        result = replay(world, folder)
        notes.extend(result.warnings)
        if result.gap is not None:
            gap = result.gap
            raise SaveError(
                f"cannot resume world '{name}': its newest usable snapshot is at tick "
                f"{snap.tick}, and the log lost ticks {gap.start}..{gap.tick} ({gap.reason}), "
                f"so the world cannot be brought past tick {world.tick}; start a new world "
                f"from there: python main.py replay {root} --to {world.tick} --fork NEW_NAME")
        try:
            notes.extend(_repair(folder, config, world, result))
            stale = discard_seek_points_after(folder, world.tick)
            if stale:
                notes.append(f"deleted {stale} seek point(s) past tick {world.tick}, where the "
                             "log ends: the world goes on from there anew")
            folder.update_meta(config=recorded_config(config, world, name),
                               rules=world.ruleset.version, last_tick=world.tick)
        except OSError as exc:
            raise SaveError(f"cannot resume world '{name}': "
                            f"{disk_problem(exc, root)}") from None
    except BaseException:
        world.close()
        raise
    notes.extend(_setting_differences(saved_rules, config))
    return OpenedWorld(world, folder, resumed=True, replayed_ticks=result.ticks, notes=notes)


def _repair(folder: SaveFolder, config: Config, world: World,
            result: ReplayResult) -> list[str]:
    """Make the folder ready to log on at ``world.tick`` without losing an intact line: cut
    torn last lines, salvage a damaged gzip file, reopen a finished range the log continues
    in, and record with a ``gap`` marker any ticks whose lines are lost for good."""
    notes = [_cut_torn_tail(path, size) for path, size in result.torn]
    gap: tuple[int, str] | None = None
    if result.damaged is not None:
        salvage = salvage_damaged(folder, result.damaged)
        notes.extend(salvage.notes)
        lost_from = max(salvage.last_tick + 1, salvage.start)
        if lost_from <= world.tick:
            gap = (lost_from, f"{result.damaged.name} was damaged")
        else:
            notes.append(f"resumed at tick {world.tick}, the last tick the intact log "
                         "reaches")
    elif not folder.chunks():
        history = folder.history()
        first = history[0][0] if history else 0
        if world.tick > first:
            gap = (first + 1, "the event log was missing")
    writer = ChunkWriter(folder, config.persistence.events_chunk_ticks)
    try:
        settled = writer.prepare(world.tick)
        notes.extend(writer.notes)
        if settled is not None and settled.damaged and gap is None:
            lost_from = max(settled.last_tick + 1, settled.start)
            if lost_from <= world.tick:
                gap = (lost_from, f"the finished range {settled.start}.. was damaged")
        if gap is not None:
            start, reason = gap
            line = {"tick": world.tick, "seq": 0, "kind": "marker", "type": "gap",
                    "at": now_iso(), "from": start, "reason": reason}
            writer.write(world.tick, orjson.dumps(line) + b"\n")
            notes.append(f"the log lost ticks {start}..{world.tick} ({reason}); the world "
                         f"resumed from its snapshot at tick {world.tick} and logs on, but a "
                         f"replay from the first snapshot stops at tick {start - 1} (a gap "
                         "marker records this)")
    finally:
        writer.close()
    return notes


def fork_world(source: SaveFolder, tick: int, new_name: str, config: Config, *,
               setup: Setup | None = None, world: World | None = None) -> OpenedWorld:
    """Replay ``source`` to ``tick`` and start a new save folder there; the source is only
    read. The new folder is locked (before the replay) like any other run's. ``world``: the
    source already replayed to ``tick`` (a served replay's, set up), used as it is."""
    saves = Path(config.paths.saves)
    _check_saves(saves)
    target = saves / new_name
    if SaveFolder.describe(target) not in ("missing", "empty", "unfinished"):
        raise SaveError(f"{target} already exists; fork into a new name")
    lock, made = _claim(target, new_name)
    try:
        kind = SaveFolder.describe(target)
        if kind not in ("missing", "empty", "unfinished"):
            raise SaveError(f"{target} already exists; fork into a new name")
        remove_root = made or kind == "unfinished"
        try:
            if world is None:
                world, notes = _replay_to(source, tick, config, setup)
            elif world.tick != tick:
                raise SaveError(f"the world to fork is at tick {world.tick}, not {tick}")
            else:
                notes = []
        except BaseException:
            _undo_creation(target, remove_root=remove_root)
            raise
        source_meta = source.read_meta()
        digest = world.state_hash()
        origin = {"world": source_meta.get("world", source.name), "path": str(source.root),
                  "tick": tick, "state_hash": digest}
        folder = _create(target, new_name, lock, remove_root=remove_root, config=config,
                         world=world, origin=origin)
    except BaseException:
        lock.release()
        raise
    notes.append(f"forked from {source.root} at tick {tick} (state {digest})")
    notes.extend(_fork_minds(source, folder, tick))
    return OpenedWorld(world, folder, notes=notes)


def _fork_minds(source: SaveFolder, folder: SaveFolder, tick: int) -> list[str]:
    """The minds of the source's snapshot at or before ``tick`` go with the fork (copied as
    they are, under their own tick); those of a folder from before minds/ too. Minds are not
    world state: a fork that cannot copy them still runs, its agents with empty memories."""
    try:
        at = copy_minds(source.minds_dir, folder.minds_dir, tick)
        if at is None and source.memories_dir.is_dir():
            shutil.copytree(source.memories_dir, folder.memories_dir, dirs_exist_ok=True)
            return ["the fork's LLM agents keep the memories the source saved last"]
    except OSError as exc:
        return [f"the minds of {source.root} could not be copied into the fork "
                f"({disk_problem(exc, folder.root)}); its agents start with empty memories"]
    if at is None:
        return []
    return [f"the fork's agents keep their minds as of tick {at}"
            + ("" if at == tick else f" (the snapshot before tick {tick}: what they lived "
                                     f"through in ticks {at + 1}..{tick} is not in them)")]


def _replay_to(source: SaveFolder, tick: int, config: Config,
               setup: Setup | None) -> tuple[World, list[str]]:
    notes: list[str] = []
    snap = load_nearest_snapshot(source, config, tick, notes)
    world = _prepare(snap.world, setup)
    try:
        result = replay(world, source, until=tick)
        notes.extend(result.warnings)
        if world.tick != tick:
            why = (f" (it lost ticks {result.gap.start}..{result.gap.tick}: "
                   f"{result.gap.reason})" if result.gap is not None else "")
            raise SaveError(f"the log of {source.root} ends at tick {world.tick}{why}; fork "
                            "at or before it")
    except BaseException:
        world.close()
        raise
    return world, notes
