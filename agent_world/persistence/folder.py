"""The save folder: its layout, its meta file, and what it holds.

```
saves/<world>/
  meta.json               format version, seed, config, created, last tick, origin of a fork
  world_state.json        the latest snapshot
  snapshots/<tick>.json.gz  earlier snapshots (the first one is kept forever)
  seek/<tick>.json.gz     frequent snapshots within a byte budget, to start a replay near any tick
  events/<start>-<end>.jsonl[.gz]  the event log, one file per tick range
  minds/<tick>.jsonl.gz   every mind that is not built in, at each snapshot's tick
  memories/               LLM agents' memories, as folders older than minds/ kept them
  abilities/              generated abilities (for people to read)
  .lock                   held (flock) by the process running the world; holds its pid
```
See docs/save-format.md for the formats.
"""

from __future__ import annotations

import datetime
import gzip
import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_world import __version__
from agent_world.core.errors import WorldError
from agent_world.core.rules import check_rules_version
from agent_world.persistence.files import (
    disk_problem,
    folder_bytes,
    fsync_dir,
    is_temporary,
    temporary_path,
    write_atomic,
)

if TYPE_CHECKING:
    from agent_world.persistence.lock import WorldLock

__all__ = ["DELETING", "FORMAT_VERSION", "LOCK_NAME", "Chunk", "RulesUnsupported", "SaveError",
           "SaveFolder", "delete_folder", "now_iso", "snapshot_files"]

DELETING = ".deleting-"  # a folder being deleted is renamed to .NAME.deleting-PID first

FORMAT_VERSION = 1
_CHUNK = re.compile(r"(\d+)-(\d+)\.jsonl(\.gz)?")
_SNAPSHOT = re.compile(r"(\d+)\.json\.gz")
_ABILITY_NAME = re.compile(r"[a-z][a-z0-9_]{1,31}")
LOCK_NAME = ".lock"
_SUBFOLDERS = ("snapshots", "events", "minds", "memories", "abilities", "seek")
# What creating a world writes before meta.json, the last file it writes: a folder holding
# nothing else and no meta.json is a creation that was interrupted (it holds nothing to lose).
_CREATION_FILES = {"snapshots": re.compile(r"\d+\.json\.gz"),
                   "abilities": re.compile(r"[a-z][a-z0-9_]{1,31}\.py")}


class SaveError(Exception):
    """A save folder that cannot be used as asked (missing, foreign, too new, damaged)."""


class RulesUnsupported(SaveError):
    """The world runs rules this release does not (newer, or retired): no other snapshot
    of it will do better, so nothing falls back past it."""



