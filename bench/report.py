"""Turning the figures into tables: aligned text for the terminal, Markdown for RESULTS.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Table", "build_tables", "render_markdown", "render_text"]


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _n(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _mb(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:.2f}"


def _sizes(results: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
    return [(n, r[key]) for n, r in results.get("sizes", {}).items() if key in r]


def build_tables(results: dict[str, Any]) -> list[Table]:
    tables: list[Table] = []
    sizes = results.get("sizes", {})
    flat = _sizes(results, "flat")
    if flat:
        t = Table("Simulation flat out (World.step, no persistence)",
                  ["agents", "map", "entities", "ticks/s", "ms/tick p50", "ms/tick p99"])
        for n, r in flat:
            info = sizes[n]["world"]
            t.rows.append([_n(int(n)), info["map"], _n(info["entities"]), _n(r["ticks_per_s"]),
                           _n(r["p50_ms"]), _n(r["p99_ms"])])
        tables.append(t)
    paced = _sizes(results, "paced")
    if paced:
        t = Table("Paced at 10 Hz, real clock, persistence on (ms)",
                  ["agents", "ticks", "Hz", "step p50", "step p99", "step max",
                   "tick p50", "tick p99", "tick max", "persist. p99", "persist. max",
                   "between max", "busy p99", "overruns", "holds 10 Hz"])
        for n, r in paced:
            tick, main, pers = r["tick"], r["main_thread"], r["persistence"]
            t.rows.append([_n(int(n)), _n(r["ticks"]), _n(r["rate_hz"], 2),
                           _n(tick["p50_ms"]), _n(tick["p99_ms"]), _n(tick["max_ms"]),
                           _n(main["p50_ms"]), _n(main["p99_ms"]), _n(main["max_ms"]),
                           _n(pers["p99_ms"], 2), _n(pers["max_ms"], 2),
                           _n(r.get("between_ticks", {}).get("max_ms")),
                           _n(r.get("busy", {}).get("p99_ms")), _n(r["overruns"]),
                           _n(r["holds_10hz"])])
        t.notes.append("step = the systems alone (World.step); tick = the whole main-thread "
                       "tick: systems plus observers (event counter, world log, persistence), "
                       "what /stats shows; persist. = the persistence observer alone (event "
                       "lines); between = work after the tick, before the next (garbage "
                       "collection after each tick; on hash and snapshot ticks the fork of the "
                       "child that serialises the state); busy = tick + between, the main "
                       "thread's share of one period. Holds 10 Hz: busy p99 < 100 ms.")
        tables.append(t)
    snaps = _sizes(results, "snapshot")
    if snaps:
        t = Table("Snapshots",
                  ["agents", "entities", "main thread p50 ms", "main max ms",
                   "until on disk p50 ms", "writer ms", "inline serialise p50 ms", "MB",
                   "gz MB"])
        for n, r in snaps:
            t.rows.append([_n(int(n)), _n(r["entities"]), _n(r["main_ms"]["p50"], 2),
                           _n(r["main_ms"]["max"], 2), _n(r["total"]["p50_ms"]),
                           _n(r["writer_ms_p50"]), _n(r["inline"]["p50_ms"]),
                           _mb(r["bytes"]), _mb(r["gz_bytes"])])
        first = snaps[0][1]
        t.notes.append(f"main thread = what the tick loop pays ({first['serialized_in']} "
                       "serialises); until on disk = from the request to the writer having "
                       "written and fsynced it; inline = World.state_bytes() on the main "
                       "thread (the path without fork, and the cost of each state hash a "
                       "replay verifies).")
        tables.append(t)
    logs = _sizes(results, "eventlog")
    replays = _sizes(results, "replay")
    if logs or replays:
        t = Table("Event log (flat out, persistence on) and replay",
                  ["agents", "ticks/s", "events/tick", "events/s written", "MB/s",
                   "replay ticks/s", "x real time", "replay unverified ticks/s", "x real"])
        for n, r in sizes.items():
            log = r.get("eventlog")
            rep = r.get("replay")
            if log is None and rep is None:
                continue
            log = log or {}
            ver = (rep or {}).get("verified", {})
            unv = (rep or {}).get("unverified", {})
            t.rows.append([_n(int(n)), _n(log.get("ticks_per_s")),
                           _n(log.get("events_per_tick")), _n(log.get("events_per_s"), 0),
                           _n(log.get("mb_per_s"), 2), _n(ver.get("ticks_per_s")),
                           _n(ver.get("x_real_time")), _n(unv.get("ticks_per_s")),
                           _n(unv.get("x_real_time"))])
        t.notes.append("events/s written = output events of the run / seconds until the "
                       "writer had them all on disk. Replay = the recorded run replayed with "
                       "agent_world.persistence.replay from its first snapshot, verifying "
                       "every logged state hash as `python main.py replay` does; "
                       "unverified skips the hashes.")
        tables.append(t)
    mem = _sizes(results, "memory")
    if mem:
        t = Table("Resident memory (fresh process per size)",
                  ["agents", "entities", "RSS before MB", "RSS after MB", "growth MB",
                   "KB/agent", "bytes/entity"])
        for n, r in mem:
            t.rows.append([_n(int(n)), _n(r["entities"]), _n(r["rss_before_mb"]),
                           _n(r["rss_after_mb"]), _n(r["grown_mb"]), _n(r["kb_per_agent"]),
                           _n(r["bytes_per_entity"])])
        t.notes.append("growth from before World.create to after 20 ticks, over N; it "
                       "includes each agent's share of the map (tiles, objects, items).")
        tables.append(t)
    tables.extend(_summary_tables(results))
    return tables


def _summary_tables(results: dict[str, Any]) -> list[Table]:
    tables: list[Table] = []
    headline = Table("Targets (issue 7)", ["figure", "measured", "target"])
    cap = results.get("capacity")
    if cap is not None:
        if "skipped" in cap:
            headline.rows.append(["largest N at 10 Hz, p99 < 100 ms", cap["skipped"],
                                  ">= 5,000"])
        else:
            hi = cap["bracket"][1]
            measured = f"{cap['largest_agents']:,}" + (
                f" (fails at {hi:,})" if hi is not None else " (largest measured)")
            headline.rows.append(["largest N at 10 Hz, p99 < 100 ms", measured, ">= 5,000"])
            headline.notes.append(f"capacity: {cap['method']}")
    snap = results.get("snapshot_10k_entities")
    if snap is not None:
        headline.rows.append([f"snapshot main-thread cost, {snap['entities']:,} entities",
                              f"{snap['main_ms']['p50']:.2f} ms (max "
                              f"{snap['main_ms']['max']:.2f})", "< 20 ms"])
    big = results.get("sizes", {}).get("10000", {}).get("snapshot")
    if big is not None:
        headline.rows.append([f"snapshot main-thread cost, 10,000 agents "
                              f"({big['entities']:,} entities)",
                              f"{big['main_ms']['p50']:.2f} ms (max {big['main_ms']['max']:.2f})",
                              "-"])
    rep = results.get("sizes", {}).get("1000", {}).get("replay")
    if rep is not None:
        headline.rows.append(["replay at 1,000 agents (verified)",
                              f"{rep['verified']['x_real_time']:,.1f}x real time", ">= 20x"])
    paced5k = results.get("sizes", {}).get("5000", {}).get("paced")
    if paced5k is not None:
        headline.rows.append(["5,000 agents paced: tick p99",
                              f"{paced5k['main_thread']['p99_ms']:.1f} ms", "< 100 ms"])
        if "busy" in paced5k:
            headline.rows.append(["5,000 agents paced: busy p99 (tick + work before the next)",
                                  f"{paced5k['busy']['p99_ms']:.1f} ms", "< 100 ms"])
    load = results.get("llm_load")
    if load is not None and "skipped" not in load:
        headline.rows.append([f"{load['agents']} LLM agents (endpoint 1-3 s): tick p99 vs "
                              "no LLM", f"{load['llm']['p99_ms']:.1f} vs "
                              f"{load['builtin']['p99_ms']:.1f} ms ({load['p99_ratio']:.2f}x)",
                              "<= 1.10x"])
    mesa = results.get("mesa")
    if mesa is not None and "sizes" in mesa:
        for n, r in mesa["sizes"].items():
            headline.rows.append([f"speed vs Mesa, {int(n):,} agents",
                                  f"{r['ratio']:.2f}x", ">= 5x"])
    if headline.rows:
        tables.append(headline)
    if load is not None and "skipped" not in load:
        t = Table(f"LLM path under load: {load['agents']} agents paced at 10 Hz",
                  ["brains", "ticks", "Hz", "tick p50", "tick p99", "tick max", "overruns",
                   "decisions/s", "cache hits", "latency p50", "LLM main thread p99"])
        for name, r in (("built-in", load["builtin"]), ("LLM, 1-3 s endpoint", load["llm"])):
            t.rows.append([name, _n(r["ticks"]), _n(r["rate_hz"], 2), _n(r["p50_ms"]),
                           _n(r["p99_ms"]), _n(r["max_ms"]), _n(r["overruns"]),
                           _n(r.get("decisions_per_s"), 2), r.get("cache_hit_rate", "-"),
                           r.get("latency_p50", "-"), r.get("llm_main_thread_p99", "-")])
        t.notes.append("every agent of the LLM world asks the local fake endpoint, which "
                       "answers each request after a random 1-3 s; 32 worker threads, one "
                       "request each at a time; ticks in ms.")
        tables.append(t)
    elif load is not None:
        tables.append(Table("LLM path under load", ["note"], [[load["skipped"]]]))
    if mesa is not None and "sizes" in mesa:
        t = Table(f"Shared workload beside Mesa {mesa.get('mesa_version')} (ms per step, "
                  f"{mesa['steps']} steps, {mesa['repeats']} runs)",
                  ["agents", "grid", "agent_world", "mesa.space", "mesa.discrete_space",
                   "ratio (vs faster Mesa)", "deaths/step (aw, space, cells)"])
        for n, r in mesa["sizes"].items():
            impl = r["implementations"]
            aw, sp, ce = impl["agent_world"], impl["mesa_space"], impl["mesa_cells"]
            t.rows.append([_n(int(n)), f"{r['side']}x{r['side']}",
                           f"{aw['median_ms_per_step']:.1f} (best {aw['best_ms_per_step']:.1f})",
                           f"{sp['median_ms_per_step']:.1f} (best {sp['best_ms_per_step']:.1f})",
                           f"{ce['median_ms_per_step']:.1f} (best {ce['best_ms_per_step']:.1f})",
                           f"{r['ratio']:.2f}x",
                           f"{aw['deaths_per_step']}, {sp['deaths_per_step']}, "
                           f"{ce['deaths_per_step']}"])
        t.notes.append(f"median of {mesa['repeats']} interleaved runs (best in brackets); "
                       f"torus at {mesa['density']} agents per cell; ratio = the faster Mesa "
                       "version's median / Agent World's median.")
        tables.append(t)
    elif mesa is not None:
        tables.append(Table("Shared workload beside Mesa", ["note"], [[mesa["skipped"]]]))
    live = results.get("liveliness")
    if live is not None:
        tables.extend(_liveliness_tables(live))
    return tables


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def _liveliness_tables(live: dict[str, Any]) -> list[Table]:
    tables = []
    for seed in live["seeds"]:
        t = Table(f"Liveliness, seed {seed['seed']}: the default world for {seed['ticks']:,} "
                  f"ticks in windows of {live['window']:,}",
                  ["ticks", "agents", "fewest of a kind", "richest %", "items max",
                   "offers", "accepted", "distinct said", "casts", "angel asks",
                   "failed", "ticks/s"])
        for w in seed["windows"]:
            kinds = w["by_personality"]
            t.rows.append([w["ticks"], f"{_n(w['agents_min'])}-{_n(w['agents_max'])}",
                           _n(min(kinds.values())) if kinds else "-",
                           _pct(w["richest_share_max"]), _n(w["items_max"]),
                           _n(w["offers"]), _pct(w["acceptance"]),
                           _pct(w["distinct_share"]), _n(w["casts"]),
                           _n(w["angel_requests"]), _pct(w["failed_share"]),
                           _n(w["ticks_per_s"], 0)])
        growth = seed["slowdown"]
        t.notes.append(f"flat out: {seed['ticks_per_s_first']:,.0f} ticks/s in the first "
                       f"window, {seed['ticks_per_s_last']:,.0f} in the last ("
                       f"{'n/a' if growth is None else f'{growth:.2f}x'} slower; at most "
                       "2x); fewest of a kind: the smallest personality at the last census")
        verdict = (f"the report's checks: {seed['checks']} evaluated, "
                   f"{len(seed['violations'])} violated")
        t.notes.append(verdict)
        t.notes.extend(f"violated: {line}" for line in seed["violations"])
        tables.append(t)
    return tables


def render_text(tables: list[Table]) -> str:
    out: list[str] = []
    for t in tables:
        widths = [max(len(h), *(len(r[i]) for r in t.rows)) if t.rows else len(h)
                  for i, h in enumerate(t.headers)]
        out.append(t.title)
        out.append("  ".join(h.rjust(w) if i else h.ljust(w)
                             for i, (h, w) in enumerate(zip(t.headers, widths, strict=True))))
        for row in t.rows:
            out.append("  ".join(c.rjust(w) if i else c.ljust(w)
                                 for i, (c, w) in enumerate(zip(row, widths, strict=True))))
        out.extend(f"  {note}" for note in t.notes)
        out.append("")
    return "\n".join(out)


def render_markdown(results: dict[str, Any], tables: list[Table]) -> str:
    m = results["machine"]
    load_start = m.get("load_average_start")
    load_end = m.get("load_average_end")
    lines = [
        f"## {m['date'][:10]}: commit {m.get('commit') or 'unknown'}",
        "",
        f"- Command: `{m['command']}`",
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"Python {m['python']} ({m['implementation']}), {m['platform']}",
        f"- Date: {m['date']}",
        f"- Load average (1/5/15 min) at start: {_load(load_start)}; at end: {_load(load_end)}",
        f"- Took {results.get('seconds', 0):.0f} s",
        "",
    ]
    for t in tables:
        lines.append(f"### {t.title}")
        lines.append("")
        lines.append("| " + " | ".join(t.headers) + " |")
        lines.append("|" + "|".join("---" if i == 0 else "---:"
                                    for i in range(len(t.headers))) + "|")
        lines.extend("| " + " | ".join(row) + " |" for row in t.rows)
        if t.notes:
            lines.append("")
            lines.extend(t.notes)
        lines.append("")
    return "\n".join(lines)


def _load(values: list[float] | None) -> str:
    return "unknown" if not values else " / ".join(f"{v:.2f}" for v in values)
