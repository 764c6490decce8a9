"""Trajectories out: every logged decision of a save folder, with the observation it
answered, the decision and its reasoning, the model and tokens behind it, and the outcome
that followed (``recorded.outcomes``), as JSON Lines or Parquet, for offline RL and
preference tuning (``python main.py export``).

One replay (``recorded.decisions``), streamed: a record is written once its outcome's window
has closed, in decision order, so only the decisions of one window are ever held, whatever
the world's length. The file is written beside its final name and renamed into place at the
end, so a failed or interrupted export leaves no half file under that name.

Parquet holds one row per decision with the same fields; those that are nested in JSON
(``observation``, ``actions``, ``reasons``, ``usage``, ``deltas``) are JSON text columns, so
any Parquet reader can load the file without our schema. It needs pyarrow (``pip install
'agent-world[export]'``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence.folder import SaveFolder
from agent_world.persistence.spans import SetupFactory
from agent_world.recorded.decisions import (
    PLAN,
    Key,
    RecordedDecision,
    Selection,
    replay_decisions,
    select_decisions,
)
from agent_world.recorded.outcomes import Outcomes, Reward
from agent_world.types import TickReport

__all__ = ["FORMATS", "ExportError", "ExportOptions", "ExportResult", "export", "record_of"]

FORMATS = ("jsonl", "parquet")
PARQUET_ROWS = 2000  # rows per Parquet row group: what one write holds in memory
JSON_COLUMNS = ("observation", "actions", "reasons", "usage", "deltas")
SCALARS: dict[str, str] = {  # the other columns and their Parquet types
    "world": "string", "agent": "int64", "name": "string", "source": "string",
    "by": "string", "model": "string", "asked_tick": "int64", "tick": "int64",
    "request": "int64", "reasoning": "string", "prompt_tokens": "int64",
    "completion_tokens": "int64", "cost": "float64", "latency_ms": "float64",
    "cached": "bool_", "reward": "float64", "outcome_to_tick": "int64", "outcome_ended": "string",
}


class ExportError(ValueError):
    """Bad input: one line naming the value and the fix."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportOptions:
    out: Path
    format: str = "jsonl"
    reward: Reward | None = None
    window: int = 100
    first: int | None = None
    last: int | None = None
    agents: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ExportResult:
    path: Path
    records: int
    selection: Selection


class _Sink(Protocol):
    def write(self, record: Mapping[str, Any]) -> None: ...
    def close(self) -> None: ...


class _Jsonl:
    def __init__(self, path: Path) -> None:
        self.file = path.open("wb")

    def write(self, record: Mapping[str, Any]) -> None:
        self.file.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))

    def close(self) -> None:
        self.file.close()