def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One tick range of the event log: a plain file while written, gzipped once closed
    (both can exist for a moment, when a crash interrupted the compression)."""

    start: int
    end: int
    plain: Path | None
    gz: Path | None


class SaveFolder:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.lock: WorldLock | None = None  # held while a run writes the folder
        self.meta_path = self.root / "meta.json"
        self.state_path = self.root / "world_state.json"
        self.snapshots_dir = self.root / "snapshots"
        self.events_dir = self.root / "events"
        self.minds_dir = self.root / "minds"
        self.memories_dir = self.root / "memories"  # folders from before minds/: read only
        self.abilities_dir = self.root / "abilities"
        self.seek_dir = self.root / "seek"

    @property
    def name(self) -> str:
        return self.root.name

    # -- opening -----------------------------------------------------------------------------

    @staticmethod
    def describe(root: Path) -> str:
        """'missing', 'empty', 'save' (has meta.json), 'unfinished' (a creation that was
        interrupted before meta.json, its last file, was written) or 'foreign'. The lock
        file alone does not make a folder non-empty. Reads only."""
        root = Path(root)
        if not root.exists():
            return "missing"
        if not root.is_dir():
            return "foreign"
        if (root / "meta.json").exists():
            return "save"
        entries = [p for p in root.iterdir() if p.name != LOCK_NAME]
        if not entries:
            return "empty"
        return "unfinished" if all(_creation_debris(p) for p in entries) else "foreign"

    @classmethod
    def create(cls, root: Path, meta: dict[str, Any]) -> SaveFolder:
        """The folder of a new world with its meta.json written at once (tools and benches;
        ``open_world`` writes meta.json last, so an interrupted creation is recognisable)."""
        folder = cls.prepare(root)
        folder.write_meta({"format": FORMAT_VERSION, "app": f"agent-world {__version__}",
                           "created": now_iso(), **meta})
        return folder

    @classmethod
    def prepare(cls, root: Path) -> SaveFolder:
        """The empty layout of a new world (no meta.json yet): SaveError unless ``root`` is
        missing, empty or an interrupted creation (whose files are removed first)."""
        kind = cls.describe(root)
        if kind not in ("missing", "empty", "unfinished"):
            raise SaveError(f"{root} already exists and is not empty; pick another world name")
        folder = cls(root)
        if kind == "unfinished":
            folder.clear()
        for d in (folder.root, folder.snapshots_dir, folder.events_dir, folder.minds_dir,
                  folder.abilities_dir):
            d.mkdir(parents=True, exist_ok=True)
        return folder

    def clear(self) -> None:
        """Remove everything in the folder but its lock file (the caller holds the lock)."""
        for path in sorted(self.root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if path.parent == self.root and path.name == LOCK_NAME:
                continue
            if path.is_dir() and not path.is_symlink():
                path.rmdir()
            else:
                path.unlink()
        fsync_dir(self.root)

    @classmethod
    def open(cls, root: Path) -> SaveFolder:
        kind = cls.describe(root)
        if kind == "missing":
            raise SaveError(f"{root} does not exist; check the path (saved worlds live in "
                            "the saves folder)")
        if kind in ("empty", "foreign"):
            raise SaveError(f"{root} is not an Agent World save (no meta.json); pick another "
                            "world name or move the folder away")
        folder = cls(root)
        meta = folder.read_meta()
        version = meta.get("format")
        if not isinstance(version, int):
            raise SaveError(f"{folder.meta_path} has no format version; it is not an Agent "
                            "World save or it is damaged")
        if version > FORMAT_VERSION:
            raise SaveError(f"{root} was written by a newer Agent World (save format "
                            f"{version}; this is {__version__}, which reads format "
                            f"{FORMAT_VERSION}); upgrade agent-world to open it")
        rules = meta.get("rules")  # absent from folders made before rules had versions
        if rules is not None:
            try:
                check_rules_version(rules, f"world '{root.name}'")
            except WorldError as exc:
                raise RulesUnsupported(str(exc)) from None
        return folder

    def ensure_layout(self) -> list[str]:
        """Recreate missing sub-folders before a run writes (opening a folder only reads);
        returns a note for each one that was missing."""
        notes = []
        for d in (self.snapshots_dir, self.events_dir, self.abilities_dir):
            if not d.is_dir():
                d.mkdir()
                notes.append(f"{d.name}/ was missing from {self.root}; made a new, empty one")
        return notes

    def check_writable(self) -> None:
        """Create and remove a temporary file where a run writes: OSError (a read-only folder
        or disk) now, before a long replay, rather than at the first write."""
        for d in (self.root, self.events_dir, self.snapshots_dir):
            probe = temporary_path(d / "write-probe")
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            probe.unlink()

    def remove_temporary(self) -> list[str]:
        """Delete temporary files an interrupted write left behind (``.NAME.tmp``: never
        authoritative, the file it was to replace is still whole). The caller holds the
        lock, so no write of this folder is in progress."""
        notes = []
        for d in (self.root, *(self.root / sub for sub in _SUBFOLDERS)):
            if not d.is_dir():
                continue
            found = sorted(p for p in d.iterdir() if is_temporary(p.name))
            for path in found:
                path.unlink()
                notes.append(f"removed {path.relative_to(self.root)}, left by an interrupted "
                             "write (the file it was replacing is intact)")
            if found:
                fsync_dir(d)
        return notes

    # -- meta ---------------------------------------------------------------------------------

    def read_meta(self) -> dict[str, Any]:
        try:
            meta = orjson.loads(self.meta_path.read_bytes())
        except FileNotFoundError:
            raise SaveError(f"{self.meta_path} is missing") from None
        except orjson.JSONDecodeError as exc:
            raise SaveError(f"{self.meta_path} is damaged ({exc}); restore it from a backup "
                            "or copy meta.json from a fork of this world") from None
        if not isinstance(meta, dict):
            raise SaveError(f"{self.meta_path} does not hold a JSON object")
        return meta

    def recorded_tick_rate(self, default: float) -> float:
        """The tick rate the world ran at, as its meta records it (else ``default``)."""
        rate = self.read_meta().get("config", {}).get("world", {}).get("tick_rate")
        return float(rate) if isinstance(rate, (int, float)) else default

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_atomic(self.meta_path, orjson.dumps(meta, option=orjson.OPT_INDENT_2) + b"\n")

    def update_meta(self, **changes: Any) -> None:
        meta = self.read_meta()
        meta.update(changes, updated=now_iso())
        self.write_meta(meta)

    # -- contents ------------------------------------------------------------------------------

    def snapshot_path(self, tick: int) -> Path:
        return self.snapshots_dir / f"{tick:010d}.json.gz"

    def history(self) -> list[tuple[int, Path]]:
        """Earlier snapshots, oldest first."""
        return snapshot_files(self.snapshots_dir)

    def seek_path(self, tick: int) -> Path:
        return self.seek_dir / f"{tick:010d}.json.gz"

    def seek_points(self) -> list[tuple[int, Path]]:
        """Seek points (``persistence.seek_target_ms`` spaces them), oldest first."""
        return snapshot_files(self.seek_dir)

    def saved_states(self, until: int | None = None) -> list[tuple[int, Path]]:
        """Every gzipped state a world can be rebuilt from (snapshots and seek points, which
        share one format), oldest first, up to tick ``until``: where a fork, a seek or a
        resume starts replaying. A tick held by both lists the snapshot."""
        found = dict(self.seek_points())
        found.update(self.history())
        return sorted((t, p) for t, p in found.items() if until is None or t <= until)

    def ability_path(self, name: str) -> Path:
        """Where a generated ability's source is kept for people to read."""
        if not _ABILITY_NAME.fullmatch(name):
            raise SaveError(f"{name!r} is not an ability name")
        return self.abilities_dir / f"{name}.py"

    def write_ability(self, name: str, source: str) -> None:
        self.abilities_dir.mkdir(exist_ok=True)
        write_atomic(self.ability_path(name), source.encode("utf-8"))

    def chunk_name(self, start: int, end: int) -> str:
        return f"{start:07d}-{end:07d}.jsonl"

    def chunks(self) -> list[Chunk]:
        """Event-log files by tick range, in order."""
        ranges: dict[tuple[int, int], dict[str, Path]] = {}
        if self.events_dir.exists():
            for p in self.events_dir.iterdir():
                m = _CHUNK.fullmatch(p.name)
                if m:
                    key = (int(m.group(1)), int(m.group(2)))
                    ranges.setdefault(key, {})["gz" if m.group(3) else "plain"] = p
        return [Chunk(start, end, files.get("plain"), files.get("gz"))
                for (start, end), files in sorted(ranges.items())]

    def log_digest(self) -> str:
        """A digest of the event log's content (its lines, whatever files and compression
        hold them): what a published result records, so that a changed byte is noticed."""
        digest = hashlib.blake2b(digest_size=16)
        for chunk in self.chunks():
            path = chunk.plain or chunk.gz  # a plain file is the authority while both exist
            assert path is not None
            opener = gzip.open if path is chunk.gz else open
            with opener(path, "rb") as f:
                while block := f.read(1 << 20):
                    digest.update(block)
        return digest.hexdigest()

    def set_aside(self) -> list[Path]:
        """Event-log files kept aside after damage (``*.damaged``, ``*.orphaned``): not part
        of the log any more, never deleted."""
        if not self.events_dir.exists():
            return []
        return sorted(p for p in self.events_dir.iterdir()
                      if p.name.endswith((".damaged", ".orphaned")))

    def size_on_disk(self) -> int:
        """Bytes in the folder's files."""
        return folder_bytes(self.root)


