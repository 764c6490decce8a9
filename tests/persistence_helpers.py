"""Building, running and reading saved worlds in tests (real files, real threads)."""

from __future__ import annotations

import asyncio
import gzip
import re
from pathlib import Path
from typing import Any

import orjson

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence import OpenedWorld, SaveFolder, open_world
from agent_world.persistence.eventlog import LogReader
from agent_world.userbrains.registry import load_brains


def saving_config(tmp: Path, name: str = "w", **persistence: Any) -> Config:
    settings: dict[str, Any] = {"snapshot_interval_ticks": 100, "hash_interval_ticks": 10,
                                "events_chunk_ticks": 250}
    settings.update(persistence)
    return Config().replace(
        world={"name": name, "size": [32, 32], "starting_agents": 12},
        paths={"saves": str(tmp / "saves"), "logs": str(tmp / "logs")},
        persistence=settings,
        log={"echo": False},
    )


def run_session(config: Config, ticks: int, *, inputs: dict[int, list[tuple[str, dict[str, Any]]]]
                | None = None, opened: OpenedWorld | None = None) -> Session:
    """Open (new or resumed) and run ``ticks`` ticks flat out, submitting ``inputs`` (by the
    tick they are submitted before), then close cleanly."""
    opened = opened or open_world(config)
    session = Session(config, opened.world, folder=opened.folder, resumed=opened.resumed)
    schedule = inputs or {}

    async def drive() -> None:
        for _ in range(ticks):
            for kind, data in schedule.get(session.world.tick, []):
                session.world.inbox.submit(kind, data)
            await session.loop.run(max_ticks=1, paced=False)

    try:
        asyncio.run(drive())
    finally:
        session.close()
    return session


def session_with(config: Config, *spawns: tuple[str, str]) -> Session:
    """A session on a new (or the saved) world, with agents of the given brains spawned as
    the console would: ``(name, brain)`` pairs."""
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder,
                      brains=load_brains(config.brains))
    for name, brain in spawns:
        session.world.inbox.submit("spawn", {"kind": "agent", "name": name, "brain": brain},
                                   source="console")
    return session


def reference_hash(config: Config, ticks: int,
                   inputs: dict[int, list[tuple[str, dict[str, Any]]]] | None = None) -> str:
    """The hash of an uninterrupted, unsaved run of the same world."""
    world = World.create(config)
    try:
        for _ in range(ticks):
            for kind, data in (inputs or {}).get(world.tick, []):
                world.inbox.submit(kind, data)
            world.step()
        return world.state_hash()
    finally:
        world.close()


def records(folder: Path) -> list[dict[str, Any]]:
    return list(LogReader(SaveFolder(folder)))


def snapshot_doc(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(path.read_bytes())
    return doc


def file_lines(path: Path) -> list[bytes]:
    """The whole lines of one event-log file as stored (a .gz decompressed)."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [line + b"\n" for line in data.split(b"\n")[:-1]]


def log_lines(folder: Path) -> list[bytes]:
    """The log as the reader serves it, one line per record, as written."""
    return [orjson.dumps(r) + b"\n" for r in records(folder)]


def in_order(lines: list[bytes], within: list[bytes]) -> bool:
    """Whether every line of ``lines`` appears in ``within``, in the same order."""
    rest = iter(within)
    return all(any(line == other for other in rest) for line in lines)


def event_files(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "events").iterdir())


def _files(directory: Path) -> list[Path]:
    return list(directory.iterdir()) if directory.is_dir() else []


def use_snapshot(folder: Path, tick: int) -> None:
    """Make the snapshot of ``tick`` the latest (as if the later ones, and the later seek
    points, were never written)."""
    snapshots = folder / "snapshots"
    for path in [*snapshots.iterdir(), *_files(folder / "seek")]:
        if int(path.name.split(".")[0]) > tick:
            path.unlink()
    data = gzip.decompress((snapshots / f"{tick:010d}.json.gz").read_bytes())
    (folder / "world_state.json").write_bytes(data)


def without_speed(verdict: str) -> str:
    """A replay's printed verdict without what differs between runs: the time, the speed and
    how many processes shared the work."""
    return re.sub(r" in [0-9.]+ s: .*real time(, in \d+ processes)?", "", verdict)
