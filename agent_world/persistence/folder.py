"""The save folder: its layout, its meta file, and what it holds.

```
saves/<world>/
  meta.json               format version, seed, config, created, last tick, origin of a fork
  world_state.json        the latest snapshot
  snapshots/<tick>.json.gz  earlier snapshots (the first one is kept forever)
  events/<start>-<end>.jsonl[.gz]  the event log, one file per tick range
  memories/ abilities/    agent memories and generated abilities
```
See docs/save-format.md for the formats.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agent_world import __version__
from agent_world.persistence.files import write_atomic

__all__ = ["FORMAT_VERSION", "Chunk", "SaveError", "SaveFolder", "now_iso"]

FORMAT_VERSION = 1
_CHUNK = re.compile(r"^(\d+)-(\d+)\.jsonl(\.gz)?$")
_SNAPSHOT = re.compile(r"^(\d+)\.json\.gz$")
_ABILITY_NAME = re.compile(r"^[a-z][a-z0-9_]{1,31}$")


class SaveError(Exception):
    """A save folder that cannot be used as asked (missing, foreign, too new, damaged)."""


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
        self.meta_path = self.root / "meta.json"
        self.state_path = self.root / "world_state.json"
        self.snapshots_dir = self.root / "snapshots"
        self.events_dir = self.root / "events"
        self.memories_dir = self.root / "memories"
        self.abilities_dir = self.root / "abilities"

    @property
    def name(self) -> str:
        return self.root.name

    # -- opening -----------------------------------------------------------------------------

    @staticmethod
    def describe(root: Path) -> str:
        """'missing', 'empty', 'save' (has meta.json) or 'foreign'."""
        root = Path(root)
        if not root.exists():
            return "missing"
        if not root.is_dir():
            return "foreign"
        if (root / "meta.json").exists():
            return "save"
        return "foreign" if any(root.iterdir()) else "empty"

    @classmethod
    def create(cls, root: Path, meta: dict[str, Any]) -> SaveFolder:
        kind = cls.describe(root)
        if kind not in ("missing", "empty"):
            raise SaveError(f"{root} already exists and is not empty; pick another world name")
        folder = cls(root)
        for d in (folder.root, folder.snapshots_dir, folder.events_dir, folder.memories_dir,
                  folder.abilities_dir):
            d.mkdir(parents=True, exist_ok=True)
        folder.write_meta({"format": FORMAT_VERSION, "app": f"agent-world {__version__}",
                           "created": now_iso(), **meta})
        return folder

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
        for d in (folder.snapshots_dir, folder.events_dir, folder.memories_dir,
                  folder.abilities_dir):
            d.mkdir(exist_ok=True)
        return folder

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
        found = []
        if self.snapshots_dir.exists():
            for p in self.snapshots_dir.iterdir():
                m = _SNAPSHOT.match(p.name)
                if m:
                    found.append((int(m.group(1)), p))
        return sorted(found)

    def ability_path(self, name: str) -> Path:
        """Where a generated ability's source is kept for people to read."""
        if not _ABILITY_NAME.match(name):
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
                m = _CHUNK.match(p.name)
                if m:
                    key = (int(m.group(1)), int(m.group(2)))
                    ranges.setdefault(key, {})["gz" if m.group(3) else "plain"] = p
        return [Chunk(start, end, files.get("plain"), files.get("gz"))
                for (start, end), files in sorted(ranges.items())]
