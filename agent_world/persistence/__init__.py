"""Persistence: save folders, snapshots, the event log, resume, replay and fork.

An outer layer: it depends on the core, never the reverse."""

from agent_world.persistence.folder import FORMAT_VERSION, SaveError, SaveFolder
from agent_world.persistence.replay import DivergenceError, ReplayResult, replay
from agent_world.persistence.worlds import OpenedWorld, fork_world, open_world
from agent_world.persistence.writer import Persistence

__all__ = [
    "FORMAT_VERSION",
    "DivergenceError",
    "OpenedWorld",
    "Persistence",
    "ReplayResult",
    "SaveError",
    "SaveFolder",
    "fork_world",
    "open_world",
    "replay",
]
