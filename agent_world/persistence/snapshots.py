"""Snapshot files: the world's state bytes wrapped with their tick and hash.

A snapshot is ``{"format": 1, "tick": T, "hash": H, "state": <World.get_state()>}``. It is
assembled by byte concatenation, so the state is serialised once (on the main thread) and
never again; loading rebuilds the world and checks that its hash is still H.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import orjson

from agent_world.config import Config
from agent_world.core.rules import saved_rules_version
from agent_world.core.world import World, WorldError, hash_state_bytes
from agent_world.persistence.folder import FORMAT_VERSION, RulesUnsupported, SaveError, SaveFolder

__all__ = ["SNAPSHOT_HEAD", "LoadedSnapshot", "decode_snapshot", "encode_snapshot",
           "load_latest_snapshot", "load_nearest_snapshot", "load_snapshot_file",
           "state_file_tick"]

SNAPSHOT_HEAD = re.compile(rb'^\{"format":\d+,"tick":(\d+),"hash":"([0-9a-f]{32})","state":')


def encode_snapshot(tick: int, state: bytes) -> tuple[bytes, str]:
    digest = hash_state_bytes(state)
    head = b'{"format":%d,"tick":%d,"hash":"%s","state":' % (FORMAT_VERSION, tick,
                                                              digest.encode("ascii"))
    return head + state + b"}", digest


@dataclass
class LoadedSnapshot:
    world: World
    tick: int
    hash: str
    source: Path


def decode_snapshot(data: bytes, config: Config, source: Path) -> LoadedSnapshot:
    """Rebuild the world a snapshot holds; SaveError if it is damaged in any way."""
    try:
        doc = orjson.loads(data)
        version, tick, digest, state = doc["format"], doc["tick"], doc["hash"], doc["state"]
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise SaveError(f"{source} is not a readable snapshot ({exc})") from None
    if version > FORMAT_VERSION:
        raise SaveError(f"{source} uses snapshot format {version}; this version reads "
                        f"{FORMAT_VERSION}: upgrade agent-world")
    try:
        saved_rules_version(state["config"].get("game", {}))
    except WorldError as exc:
        raise RulesUnsupported(f"{source}: {exc}") from None
    except (KeyError, TypeError, AttributeError):
        pass  # no readable config: from_state below says the state is unusable
    try:
        world = World.from_state(state, config)
    except (WorldError, KeyError, TypeError, ValueError) as exc:
        raise SaveError(f"{source} holds an unusable state ({type(exc).__name__}: {exc})") \
            from None
    actual = world.state_hash()
    if actual != digest or world.tick != tick:
        world.close()
        raise SaveError(f"{source} does not match its own hash (saved {digest}, rebuilt "
                        f"{actual}): the file is damaged")
    return LoadedSnapshot(world, tick, digest, source)


def load_snapshot_file(path: Path, config: Config) -> LoadedSnapshot:
    try:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if path.suffix == ".gz" else raw
    except (OSError, EOFError, zlib.error) as exc:
        raise SaveError(f"{path} cannot be read ({type(exc).__name__}: {exc})") from None
    return decode_snapshot(data, config, path)


def state_file_tick(folder: SaveFolder) -> int | None:
    """The tick world_state.json says it holds (read from its first bytes), if readable."""
    try:
        with folder.state_path.open("rb") as f:
            head = SNAPSHOT_HEAD.match(f.read(160))
    except OSError:
        return None
    return int(head.group(1)) if head is not None else None


def first_tick(folder: SaveFolder) -> int:
    """The tick of the world's first snapshot, where a replay starts (-1: none)."""
    history = folder.history()
    return history[0][0] if history else -1


def claimed_tick(folder: SaveFolder) -> int:
    """The last tick the folder says the world reached (meta.json or world_state.json)."""
    meta = folder.read_meta().get("last_tick")
    return max(meta if isinstance(meta, int) else -1, state_file_tick(folder) or -1)


def load_latest_snapshot(folder: SaveFolder, config: Config,
                         warnings: list[str]) -> LoadedSnapshot:
    """The newest state that loads and checks out: world_state.json or a later seek point,
    falling back through the history and the seek points.

    Each damaged file skipped adds a line to ``warnings``."""
    state_tick = state_file_tick(folder)
    saved = folder.saved_states()
    newer = [p for t, p in saved if state_tick is not None and t > state_tick]
    older = [p for t, p in saved if state_tick is None or t <= state_tick]
    candidates = [*newer[::-1], folder.state_path, *older[::-1]]
    for path in candidates:
        if not path.exists():
            if path == folder.state_path:
                warnings.append(f"{path} is missing; using the newest snapshot or seek "
                                "point that loads")
            continue
        try:
            return load_snapshot_file(path, config)
        except RulesUnsupported:
            raise
        except SaveError as exc:
            warnings.append(f"skipping damaged snapshot: {exc}")
    raise SaveError(f"{folder.root} has no usable snapshot (tried {len(candidates)} "
                    "files); the world cannot be restored")


def load_nearest_snapshot(folder: SaveFolder, config: Config, tick: int,
                          warnings: list[str]) -> LoadedSnapshot:
    """The latest snapshot or seek point at or before ``tick`` that loads and checks out:
    where a fork or ``replay --to`` starts. Each damaged one skipped adds a line to
    ``warnings``."""
    starts = folder.saved_states(until=tick)
    for _at, path in reversed(starts):
        try:
            return load_snapshot_file(path, config)
        except RulesUnsupported:
            raise
        except SaveError as exc:
            warnings.append(f"skipping damaged snapshot: {exc}")
    if not starts:
        raise SaveError(f"{folder.root} has no snapshot at or before tick {tick}")
    raise SaveError(f"no usable snapshot at or before tick {tick} in {folder.root}")


def load_first_snapshot(folder: SaveFolder, config: Config) -> LoadedSnapshot:
    """The world's starting point (tick 0, or the fork tick): where a replay begins."""
    history = folder.history()
    if not history:
        raise SaveError(f"{folder.snapshots_dir} holds no snapshot; without the first "
                        "snapshot the world cannot be replayed")
    return load_snapshot_file(history[0][1], config)