def snapshot_files(directory: Path) -> list[tuple[int, Path]]:
    """The ``<tick>.json.gz`` files in ``directory`` by tick, oldest first."""
    found = []
    if directory.is_dir():
        for entry in os.scandir(directory):
            m = _SNAPSHOT.fullmatch(entry.name)
            if m:
                found.append((int(m.group(1)), Path(entry.path)))
    return sorted(found)


def _creation_debris(path: Path) -> bool:
    """Whether ``path`` (in a world folder without meta.json) is something creating a world
    writes: a temporary file, world_state.json, or a sub-folder holding only such files."""
    if is_temporary(path.name):
        return path.is_file()
    if path.name == "world_state.json":
        return path.is_file()
    if path.name not in _SUBFOLDERS or not path.is_dir() or path.is_symlink():
        return False
    pattern = _CREATION_FILES.get(path.name)
    for p in path.iterdir():
        if not p.is_file() or not (is_temporary(p.name) or (pattern and pattern.fullmatch(p.name))):
            return False
    return True


def delete_folder(root: Path, what: str) -> None:
    """Delete the folder ``root`` (``what`` names it: "world 'x'") so that it is gone at
    once: renamed to ``.NAME.deleting-PID`` beside itself, then its files removed. SaveError
    saying what to do when either step fails (a half-removed folder keeps its hidden name,
    never the one a listing shows)."""
    parent = root.parent
    doomed = parent / f".{root.name}{DELETING}{os.getpid()}"
    try:
        os.replace(root, doomed)
        fsync_dir(parent)
    except OSError as exc:
        raise SaveError(f"cannot delete {what}: {disk_problem(exc, parent)}") from None
    try:
        shutil.rmtree(doomed)
    except OSError as exc:
        raise SaveError(f"{what} is deleted, but removing its files stopped "
                        f"({exc.strerror or exc}); remove what is left with: rm -r "
                        f"{doomed}") from None
