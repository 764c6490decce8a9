"""Mind state files: what brains remember, saved beside the snapshot of the same tick.

A mind is not world state. It is what a brain keeps for itself between decisions (an LLM
agent's memory and its summary, an ``LLMBrain``'s memories and reflections, a ``Brain``'s
``get_state()``, a policy's memory): prompt material and private state. The world never
reads it and a replay never needs it (every decision is a logged input), so it is kept out
of the state hash and out of the event log; it is saved so that a resumed or forked world's
agents remember what they lived through.

``minds/<tick, 10 digits>.jsonl.gz`` holds every mind at the snapshot of that tick, one JSON
line per agent after a header line::

    {"format": 1, "tick": 3000, "agents": [12, 17]}
    {"agent": 12, "name": "Ada", "brain": "llm", "kind": "llm", "state": {...}}
    {"agent": 17, "name": "Bo", "brain": "planner", "kind": "brain", "state": {...}, "dropped": 40}

It is written whole (temporary file, fsync, rename) before the snapshot of its tick, so a
snapshot on disk always has its minds file. Reading is per agent: a line that is damaged, or
an agent the header lists whose line is missing, costs that agent its memory and nothing
else. docs/save-format.md, "Minds", is the reference.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_world.persistence.files import fsync_dir, write_atomic

__all__ = ["MINDS_FORMAT", "Bounded", "MindsRead", "bound_state", "copy_minds", "mind_files",
           "prune_minds", "read_minds", "write_minds"]

MINDS_FORMAT = 1
_MINDS = re.compile(r"(\d+)\.jsonl\.gz")
_AGENT_HEAD = re.compile(rb'^\{"agent":(\d+)')
_READ_CHUNK = 1 << 16


def mind_files(folder: Path) -> list[tuple[int, Path]]:
    """The ``minds/<tick>.jsonl.gz`` files of a save folder's ``minds/``, oldest first."""
    found = []
    if folder.is_dir():
        for entry in folder.iterdir():
            m = _MINDS.fullmatch(entry.name)
            if m:
                found.append((int(m.group(1)), entry))
    return sorted(found)


def mind_path(folder: Path, tick: int) -> Path:
    return folder / f"{tick:010d}.jsonl.gz"


# -- bounding ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bounded:
    """A state cut to its byte limit: the state (None: nothing fits, so nothing is saved),
    its JSON, and how many of its oldest items were left out."""

    state: Any
    data: bytes | None
    dropped: int


def _containers(value: Any, out: list[list[Any] | dict[str, Any]]) -> None:
    if isinstance(value, list):
        out.append(value)
        for item in value:
            _containers(item, out)
    elif isinstance(value, dict):
        out.append(value)
        for item in value.values():
            _containers(item, out)


def bound_state(state: Any, max_bytes: int) -> Bounded:
    """``state`` (JSON data; a copy is cut, never the caller's) within ``max_bytes`` of
    compact JSON, the oldest memories first out.

    The rule: while too big, take the list or object holding the most items, anywhere in the
    state (the state itself included), and leave out its first items, as few as make the
    state fit or all of them: lists are kept oldest first, and objects hold their keys in the
    order they were added, so the first items are the oldest. With nothing left to leave out
    and still too big, nothing is saved (``state`` None). TypeError when it is not JSON
    data."""
    data = orjson.dumps(state)
    if len(data) <= max_bytes:
        return Bounded(state, data, 0)
    state = orjson.loads(data)  # a copy to cut
    dropped = 0
    while len(data) > max_bytes:
        found: list[list[Any] | dict[str, Any]] = []
        _containers(state, found)
        found = [c for c in found if c]
        if not found:
            return Bounded(None, None, dropped)
        biggest = max(found, key=len)  # the first of the largest, in depth-first order
        excess = len(data) - max_bytes
        # Each item's bytes with its comma (and an object's key, quoted, and colon).
        sizes = ((len(orjson.dumps(key)) + len(orjson.dumps(value)) + 2
                  for key, value in biggest.items()) if isinstance(biggest, dict)
                 else (len(orjson.dumps(item)) + 1 for item in biggest))
        cut = 0
        freed = 0
        for size in sizes:
            if freed >= excess:
                break
            freed += size
            cut += 1
        if isinstance(biggest, dict):
            for key in list(biggest)[:cut]:
                del biggest[key]
        else:
            del biggest[:cut]
        dropped += cut
        data = orjson.dumps(state)
    return Bounded(state, data, dropped)


