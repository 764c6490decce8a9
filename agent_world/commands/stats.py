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

from agent_world.commands.parsing import NoArgs
from agent_world.config import PERSONALITIES
from agent_world.core import components as c
from agent_world.gcpolicy import resident_bytes

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["SEAM_ATTRS", "StatsSection", "default_sections", "format_figures", "sections",
           "show"]

SEAM_ATTRS = ("llm", "brains", "remote", "talk", "angel", "sandbox", "persistence", "web",
              "play")
"""Session attributes that, when present and not None, report ``stats() -> dict``."""
WIDTH = 98  # longest /stats line (100 with a piped reply's indent); a section wraps beyond
INDENT = 12

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


def format_figures(title: str, figures: Figures) -> list[str]:
    """``title: key value · key value ...`` in lines of at most WIDTH characters (a longer
    section continues on indented lines); a figure that is None (an error that did not
    happen) is left out, and keys read as words."""
    parts = [f"{str(k).replace('_', ' ')} {_value(v)}" for k, v in figures.items()
             if v is not None]
    rows: list[str] = []
    for part in parts:
        if rows and INDENT + len(rows[-1]) + 3 + len(part) <= WIDTH:
            rows[-1] = f"{rows[-1]} · {part}"
        else:
            rows.append(part)
    head = f"{title + ':':<{INDENT - 1}}"
    return [f"{head} {rows[0] if rows else 'none'}", *(" " * INDENT + r for r in rows[1:])]


def _size(n: object) -> str:
    if not isinstance(n, int):
        return str(n)
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _persistence_view(raw: Mapping[str, object]) -> Figures:
    view: dict[str, object] = {"folder": raw["folder"]}
    if raw["last_snapshot_tick"] != -1:
        view["snapshots"] = (f"{raw['snapshots_written']}, the last at tick "
                             f"{raw['last_snapshot_tick']} "
                             f"({_size(raw['last_snapshot_bytes'])}, written in "
                             f"{_value(raw['snapshot_write_ms_last'])} ms)")
    else:
        view["snapshots"] = "none yet this run"
    if raw["seek_points"] or raw["seek_points_failed"]:
        view["seek points"] = (f"{raw['seek_points']}, {_size(raw['seek_points_bytes'])}"
                               + (f" ({raw['seek_points_failed']} not written: the disk "
                                  "refused)" if raw["seek_points_failed"] else ""))
    lines = raw["lines_written"]
    view["event log"] = (f"{lines} line{'' if lines == 1 else 's'}, "
                         f"{_size(raw['event_bytes_written'])}")
    if raw["queue"] or raw["pending_lines_bytes"]:
        view["waiting"] = f"{raw['queue']} jobs, {_size(raw['pending_lines_bytes'])}"
    view["serialised in"] = (f"{raw['serialized_in']} (main thread "
                             f"{_value(raw['state_main_ms_last'])} ms, at most "
                             f"{_value(raw['state_main_ms_max'])} ms)")
    view["flush"] = raw["flush"]
    if raw["errors"]:
        view["write errors"] = f"{raw['errors']}, the last: {raw['error'] or 'now cleared'}"
    return view


def _sandbox_view(raw: Mapping[str, object]) -> Figures:
    per_tick = raw["ms_per_tick"]
    per_call = raw["ms_per_call"]
    assert isinstance(per_tick, Mapping) and isinstance(per_call, Mapping)
    return {
        "calls": f"{raw['calls']} (stopped by a backstop {raw['kills']}, postponed "
                 f"{raw['postponed']}, failed {raw['errors']})",
        "ms per tick": f"p50 {_value(per_tick['p50'])}, p99 {_value(per_tick['p99'])}, "
                       f"max {_value(per_tick['max'])}",
        "ms per call": f"mean {_value(per_call['mean'])}",
        "round trips per tick": raw["round_trips_per_tick"],
        "workers": f"{raw['workers_started']} started, {raw['workers_replaced']} replaced",
    }


VIEWS: dict[str, Callable[[Mapping[str, object]], Figures]] = {
    "persistence": _persistence_view,
    "sandbox": _sandbox_view,
}
"""How a seam's raw figures read at the console (the rest show as they are)."""


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
        # Ticks the paced loop let go of when it fell behind (by anything: a long tick,
        # work between ticks): the time the world lost, which the tick times do not show.
        "skipped": f"{s.skipped} ticks ({s.lost_ms / 1000:.1f} s lost)",
    }


def _by_count(counts: Mapping[str, int], shown: int = 6) -> dict[str, object]:
    """The largest counts first; past ``shown`` of them, how many more kinds there are."""
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    out: dict[str, object] = dict(ordered[:shown])
    if len(ordered) > shown:
        out["..."] = f"{len(ordered) - shown} more"
    return out


def _agents(console: Console) -> Figures:
    by: dict[str, int] = dict.fromkeys(PERSONALITIES, 0)
    agents = console.world.agents()
    for _eid, row in agents:
        by[row.agent.personality] = by.get(row.agent.personality, 0) + 1
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
    figures = log.stats()
    return {"path": str(log.path), "lines written": figures["lines_written"],
            **{k.replace("_", " "): v for k, v in figures.items()
               if k != "lines_written" and v}}


def _abilities(console: Console) -> Figures:
    world = console.world
    book = world.abilities
    counters = world.counters
    return {"known": len(book.names()), "generated": len(book.generated),
            "disabled": len(book.disabled), "casts": counters.get("ability_casts", 0),
            "refused by the world": counters.get("ability_casts_refused", 0),
            "requests": counters.get("ability_requests", 0),
            "open requests": len(book.requests)}


def _memory(console: Console) -> Figures:
    resident = resident_bytes()
    gc = console.session.gc.stats()
    return {"resident": None if resident is None else f"{resident / 2**20:.1f} MB",
            "collections": gc["collections"], "longest": f"{gc['max_ms']:.2f} ms",
            "sweeps": gc["sweeps"], "longest sweep": f"{gc['sweep_max_ms']:.1f} ms",
            "freed by sweeps": gc["swept_objects"],
            "closed connections held": gc["stranded"]}


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
        StatsSection("abilities", _abilities),
        StatsSection("memory", _memory),
        StatsSection("console", _console),
    ]


def sections(console: Console) -> list[tuple[str, Figures]]:
    """Every section's title and raw figures: the built-in ones, then each seam's."""
    out = [(s.title, s.figures(console)) for s in console.stats_sections]
    for attr in SEAM_ATTRS:
        part = getattr(console.session, attr, None)
        if part is not None and callable(getattr(part, "stats", None)):
            out.append((attr, part.stats()))
        if attr == "llm":  # then each model profile's LLM agents (llm.models), by name
            for name, model in getattr(console.session, "llm_models", {}).items():
                out.append((f"llm:{name}", model.stats()))
    return out


async def show(console: Console, _args: NoArgs) -> list[str]:
    lines = []
    for title, figures in sections(console):
        view = VIEWS.get(title)
        lines.extend(format_figures(title, view(figures) if view else figures))
    return lines
