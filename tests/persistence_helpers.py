"""Building, running and reading saved worlds in tests (real files, real threads)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence import OpenedWorld, SaveFolder, open_world
from agent_world.persistence.eventlog import LogReader


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