# -- writing -----------------------------------------------------------------------------------


def encode_minds(tick: int, records: Iterable[Mapping[str, Any]], max_bytes: int
                 ) -> tuple[bytes, list[tuple[int, str, int]]]:
    """The gzipped file of ``records`` (each ``{"agent", "name", "brain", "kind",
    "state"}``), every state bounded to ``max_bytes``; and for each agent whose state was
    cut or could not be saved, ``(agent, name, dropped)`` (dropped -1: nothing saved)."""
    ordered = sorted(records, key=lambda r: int(r["agent"]))
    lines: list[bytes] = []
    cut: list[tuple[int, str, int]] = []
    agents: list[int] = []
    for record in ordered:
        agent = int(record["agent"])
        try:
            bounded = bound_state(record["state"], max_bytes)
        except TypeError:
            cut.append((agent, str(record.get("name", "")), -1))
            continue
        if bounded.data is None:
            cut.append((agent, str(record.get("name", "")), -1))
            continue
        if bounded.dropped:
            cut.append((agent, str(record.get("name", "")), bounded.dropped))
        head = {"agent": agent, "name": record.get("name", ""), "brain": record.get("brain", ""),
                "kind": record.get("kind", "")}
        extra = b',"dropped":%d' % bounded.dropped if bounded.dropped else b""
        # The state's bytes as bounded: serialised once.
        lines.append(orjson.dumps(head)[:-1] + b',"state":' + bounded.data + extra + b"}")
        agents.append(agent)
    header = orjson.dumps({"format": MINDS_FORMAT, "tick": tick, "agents": agents})
    body = b"\n".join([header, *lines]) + b"\n"
    return gzip.compress(body, 3), cut


def write_minds(folder: Path, tick: int, data: bytes) -> Path:
    """Write the encoded minds of ``tick`` atomically (temporary file, fsync, rename)."""
    folder.mkdir(exist_ok=True)
    path = mind_path(folder, tick)
    write_atomic(path, data)
    return path


def prune_minds(folder: Path, keep: int, *, newest: int) -> None:
    """Keep the first minds file for ever and the newest ``keep`` (with the one of tick
    ``newest``), as the snapshots beside them are kept."""
    files = [(t, p) for t, p in mind_files(folder) if t != newest]
    older = files[1:]
    for _tick, path in older[: max(0, len(older) - keep + 1)]:
        path.unlink(missing_ok=True)


def copy_minds(source: Path, target: Path, tick: int) -> int | None:
    """Copy the newest minds file at or before ``tick`` from a world's ``minds/`` into a
    fork's (under its own tick, which says what the states are as of). Returns that tick, or
    None when the source has none."""
    chosen = [(t, p) for t, p in mind_files(source) if t <= tick]
    if not chosen:
        return None
    at, path = chosen[-1]
    target.mkdir(exist_ok=True)
    temporary = target / f".{path.name}.tmp"
    shutil.copyfile(path, temporary)
    with temporary.open("rb+") as f:
        os.fsync(f.fileno())
    temporary.replace(mind_path(target, at))
    fsync_dir(target)
    return at


# -- reading -----------------------------------------------------------------------------------


