"""Reading a save folder for the report: what the world is, who was alive where the report
starts, and the event log's lines. Reads only; never builds or runs a world.

The world's rules (starting_agents, personality_mix) come from the first snapshot's state,
which is what the world ran with; meta.json's config (the latest run's settings) stands in
when no snapshot can be read. The personalities of the agents alive where the report starts
come from the newest snapshot before that tick; agents arriving later are learnt from their
``spawn`` events.
"""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_world.persistence import SaveError, SaveFolder
from agent_world.persistence.snapshots import state_file_tick
from agent_world.report.figures import WorldInfo

__all__ = ["ReportError", "StartPoint", "open_save", "start_point", "world_info"]


class ReportError(Exception):
    """The report cannot be made as asked; the message names the value and the fix."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StartPoint:
    """A snapshot before the report's first tick: the log is read from the tick after it."""

    tick: int  # -1: no snapshot could be read (the log is read from its start)
    personality_of: dict[int, str]  # every agent alive then
    counters: dict[str, int]  # the world's cumulative counters then
    brain_of: dict[int, str] = field(default_factory=dict)  # every agent alive then


def open_save(path: Path) -> SaveFolder:
    """The save folder at ``path``; ReportError if it is missing or not a save."""
    try:
        return SaveFolder.open(path)
    except SaveError as exc:
        raise ReportError(str(exc)) from None


def _snapshots(folder: SaveFolder) -> list[tuple[int, Path]]:
    """Every snapshot file by tick, oldest first (world_state.json and the seek points
    among them)."""
    found = dict(folder.saved_states())
    tick = state_file_tick(folder)
    if tick is not None:
        found.setdefault(tick, folder.state_path)
    return sorted(found.items())


def _state(path: Path, cache: dict[Path, dict[str, Any] | None]) -> dict[str, Any] | None:
    """The ``state`` of a snapshot file, or None if it cannot be read (each file is parsed
    once per ``cache``)."""
    if path not in cache:
        cache[path] = _parse_state(path)
    return cache[path]


def _parse_state(path: Path) -> dict[str, Any] | None:
    try:
        raw = path.read_bytes()
        doc = orjson.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    except (OSError, EOFError, zlib.error, orjson.JSONDecodeError):
        return None
    state = doc.get("state") if isinstance(doc, dict) else None
    return state if isinstance(state, dict) else None


def _section(config: Any, name: str) -> dict[str, Any]:
    value = config.get(name) if isinstance(config, dict) else None
    return value if isinstance(value, dict) else {}


def world_info(folder: SaveFolder, notes: list[str],
               cache: dict[Path, dict[str, Any] | None]) -> WorldInfo:
    """What the world is: its name, seed and rules (see the module docstring)."""
    meta = folder.read_meta()
    snapshots = _snapshots(folder)
    first_tick = snapshots[0][0] if snapshots else 0
    state = _state(snapshots[0][1], cache) if snapshots else None
    if state is None:
        notes.append(f"no readable first snapshot in {folder.root}: the world's rules are "
                     "taken from meta.json (the latest run's settings)")
        world = _section(meta.get("config"), "world")
    else:
        world = _section(state.get("config"), "world")
    mix = world.get("personality_mix")
    starting = world.get("starting_agents")
    seed = meta.get("seed")
    events = _section(meta.get("config"), "persistence").get("events", "?")
    return WorldInfo(
        name=folder.name, path=str(folder.root), seed=seed if isinstance(seed, int) else None,
        starting_agents=starting if isinstance(starting, int) else None,
        personality_mix={str(k): float(v) for k, v in mix.items()}
        if isinstance(mix, dict) else {},
        first_tick=first_tick, events=str(events))


def start_point(folder: SaveFolder, before: int, notes: list[str],
                cache: dict[Path, dict[str, Any] | None]) -> StartPoint:
    """The newest readable snapshot at a tick before ``before``: who was alive then."""
    for tick, path in reversed(_snapshots(folder)):
        if tick >= before:
            continue
        state = _state(path, cache)
        if state is None:
            notes.append(f"{path.name} cannot be read; using an older snapshot for who was "
                         "alive")
            continue
        personality_of: dict[int, str] = {}
        brain_of: dict[int, str] = {}
        for row in state.get("entities") or ():
            agent = row.get("Agent") if isinstance(row, dict) else None
            if isinstance(agent, dict):
                personality_of[row["id"]] = str(agent.get("personality", "unknown"))
                brain_of[row["id"]] = str(agent.get("brain", ""))
        counters = state.get("counters")
        return StartPoint(tick=tick, personality_of=personality_of,
                          counters=dict(counters) if isinstance(counters, dict) else {},
                          brain_of=brain_of)
    notes.append(f"no readable snapshot before tick {before}: the personalities of agents "
                 "that arrived before the log's first spawn event are unknown")
    return StartPoint(tick=-1, personality_of={}, counters={})
