"""Where things go and how they are kept: ``paths``, ``log`` and ``persistence``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from agent_world.config.base import ConfigError, setting

__all__ = ["MIN_RUNS_BYTES", "LogConfig", "PathsConfig", "PersistenceConfig"]

MIN_RUNS_BYTES = 10_000_000
"""The least disk budget paths.runs may have (0 aside): a few episodes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PathsConfig:
    """Where worlds are saved and logs written (relative paths are from the working folder)."""

    saves: str = setting("saves", "folder holding one sub-folder per saved world")
    logs: str = setting("logs", "folder for world.log and the console history")
    runs: str = setting("runs", "folder for training and evaluation runs (python main.py "
                        "train, eval, POST /api/train), one sub-folder per run; python main.py "
                        "runs lists them")
    runs_keep: int = setting(
        100, "finished runs kept in paths.runs at most: past it the oldest are deleted, at "
        "start-up and after each run (a run in use never is); 0: no limit", low=0,
        high=1_000_000,
    )
    runs_max_age_days: float = setting(
        0.0, "finished runs older than this many days are deleted, at start-up and after "
        "each run; 0: kept whatever their age", low=0, high=36_500,
    )
    runs_max_bytes: int = setting(
        20_000_000_000, "disk budget of paths.runs in bytes: a run whose estimated size "
        "(versions x episodes x ticks, about 350 bytes a tick) does not fit in what is left "
        "is refused before it starts, and past it the oldest finished runs are deleted after "
        "each run; 0: no budget (the free space on the disk still bounds a run)", low=0,
        high=10**16,
    )
    scenarios: str = setting(
        "", "folder of scenario files (NAME.yaml) that a training run started over the web "
        "(POST /api/train) may name besides the built-in scenarios; '': built-in only",
    )

    def __post_init__(self) -> None:
        if 0 < self.runs_max_bytes < MIN_RUNS_BYTES:
            raise ConfigError(
                f"paths.runs_max_bytes: {self.runs_max_bytes:,} bytes cannot hold one "
                f"3,000-tick episode (about 1 MB); give {MIN_RUNS_BYTES:,} or more, or 0 for "
                "no budget")
        for name in ("saves", "logs"):
            other = getattr(self, name)
            if os.path.abspath(self.runs) == os.path.abspath(other):
                raise ConfigError(
                    f"paths.runs and paths.{name} are the same folder ({other!r}): old runs "
                    f"are deleted from paths.runs, so it must be a folder of its own; give "
                    f"them separate folders (e.g. runs: runs, {name}: {name})")


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """The human-readable world log."""

    world_log_max_bytes: int = setting(
        10_000_000, "world.log is rotated when it grows past this size", low=10_000,
        high=10**12,
    )
    world_log_backups: int = setting(5, "rotated world logs kept (world.log.1 ...)", low=0,
                                     high=1000)
    echo: bool = setting(True, "also print world-log lines to the terminal (interactive runs)")
    everything: bool = setting(
        False, "also log routine events (pickups, meals, harvests, offers, failed actions) "
        "and each decision of a brain (without it, a line a minute sums them up)",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PersistenceConfig:
    """The save folder: snapshots, the event log, and how soon they reach the disk."""

    enabled: bool = setting(True, "write the save folder (off: a throwaway run; --no-save)")
    snapshot_interval_ticks: int = setting(
        3000, "a snapshot is written this often (also on /save and clean shutdown)", low=10,
        high=10**9,
    )
    snapshots_kept: int = setting(
        10, "older snapshots kept (gzipped) besides the first one, which is always kept",
        low=1, high=100_000,
    )
    seek_interval_ticks: int = setting(
        50, "seek points (gzipped snapshots in seek/, where a seek, a fork or a resume "
        "starts replaying) fall on multiples of this many ticks, at most one on each: on "
        "every one when seek_target_ms is 0, else as seek_target_ms spaces them; best a "
        "multiple of hash_interval_ticks, whose state bytes a seek point reuses; 0 writes "
        "none", low=0, high=10**9,
    )
    seek_target_ms: int = setting(
        800, "the longest replay a seek should need: the next seek point is written once "
        "replaying from the last one would take longer, as this run's ticks measure it (a "
        "small world writes few, a large one many; a replay takes 0.7 to 1.3 times as long "
        "as the ticks it repeats, and loading the point adds 0.3-0.5 s at 1,000 agents); "
        "0: a seek point on every seek_interval_ticks", low=0, high=3_600_000,
    )
    seek_budget_mb: int = setting(
        1024, "disk space seek points may take; past it every other one in the older half "
        "is deleted, so recent ticks stay dense and old ones thin out", low=1, high=10**7,
    )
    hash_interval_ticks: int = setting(
        50, "a state hash is logged this often; replay and resume verify every one (each "
        "costs a fork or a serialisation of the world: thousands of agents make it dear)",
        low=1, high=10**6,
    )
    events_chunk_ticks: int = setting(
        10_000, "ticks per event-log file; finished files are gzipped", low=100, high=10**8,
    )
    events: str = setting(
        "all", "what the event log holds besides inputs and state hashes: all (every output "
        "event) or none", choices=("all", "none"),
    )
    flush: str = setting(
        "tick", "when log lines reach the operating system: every tick, or every "
        "flush_interval_s (a kill -9 loses at most what was not flushed)",
        choices=("tick", "interval"),
    )
    flush_interval_s: float = setting(1.0, "seconds between writes when flush is interval",
                                      low=0.01, high=3600)
    fsync_interval_s: float = setting(
        5.0, "seconds between fsyncs of the event log (what a power cut can lose); 0 fsyncs "
        "every write", low=0, high=3600,
    )
    serialize_in_child: bool = setting(
        True, "turn snapshots and state hashes into JSON in a forked child process, so the "
        "tick loop pays only for the fork (Linux; elsewhere the main thread does it)",
    )