class _Parquet:
    def __init__(self, path: Path) -> None:
        pa = importlib.import_module("pyarrow")  # the export extra: optional
        pq = importlib.import_module("pyarrow.parquet")
        self.pa = pa
        fields = [pa.field(name, getattr(pa, kind)()) for name, kind in SCALARS.items()]
        fields += [pa.field(name, pa.string()) for name in JSON_COLUMNS]
        self.schema = pa.schema(fields)
        self.writer = pq.ParquetWriter(str(path), self.schema)
        self.rows: list[dict[str, Any]] = []

    def write(self, record: Mapping[str, Any]) -> None:
        row = {name: record.get(name) for name in SCALARS}
        for name in JSON_COLUMNS:
            value = record.get(name)
            row[name] = None if value is None else orjson.dumps(value).decode()
        self.rows.append(row)
        if len(self.rows) >= PARQUET_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self.rows:
            self.writer.write_table(self.pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []

    def close(self) -> None:
        self._flush()
        self.writer.close()


def parquet_available() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


def record_of(world: str, decision: RecordedDecision, outcome: Mapping[str, Any] | None
              ) -> dict[str, Any]:
    """One exported record (docs/evaluation.md, "Exporting trajectories", has the format)."""
    logged = decision.logged
    data = logged.data
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
    by = (data.get("brain") or data.get("client") or
          (f"llm {data['model']}" if data.get("model") else logged.source))
    return {
        "world": world, "agent": logged.agent, "name": decision.observation.me.name,
        "source": logged.source, "by": str(by), "model": data.get("model"),
        "asked_tick": logged.asked_tick, "tick": logged.tick,
        "request": data.get("request"), "reasons": list(data.get("reasons") or []),
        "observation": decision.observation.to_dict(),
        "actions": [dict(a) for a in logged.actions], "reasoning": logged.thought,
        "prompt_tokens": usage.get("prompt_tokens") if usage else None,
        "completion_tokens": usage.get("completion_tokens") if usage else None,
        "cost": usage.get("cost") if usage else None, "usage": usage,
        "latency_ms": data.get("latency_ms"), "cached": data.get("cached"),
        **({} if outcome is None else {
            "reward": outcome["reward"], "deltas": outcome["deltas"],
            "outcome_to_tick": outcome["to_tick"], "outcome_ended": outcome["ended"]}),
    }


class _Follow:
    """Opens each exported decision's window at the tick its plan input was applied, and
    keeps the outcomes that closed until their records are written."""

    def __init__(self, keys: Sequence[Key], reward: Reward | None, window: int) -> None:
        self.wanted = {(k.tick, k.seq): k for k in keys}
        self.reward, self.window = reward, window
        self.outcomes: Outcomes | None = None
        self.closed: dict[Key, dict[str, Any]] = {}

    def after_tick(self, world: World, report: TickReport) -> None:
        if self.reward is None:
            return
        if self.outcomes is None:
            self.outcomes = Outcomes(world, self.reward, self.window)
        for inp in report.inputs:
            key = self.wanted.get((inp.tick, inp.seq)) if inp.type == PLAN else None
            if key is not None:
                self.outcomes.open(key, key.agent)
        self.closed.update(self.outcomes.after_tick())

    def at_end(self) -> None:
        if self.outcomes is not None:
            self.closed.update(self.outcomes.close_all())


def export(folder: SaveFolder, config: Config, options: ExportOptions, *,
           setup_factory: SetupFactory | None = None,
           progress: Callable[[int], None] = lambda _n: None) -> ExportResult:
    """Write every selected decision's record to ``options.out``."""
    selection = select_decisions(folder, first=options.first, last=options.last,
                                 agents=list(options.agents) or None)
    follow = _Follow(selection.keys, options.reward, options.window)
    decisions = replay_decisions(folder, config, selection.keys, setup_factory=setup_factory,
                                 after_tick=follow.after_tick,
                                 follow_ticks=options.window if options.reward else 0)
    partial = options.out.with_name(f".{options.out.name}.partial")
    sink: _Sink = _Parquet(partial) if options.format == "parquet" else _Jsonl(partial)
    written = 0
    try:
        for record in _in_order(folder.root.name, decisions, follow, options.reward):
            sink.write(record)
            written += 1
            if written % 1000 == 0:
                progress(written)
        sink.close()
        os.replace(partial, options.out)
    except BaseException:
        sink.close()
        partial.unlink(missing_ok=True)
        raise
    return ExportResult(options.out, written, selection)


def _in_order(world: str, decisions: Iterator[RecordedDecision], follow: _Follow,
              reward: Reward | None) -> Iterator[dict[str, Any]]:
    """Records in decision order, each once its outcome is known (at once without one)."""
    waiting: deque[RecordedDecision] = deque()
    for decision in decisions:
        waiting.append(decision)
        while waiting and (reward is None or waiting[0].key in follow.closed):
            done = waiting.popleft()
            yield record_of(world, done, follow.closed.pop(done.key, None))
    follow.at_end()
    while waiting:
        done = waiting.popleft()
        yield record_of(world, done, follow.closed.pop(done.key, None))