@dataclass(slots=True)
class MindsRead:
    """What a world restores: the records by agent, the tick they are as of (None: no
    minds file), the file read, and one warning per agent whose mind could not be read."""

    tick: int | None = None
    path: Path | None = None
    records: dict[int, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _lines(path: Path) -> tuple[list[bytes], str | None]:
    """The whole lines of a gzipped file, read in pieces so that damage costs only what
    follows it; and why reading stopped early (None: it did not)."""
    out: list[bytes] = []
    rest = b""
    try:
        with gzip.open(path, "rb") as f:
            while chunk := f.read(_READ_CHUNK):
                parts = (rest + chunk).split(b"\n")
                rest = parts.pop()
                out.extend(parts)
    except (OSError, EOFError, zlib.error) as exc:
        return out, f"{type(exc).__name__}: {exc}"
    if rest:
        return out, "its last line is cut short"
    return out, None


def read_minds(folder: Path, tick: int, agents: Mapping[int, str] | None = None) -> MindsRead:
    """The minds of the newest file at or before ``tick`` (``agents``: the living agents by
    id and name, for the warnings; records of others are skipped). A damaged line, or an
    agent the header lists whose line is missing or unreadable, is one warning naming the
    agent; the others are read all the same. A file of which nothing can be read (not even
    its header) is a warning, and the file before it is read instead."""
    chosen = [(t, p) for t, p in mind_files(folder) if t <= tick]
    skipped: list[str] = []
    while chosen:
        at, path = chosen.pop()
        lines, stopped = _lines(path)
        if lines:
            read = _read_lines(at, path, lines, stopped, agents)
            read.warnings[:0] = skipped
            return read
        skipped.append(f"minds/{path.name} cannot be read ({stopped or 'it is empty'}); "
                       "the minds of the snapshot before it are used")
    return MindsRead(warnings=[w.replace("the minds of the snapshot before it are used",
                                         "every agent starts with an empty memory")
                               if i == len(skipped) - 1 else w
                               for i, w in enumerate(skipped)])


def _read_lines(at: int, path: Path, lines: list[bytes], stopped: str | None,
                agents: Mapping[int, str] | None) -> MindsRead:
    """The records of one minds file's whole ``lines`` (``stopped``: why reading ended
    before the file did)."""
    read = MindsRead(tick=at, path=path)
    listed: list[int] = []
    where = f"minds/{path.name}"
    try:
        header = orjson.loads(lines[0])
        listed = [int(a) for a in header.get("agents", [])]
        if header.get("format", MINDS_FORMAT) > MINDS_FORMAT:
            read.warnings.append(f"{where} is of a newer mind format ({header.get('format')}); "
                                 "agents start with empty memories (upgrade agent-world to "
                                 "read it)")
            return read
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        lines.insert(0, b"")  # no header: every line is still read for what it holds

    def name_of(agent: int) -> str:
        name = agents.get(agent, "") if agents is not None else ""
        return f"agent {agent}" + (f" ({name})" if name else "")

    damaged: set[int] = set()
    for line in lines[1:]:
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
            if not isinstance(record, dict) or "state" not in record:
                raise ValueError("no state")
            agent = int(record["agent"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            head = _AGENT_HEAD.match(line)
            if head is not None:
                damaged.add(int(head.group(1)))
            else:
                read.warnings.append(f"{where}: a damaged line that names no agent is "
                                     "skipped")
            continue
        if agents is None or agent in agents:
            read.records[agent] = record
    why = f"its line in {where} is damaged"
    for agent in sorted(damaged):
        if agents is None or agent in agents:
            read.warnings.append(f"the mind of {name_of(agent)} cannot be read ({why}); it "
                                 "starts with an empty memory")
    lost = [a for a in listed if a not in read.records and a not in damaged
            and (agents is None or a in agents)]
    for agent in lost:
        read.warnings.append(f"the mind of {name_of(agent)} cannot be read ({where} is cut "
                             f"short{': ' + stopped if stopped else ''}); it starts with an "
                             "empty memory")
    if stopped and not listed:
        read.warnings.append(f"{where} is damaged ({stopped}); the agents after the damage "
                             "start with empty memories")
    return read


def read_legacy_memories(folder: Path, agents: Mapping[int, str]) -> MindsRead:
    """LLM agents' memories as folders written before mind files kept them:
    ``memories/<agent>.json`` (``{"agent", "name", "memory"}``), as records of kind
    ``llm``. A file that cannot be read is one warning naming the agent."""
    read = MindsRead()
    for agent, name in agents.items():
        path = folder / f"{agent}.json"
        try:
            doc = orjson.loads(path.read_bytes())
            memory = doc["memory"]
            if not isinstance(memory, dict):
                raise TypeError("memory is not an object")
        except FileNotFoundError:
            continue
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
            read.warnings.append(f"the mind of agent {agent} ({name}) cannot be read "
                                 f"(memories/{path.name}: {type(exc).__name__}); it starts "
                                 "with an empty memory")
            continue
        read.records[agent] = {"agent": agent, "name": name, "brain": "", "kind": "llm",
                               "state": {"memory": memory}}
        read.path = folder
    return read
