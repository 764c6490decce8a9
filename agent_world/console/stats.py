"""/stats: figures in named sections, one line each.

The list of sections is open: ``Console.stats_sections`` holds the built-in ones, and any
part attached to the session as ``llm``, ``angel`` or ``persistence`` with a ``stats()``
method returning a dict gets a section of its own, so those parts report here without the
console knowing them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_world.config import PERSONALITIES
from agent_world.console.parsing import NoArgs
from agent_world.core import components as c

if TYPE_CHECKING:
    from agent_world.console.commands import Console

__all__ = ["SEAM_ATTRS", "StatsSection", "default_sections", "format_figures", "show"]

SEAM_ATTRS = ("llm", "angel", "persistence", "gc")
"""Session attributes that, when present and not None, report ``stats() -> dict``."""

Figures = Mapping[str, object]


@dataclass(frozen=True, slots=True)
class StatsSection:
    title: str
    figures: Callable[[Console], Figures]


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{round(value, 2):g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_value(v)}" for k, v in value.items()) or "none"
    return str(value)


def format_figures(title: str, figures: Figures) -> str:
    return f"{title + ':':<11} " + " · ".join(f"{k} {_value(v)}" for k, v in figures.items())


def _ticks(console: Console) -> Figures:
    s = console.loop.stats()
    return {
        "tick": console.world.tick,
        "state": "paused" if s.paused else "running",
        "speed": f"{s.tick_rate:g} Hz",
        "run": s.ticks,
        "p50": f"{s.p50_ms:.2f} ms",
        "p99": f"{s.p99_ms:.2f} ms",
        "max": f"{s.max_ms:.2f} ms",
        "overruns": s.overruns,
    }


def _by_count(counts: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _agents(console: Console) -> Figures:
    by: dict[str, int] = dict.fromkeys(PERSONALITIES, 0)
    agents = console.world.agents()
    for _eid, row in agents:
        by[row[0].personality] = by.get(row[0].personality, 0) + 1
    return {"alive": len(agents), "by personality": by}


def _items(console: Console) -> Figures:
    qty: dict[str, int] = {}
    stacks = console.world.store.query(c.Item)
    for _eid, (item,) in stacks:
        qty[item.kind] = qty.get(item.kind, 0) + item.qty
    return {"stacks": len(stacks), "on the ground": _by_count(qty)}


def _objects(console: Console) -> Figures:
    kinds: dict[str, int] = {}
    objects = console.world.store.query(c.StaticObject)
    for _eid, (obj,) in objects:
        kinds[obj.kind] = kinds.get(obj.kind, 0) + 1
    return {"total": len(objects), "by kind": _by_count(kinds)}


def _events(console: Console) -> Figures:
    counter = console.session.events
    return {"total": counter.total, "by type": _by_count(counter.by_type)}


def _world_log(console: Console) -> Figures:
    log = console.session.world_log
    return {"path": str(log.path), **log.stats()}


def _console(console: Console) -> Figures:
    return {"commands": console.commands_run, "errors": console.errors,
            "internal errors": console.internal_errors,
            "inputs waiting": console.world.inbox.pending()}


def default_sections() -> list[StatsSection]:
    return [
        StatsSection("ticks", _ticks),
        StatsSection("agents", _agents),
        StatsSection("items", _items),
        StatsSection("objects", _objects),
        StatsSection("events", _events),
        StatsSection("world log", _world_log),
        StatsSection("console", _console),
    ]


async def show(console: Console, _args: NoArgs) -> list[str]:
    lines = [format_figures(s.title, s.figures(console)) for s in console.stats_sections]
    for attr in SEAM_ATTRS:
        part = getattr(console.session, attr, None)
        if part is not None and callable(getattr(part, "stats", None)):
            lines.append(format_figures(attr, part.stats()))
    return lines
