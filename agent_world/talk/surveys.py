"""Surveys: one question to every agent a filter matches, and the table of their answers.

A ``Filter`` is read once from ``key=value`` words (the console's ``/survey``) or a JSON
object (``POST /api/surveys``); ``Survey`` keeps a row per agent asked and writes the table
as ``surveys/<id>.csv`` and ``surveys/<id>.json`` in the save folder when the last answer is
in (docs/save-format.md, "Surveys").
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_world.config import BRAIN_NAME, PERSONALITIES
from agent_world.config.brains import PROFILE_NAME
from agent_world.core import components as c
from agent_world.core.teams import TEAM_NAME
from agent_world.core.world import World
from agent_world.persistence.files import write_atomic

__all__ = ["COLUMNS", "FILTER_KEYS", "Filter", "FilterError", "Row", "Survey"]

FILTER_KEYS = ("personality", "brain", "model", "team", "area")
COLUMNS = ("agent", "name", "personality", "team", "brain", "answered_by", "model", "status",
           "answer", "error", "asked_tick", "answered_tick", "latency_ms", "interview")
MAX_VALUES = 16  # values one filter key may list
_AREA = re.compile(r"-?[0-9]{1,9}")


class FilterError(ValueError):
    """A filter that cannot be used; the message names the key and what it takes."""


def _values(key: str, raw: str | Sequence[str]) -> tuple[str, ...]:
    words = raw.split(",") if isinstance(raw, str) else list(raw)
    if not all(isinstance(w, str) for w in words):
        raise FilterError(f"{key} takes names (text), got {raw!r:.60}")
    values = tuple(w.strip().lower() for w in words if w.strip())
    if not values:
        raise FilterError(f"{key}= has no value")
    if len(values) > MAX_VALUES:
        raise FilterError(f"{key} lists {len(values)} values; at most {MAX_VALUES}")
    return values


@dataclass(frozen=True, slots=True, kw_only=True)
class Filter:
    """Which agents a survey asks: every value list matches any of its values, and every
    key given must match (no key: every living agent). ``model`` is the model profile an
    agent thinks with (``default`` for brain ``llm``; an ``LLMBrain``'s ``model``);
    ``area`` is x0, y0, x1, y1, both corners included."""

    personality: tuple[str, ...] = ()
    brain: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    team: tuple[str, ...] = ()
    area: tuple[int, int, int, int] | None = None

    @classmethod
    def parse(cls, given: Mapping[str, Any]) -> Filter:
        """From ``{key: value}`` (a value: ``a,b`` or a list of names; area ``x0,y0,x1,y1``
        or four numbers); FilterError names what is wrong."""
        out: dict[str, Any] = {}
        for key, raw in given.items():
            if key not in FILTER_KEYS:
                raise FilterError(f"unknown filter {key!r} (filters: "
                                  f"{', '.join(f'{k}=' for k in FILTER_KEYS)})")
            if key == "area":
                out["area"] = _area(raw)
                continue
            values = _values(key, raw)
            for value in values:
                _check(key, value)
            out[key] = values
        return cls(**out)

    def match(self, world: World, eid: int, model_of: Callable[[int], str]) -> bool:
        store = world.store
        agent = store.get(eid, c.Agent)
        if self.personality and agent.personality not in self.personality:
            return False
        if self.brain and agent.brain not in self.brain:
            return False
        if self.team:
            team = store.try_get(eid, c.Team)
            if team is None or team.name not in self.team:
                return False
        if self.area is not None:
            pos = store.get(eid, c.Position)
            x0, y0, x1, y1 = self.area
            if not (x0 <= pos.x <= x1 and y0 <= pos.y <= y1):
                return False
        return not self.model or model_of(eid) in self.model

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: list(getattr(self, k)) for k in FILTER_KEYS[:4]
                               if getattr(self, k)}
        if self.area is not None:
            out["area"] = list(self.area)
        return out

    def describe(self) -> str:
        parts = [f"{k}={','.join(str(v) for v in vs)}" for k, vs in self.to_dict().items()]
        return " ".join(parts) or "every living agent"


def _check(key: str, value: str) -> None:
    if key == "personality" and value not in PERSONALITIES:
        raise FilterError(f"unknown personality {value!r} (personalities: "
                          f"{', '.join(PERSONALITIES)})")
    if key == "brain" and not BRAIN_NAME.fullmatch(value):
        raise FilterError(f"brain {value!r:.40} is not a brain's name (builtin, llm, llm:NAME, "
                          "a registered brain's or policy:NAME)")
    if key == "model" and not PROFILE_NAME.fullmatch(value):
        raise FilterError(f"model {value!r:.40} is not a model profile's name (default, or a "
                          "name of llm.models)")
    if key == "team" and not TEAM_NAME.fullmatch(value):
        raise FilterError(f"team {value!r:.40} is not a team's name (1-16 of a-z, 0-9 and _)")


def _area(raw: Any) -> tuple[int, int, int, int]:
    parts = raw.split(",") if isinstance(raw, str) else raw
    if (not isinstance(parts, list | tuple) or len(parts) != 4
            or not all((isinstance(p, int) and not isinstance(p, bool))
                       or (isinstance(p, str) and _AREA.fullmatch(p.strip())) for p in parts)):
        raise FilterError(f"area must be x0,y0,x1,y1 (four whole numbers), got {raw!r:.60}")
    x0, y0, x1, y1 = (int(p) for p in parts)
    if x1 < x0 or y1 < y0:
        raise FilterError(f"area must have x0 <= x1 and y0 <= y1, got {x0},{y0},{x1},{y1}")
    return x0, y0, x1, y1


@dataclass(slots=True, kw_only=True)
class Row:
    """One agent's line of a survey's table."""

    agent: int
    name: str
    personality: str
    team: str
    brain: str
    interview: str
    asked_tick: int
    status: str = "waiting"  # waiting | asked | answered | failed
    answered_by: str = ""
    model: str = ""
    answer: str = ""
    error: str = ""
    answered_tick: int | None = None
    latency_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in COLUMNS}


@dataclass(slots=True, kw_only=True)
class Survey:
    """A survey under way or finished: its question, filter and rows (by agent id)."""

    id: str
    question: str
    filter: Filter
    remember: bool
    source: str
    asked_tick: int
    rows: dict[int, Row] = field(default_factory=dict)
    finished_tick: int | None = None
    files: tuple[str, ...] = ()
    unwritten: str = ""  # why the table is not in the save folder, if it is not

    @property
    def done(self) -> bool:
        return self.finished_tick is not None

    def counts(self) -> dict[str, int]:
        out = {"agents": len(self.rows), "answered": 0, "failed": 0, "waiting": 0}
        for row in self.rows.values():
            key = row.status if row.status in ("answered", "failed") else "waiting"
            out[key] += 1
        return out

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question, "filter": self.filter.to_dict(),
                "remember": self.remember, "source": self.source,
                "asked_tick": self.asked_tick, "finished_tick": self.finished_tick,
                "done": self.done, **self.counts(), "files": list(self.files),
                **({"unwritten": self.unwritten} if self.unwritten else {})}

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "columns": list(COLUMNS),
                "rows": [row.to_dict() for _eid, row in sorted(self.rows.items())]}

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
        for _eid, row in sorted(self.rows.items()):
            writer.writerow(["" if v is None else v for v in row.to_dict().values()])
        return out.getvalue()

    def write(self, folder: Path) -> tuple[str, ...]:
        """``<folder>/<id>.csv`` and ``.json``, each written whole (temp file + rename);
        returns their paths."""
        folder.mkdir(parents=True, exist_ok=True)
        table = folder / f"{self.id}.csv"
        doc = folder / f"{self.id}.json"
        write_atomic(table, self.csv_text().encode())
        write_atomic(doc, orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2))
        return (str(table), str(doc))
