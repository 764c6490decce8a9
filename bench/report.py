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
                   "replay ticks/s", "x real time", "replay unverified ticks/s", "x real",
                   "verified in spans: x real (processes)"])
        for n, r in sizes.items():
            log = r.get("eventlog")
            rep = r.get("replay")
            if log is None and rep is None:
                continue
            log = log or {}
            ver = (rep or {}).get("verified", {})
            unv = (rep or {}).get("unverified", {})
            spans = (rep or {}).get("verified_in_spans", {})
            t.rows.append([_n(int(n)), _n(log.get("ticks_per_s")),
                           _n(log.get("events_per_tick")), _n(log.get("events_per_s"), 0),
                           _n(log.get("mb_per_s"), 2), _n(ver.get("ticks_per_s")),
                           _n(ver.get("x_real_time")), _n(unv.get("ticks_per_s")),
                           _n(unv.get("x_real_time")),
                           f"{_n(spans.get('x_real_time'))} ({spans['processes']})"
                           if "processes" in spans else _n(None)])
        t.notes.append("events/s written = output events of the run / seconds until the "
                       "writer had them all on disk. Replay = the recorded run replayed with "
                       "agent_world.persistence.replay from its first snapshot, verifying "
                       "every logged state hash as `python main.py replay --workers 1` does; "
                       "unverified skips the hashes. Verified in spans = what `python main.py "
                       "replay` does by default: the log split at seek points into spans "
                       "replayed side by side, one process per CPU (process start-up and "
                       "world loading included).")
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
        headline.rows.append(["replay at 1,000 agents (verified, one core)",
                              f"{rep['verified']['x_real_time']:,.1f}x real time", ">= 20x"])
        spans = rep.get("verified_in_spans", {})
        if "processes" in spans:
            headline.rows.append([f"replay at 1,000 agents (verified in spans, "
                                  f"{spans['processes']} processes)",
                                  f"{spans['x_real_time']:,.1f}x real time", "-"])
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
    cost = (results.get("llm_cost") or {}).get("now")
    if cost is not None and "decisions" in cost:
        headline.rows.append([f"{results['llm_cost']['agents']} LLM agents: dollars per agent-hour "
                              "(gpt-4o-mini)",
                              f"${cost['dollars_per_agent_hour']['gpt-4o-mini']:.4f}",
                              "<= $0.03"])
        headline.rows.append(["LLM agents: uncached prompt tokens per decision",
                              _n(cost["uncached_tokens_per_decision"]), "<= 400"])
        headline.rows.append(["LLM agents: decisions per agent-hour",
                              _n(cost["decisions_per_agent_hour"]), "<= 180"])
    brains = results.get("brains_load")
    if brains is not None:
        headline.rows.append([f"{brains['agents']} agents on a user's Python brain: tick p99 "
                              "vs built-in brains",
                              f"{brains['brains']['p99_ms']:.1f} vs "
                              f"{brains['builtin']['p99_ms']:.1f} ms "
                              f"({brains['p99_ratio']:.2f}x)", "<= 1.10x"])
    mesa = results.get("mesa")
    if mesa is not None and "sizes" in mesa:
        for n, r in mesa["sizes"].items():
            headline.rows.append([f"speed vs Mesa, {int(n):,} agents",
                                  f"{r['ratio']:.2f}x", ">= 5x"])
    paced_web = (results.get("web") or {}).get("paced")
    if paced_web is not None:
        modes = paced_web["modes"]
        headline.rows.append([f"{paced_web['agents']:,} agents, {_WEB_CLIENTS} WebSocket clients: "
                              "tick p99 vs no server",
                              f"{modes['clients']['tick']['p99_ms']:.1f} vs "
                              f"{modes['none']['tick']['p99_ms']:.1f} ms "
                              f"({paced_web['p99_ratio']:.2f}x)", "<= 1.10x"])
        if paced_web.get("cpu_p99_ratio") is not None:
            headline.rows.append(["the same in main-thread CPU time per tick (what other "
                                  "processes' load disturbs least)",
                                  f"{modes['clients']['tick_cpu']['p99_ms']:.1f} vs "
                                  f"{modes['none']['tick_cpu']['p99_ms']:.1f} ms "
                                  f"({paced_web['cpu_p99_ratio']:.2f}x)", "<= 1.10x"])
    seek = results.get("seek")
    if seek is not None:
        headline.rows.append([f"replay --serve at {seek['agents']:,} agents: /seek, slowest "
                              f"of {len(seek['seeks'])}", f"{seek['max_s']:.2f} s",
                              f"<= {seek['goal_s']:g} s"])
        if seek.get("replay_to"):
            slowest = max(r["seconds"] for r in seek["replay_to"])
            headline.rows.append([f"replay --to T at {seek['agents']:,} agents "
                                  f"({seek['recorded']['ticks']:,} ticks recorded), slowest",
                                  f"{slowest:.2f} s", "<= 10 s"])
        verify = seek.get("verify")
        if verify:
            one, split = verify["one_core"], verify["default"]
            headline.rows.append([f"verifying all {seek['recorded']['ticks']:,} ticks at "
                                  f"{seek['agents']:,} agents: one core, then by default",
                                  f"{one['seconds']:,.1f} s, {split['seconds']:,.1f} s "
                                  f"({split['processes']} process"
                                  f"{'es' if split['processes'] > 1 else ''})", "-"])
    rl = results.get("rl")
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
    if brains is not None:
        t = Table(f"Users' brains under load: {brains['agents']} agents paced at 10 Hz",
                  ["brains", "ticks", "Hz", "tick p50", "tick p99", "tick max", "overruns",
                   "decisions/s", "fallbacks", "latency p50", "latency p95",
                   "main thread p99"])
        for name, r in (("built-in", brains["builtin"]), ("a user's Python brain",
                                                          brains["brains"])):
            t.rows.append([name, _n(r["ticks"]), _n(r["rate_hz"], 2), _n(r["p50_ms"]),
                           _n(r["p99_ms"]), _n(r["max_ms"]), _n(r["overruns"]),
                           _n(r.get("decisions_per_s"), 2), _n(r.get("fallbacks")),
                           r.get("latency_p50", "-"), r.get("latency_p95", "-"),
                           r.get("main_thread_p99", "-")])
        t.notes.append("the same world twice, each agent's brain the only difference; the "
                       "user's brain (bench/brains_bench.py) answers on 2 worker threads; "
                       "main thread p99 is the thinking layer's work after each tick (the "
                       "observations, triggers and bookkeeping), done while the loop waits, "
                       "outside the tick's time; ms.")
        tables.append(t)
    if results.get("llm_cost") is not None:
        tables.append(_llm_cost_table(results["llm_cost"]))
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
    if rl is not None:
        tables.append(_rl_table(rl))
    web = results.get("web")
    if web is not None:
        tables.extend(_web_tables(web))
    if seek is not None:
        tables.append(_seek_table(seek))
    live = results.get("liveliness")
    if live is not None:
        tables.extend(_liveliness_tables(live))
    for key, make in (("gc", _gc_table), ("churn", _churn_table), ("soak", _soak_table),
                      ("survey", _survey_table)):
        if results.get(key) is not None:
            tables.append(make(results[key]))
    scale = results.get("llm_scale")
    if scale is not None and "skipped" not in scale:
        tables.extend(_llm_scale_tables(scale))
    return tables


def _llm_scale_tables(scale: dict[str, Any]) -> list[Table]:
    """Issue 32: LLM worlds beside built-in ones, against the fake batched server."""
    t = Table(f"LLM agents against a {scale['slots']}-slot batched server (max_concurrent "
              f"{scale['max_concurrent']}), each world paced {scale['seconds_per_world']:g} s",
              ["agents", "Hz", "tick p99 built-in / LLM (x)", "busy p99 built-in / LLM",
               "pipeline ms/tick", "decisions/s of server max", "urgent answered p95 / "
               "server p50", "of which danger", "routine queued p50 / p95",
               "main ms/request", "KB/agent over built-in"])
    for n, r in scale["sizes"].items():
        b, llm, model, server = r["builtin"], r["llm"], r["llm"]["models"]["default"], r["server"]
        t.rows.append([
            _n(int(n)), f"{b['rate_hz']:.1f} / {llm['rate_hz']:.1f}",
            f"{b['tick_p99_ms']:.1f} / {llm['tick_p99_ms']:.1f} ({_n(r['tick_p99_ratio'], 2)})",
            f"{b['busy_p99_ms']:.1f} / {llm['busy_p99_ms']:.1f}",
            f"{llm['pipeline_ms_mean']:.2f} (p99 {llm['pipeline_p99_ms']:.1f})",
            f"{model['decisions_per_s']:.1f} of {server['capacity_per_s']:.1f} "
            f"({_n(r['decisions_share_of_capacity'], 2)})",
            f"{model['urgent_answered_p95_ms'] / 1000:.2f} / {server['latency_p50_s']:.2f} s "
            f"({_n(r['urgent_p95_over_server_latency'], 2)}; "
            f"{_n(r.get('urgent_stale_share'), 2)} stale)",
            (f"{model['danger_answered_p95_ms'] / 1000:.2f} s "
             f"({_n(r.get('danger_p95_over_server_latency'), 2)}; "
             f"{_n(r.get('danger_stale_share'), 2)} stale)"
             if "danger_answered_p95_ms" in model else "-"),
            f"{model['routine_wait_p50_ms'] / 1000:.1f} / "
            f"{model['routine_wait_p95_ms'] / 1000:.1f} s",
            f"{model['main_ms_per_request']:.2f}",
            _n(r["kb_per_llm_agent_over_builtin"])])
    t.notes.append("targets at 2,000: 10 Hz, tick p99 <= 1.10x built-in; decisions/s >= 0.9 of "
                   "the server's max when agents ask for more; urgent p95 <= 3x the server's "
                   "latency; <= 50 KB per LLM agent. busy = the tick plus the work before the "
                   "next one (the decision pipeline's share runs there).")
    two = scale["two_models"]
    u = Table(f"Two models in one world of {two['agents']:,} LLM agents, two servers",
              ["model", "agents", "decisions/s", "server max/s", "share", "latency p50",
               "urgent answered p95"])
    for name, share in two["shares"].items():
        m, server = two["world"]["models"][name], two["servers"][name]
        u.rows.append([name, _n(m["agents"]), f"{m['decisions_per_s']:.1f}",
                       f"{server['capacity_per_s']:.1f}", _n(share, 2),
                       f"{server['latency_p50_s']:.2f} s",
                       f"{m['urgent_answered_p95_ms'] / 1000:.2f} s"])
    return [t, u]


def _skipped(title: str, figures: dict[str, Any]) -> Table | None:
    return Table(title, ["note"], [[figures["skipped"]]]) if "skipped" in figures else None


def _gc_table(gc: dict[str, Any]) -> Table:
    title = "Garbage collection: the old policy (freeze after every tick) and the new (sweeps)"
    skipped = _skipped(title, gc)
    if skipped is not None:
        return skipped
    t = Table(title, ["agents", "policy", "ticks", "tick p50", "tick p99", "busy p99",
                      "between p99", "longest collection", "sweeps"])
    for n, figures in gc["sizes"].items():
        for label in ("old", "new"):
            r = figures[label]
            t.rows.append([_n(int(n)), f"{label} ({gc['old_commit']})" if label == "old"
                           else label, _n(r["ticks"]), _n(r["tick"]["p50_ms"]),
                           _n(r["tick"]["p99_ms"]), _n(r["busy"]["p99_ms"]),
                           _n(r["between"]["p99_ms"]), _n(r["collection_max_ms"]),
                           ", ".join(f"{ms:.0f}" for ms in r.get("sweep_ms", [])) or "-"])
    t.notes.append("paced 10 Hz sessions, persistence on, one world per size, the old policy "
                   "first; ms. tick = the tick loop's tick; busy = tick + the work before the "
                   "next (collection, state-hash fork); longest collection = the longest one "
                   "after a tick; sweeps = sweeps timed on the same world after its paced run "
                   "(a paced minute with no web client has none).")
    return t


def _survey_table(survey: dict[str, Any]) -> Table:
    title = (f"A survey of {survey.get('agents', '?')} LLM agents while they decide "
             "(fake batched server)")
    skipped = _skipped(title, survey)
    if skipped is not None:
        return skipped
    t = Table(title, ["run", "measured s", "tick p99", "tick+between p99",
                      "urgent queued p95 ms", "urgent answered p95 ms", "urgent decisions",
                      "answers", "answers/s", "interviews out (most)", "tokens spent"])
    for label, key in (("without the survey", "without_survey"),
                       ("with the survey", "with_survey")):
        r = survey[key]
        t.rows.append([label, _n(r["measured_s"]), _n(r["tick_p99_ms"], 2),
                       _n(r["tick_with_between_p99_ms"], 2),
                       _n(r["urgent_queue_wait_p95_ms"]), _n(r["urgent_answered_p95_ms"]),
                       _n(r["urgent_decisions"]),
                       _n(r.get("answered")) + (f" of {r['survey_agents']}"
                                                if "survey_agents" in r else ""),
                       _n(r.get("answers_per_s"), 2),
                       (f"{r['interviews_in_flight_peak']} (talk.in_flight "
                        f"{r['talk_in_flight']})" if "talk_in_flight" in r else "-"),
                       _n(r["tokens_spent"])])
    rnd = survey.get("round", {})
    t.notes.append(f"server: {survey['slots']} slots, capacity "
                   f"{_n(survey.get('server_capacity_per_s'), 1)} requests/s, served "
                   f"{_n(survey.get('server_served_per_s'), 1)}/s in the survey run; an agent "
                   f"marked attacked every {survey['urgent_every_ticks']} ticks (urgent). "
                   f"Talk round with {_n(rnd.get('waiting'))} waiting: p50 "
                   f"{_n(rnd.get('round_p50_ms'), 4)} ms, p99 {_n(rnd.get('round_p99_ms'), 4)} "
                   "ms.")
    return t


def _churn_table(churn: dict[str, Any]) -> Table:
    title = "Connection churn: resident memory after idle gaps"
    skipped = _skipped(title, churn)
    if skipped is not None:
        return skipped
    t = Table(f"{title} ({churn['warmup']:,} connections to warm up, then "
              f"{churn['connections']:,}, at {churn['tick_rate']:g} Hz)",
              ["connections", "resident MB", "growth MB", "sweeps", "freed by sweeps",
               "closed connections held"])
    base = churn["readings"][0]["rss_kb"]
    for r in churn["readings"]:
        memory = r.get("memory", {})
        t.rows.append([_n(r["connections"]), f"{r['rss_kb'] / 1024:.1f}",
                       f"{(r['rss_kb'] - base) / 1024:+.2f}", _n(memory.get("sweeps")),
                       _n(memory.get("freed by sweeps")),
                       _n(memory.get("closed connections held"))])
    t.notes.append(f"{churn['seconds']:g} s; each round: /ws hello, subscribe, keyframe, "
                   "leave; /agents welcome, claim, leave. Readings after 30 idle ticks; "
                   f"growth over the run {churn['growth_mb']:+.2f} MB (bound: 2 MB per 50,000).")
    return t


def _soak_table(soak: dict[str, Any]) -> Table:
    title = "Soak: what grows per hour of wall time"
    skipped = _skipped(title, soak)
    if skipped is not None:
        return skipped
    slopes = soak["slopes_per_hour"]
    ranges = soak["ranges"]
    t = Table(f"{title} ({soak['minutes']:g} minutes, {soak['ticks']:,} ticks)",
              ["figure", "slope per hour", "range (settled)"])
    t.rows.append(["resident memory, MB", _n(slopes["rss_mb"], 2),
                   f"{ranges['rss_kb'][0] / 1024:.1f}-{ranges['rss_kb'][1] / 1024:.1f}"])
    for name in ("fds", "threads", "children"):
        t.rows.append([{"fds": "open file descriptors", "threads": "threads",
                        "children": "child processes"}[name], _n(slopes[name], 1),
                       f"{ranges[name][0]}-{ranges[name][1]}"])
    t.rows.append(["save folder, MB", _n(slopes["save_mb"], 2),
                   f"{soak['save_mb_per_world_day']:g} MB per world-day"])
    t.rows.append(["training runs' folder, MB", _n(slopes["runs_mb"], 2), "-"])
    t.notes.append(f"least squares over the samples (every {soak['sample_s']:g} s) after the "
                   f"first {soak['settle']:.0%} of the run; {soak['connections']:,} churned "
                   f"connections, {soak['frames']:,} frames to the viewer that stayed, "
                   f"{soak['training_runs']} training runs ({soak['training_failed']} failed), "
                   f"{soak['llm_requests']:,} LLM requests; a world-day is 864,000 ticks.")
    return t


def _rl_table(rl: dict[str, Any]) -> Table:
    if "env" not in rl:
        return Table("The RL environment", ["note"], [[rl["skipped"]]])
    env, plain = rl["env"], rl["episode"]
    t = Table(f"The RL environment: {rl['scenario']}, seed {rl['seed']}, {env['ticks']:,} "
              f"ticks, {rl['ticks_per_step']} ticks a step",
              ["played by", "agents", "steps", "steps/s", "agent-steps/s", "ticks/s",
               "reset s"])
    t.rows.append(["the env, random masked actions", _n(env["agents"]), _n(env["steps"]),
                   _n(env["steps_per_s"]), _n(env["agent_steps_per_s"]),
                   _n(env["ticks_per_s"]), _n(env["reset_s"], 3)])
    t.rows.append(["an eval episode, built-in brains (no env)", "-", "-", "-", "-",
                   _n(plain["ticks_per_s"]), "-"])
    t.notes.append(f"median of {rl['repeats']} interleaved runs of each; one process, the "
                   "save folder written as usual; steps/s counts the time in env.step only "
                   "(the learner's sampling is outside it); the episode's ticks/s includes its "
                   "set-up and final snapshot; agent-steps fall as random agents die.")
    return t


def _llm_cost_table(cost: dict[str, Any]) -> Table:
    t = Table(f"What LLM agents cost: {cost['agents']} LLM agents, {cost['ticks']:,} ticks "
              f"({cost['ticks'] / 600:g} minutes of world time at 10 Hz)",
              ["code", "decisions/agent-hour", "prompt tokens/decision", "cached", "uncached",
               "answer", "$/agent-hour gpt-4o-mini", "claude-haiku-4-5", "local",
               "invalid/decision", "fallbacks/decision", "reaction p50", "reaction p95"])
    for name, key in (("this commit", "now"), (f"before ({cost['baseline_commit']})",
                                                "before")):
        r = cost.get(key) or {}
        if "decisions" not in r:
            t.rows.append([name, r.get("skipped") or str(r.get("error", "-")), *["-"] * 11])
            continue
        usd = r["dollars_per_agent_hour"]
        t.rows.append([name, _n(r["decisions_per_agent_hour"]),
                       _n(r["prompt_tokens_per_decision"]),
                       _n(r["cached_tokens_per_decision"]),
                       _n(r["uncached_tokens_per_decision"]),
                       _n(r["answer_tokens_per_decision"]), f"${usd['gpt-4o-mini']:.4f}",
                       f"${usd['claude-haiku-4-5']:.4f}", f"${usd['local']:.2f}",
                       _n(r["invalid_per_decision"], 3), _n(r["fallbacks_per_decision"], 3),
                       f"{r['reaction_p50_s']} s", f"{r['reaction_p95_s']} s"])
    t.notes.append("a default world with 20 LLM agents against the fake endpoint, which "
                   "counts tokens from each request (4 characters a token) and reports "
                   "cached prefixes as OpenAI does (from 1,024 tokens, in steps of 128); "
                   "answers land in the tick they were asked in, so the figures measure "
                   "prompts and triggers; the budget is off; reaction: seconds of world time "
                   "from an attack, a word or an offer aimed at an LLM agent to its next "
                   "decision. Prices: " + "; ".join(f"{k} {v}" for k, v in
                                                    cost["prices"].items()) + ".")
    return t


def _spacing(rec: dict[str, Any]) -> str:
    """How the recording's seek points were spaced (runs before seek_target_ms had none)."""
    target = rec.get("seek_target_ms")
    if not target:
        return f"a seek point every {rec['seek_interval_ticks']} ticks"
    gaps = rec.get("seek_gap_ticks")
    apart = f"{gaps[0]:,} to {gaps[1]:,} ticks apart" if gaps else "none written"
    return (f"seek points spaced by the cost of the ticks (seek_target_ms {target:,}, on "
            f"multiples of {rec['seek_interval_ticks']}; recorded ticks took "
            f"{rec['tick_ms_mean']} ms on average): {apart}, {rec['seek_bytes'] / 1e6:.1f} MB")


def _seek_table(seek: dict[str, Any]) -> Table:
    rec = seek["recorded"]
    t = Table(f"Seeking a served replay: {seek['agents']:,} agents, {rec['ticks']:,} ticks "
              f"recorded, {rec['seek_points']} seek points of "
              f"{_n(rec['seek_point_kb_mean'])} KB on average",
              ["/seek TICK", "seconds", "started from"])
    for row in seek["seeks"]:
        t.rows.append([_n(row["tick"]), f"{row['seconds']:.2f}",
                       row["from"].split("(from ", 1)[-1].rstrip(")")])
    for row in seek.get("replay_to", ()):
        t.rows.append([f"replay --to {row['tick']:,}", f"{row['seconds']:.2f}",
                       "the nearest snapshot or seek point" + (
                           "" if row["status"] == 0 else f" (exit {row['status']})")])
    t.notes.append(f"p50 {seek['p50_s']:.2f} s, slowest {seek['max_s']:.2f} s, "
                   f"{seek['over_goal']} over {seek['goal_s']:g} s; in falling order, so no "
                   "seek starts from the world on screen; no indexer (only the save folder "
                   f"helps); {_spacing(rec)}.")
    return t


_WEB_CLIENTS = 20
_WEB_MODES = (("none", "no server"), ("server", "server, 0 clients"),
              ("clients", f"server, {_WEB_CLIENTS} clients"))


def _kb(n: float | None) -> str:
    return "-" if n is None else f"{n / 1000:,.1f}"


def _web_tables(web: dict[str, Any]) -> list[Table]:
    paced, big = web["paced"], web["big"]
    modes = paced["modes"]
    t = Table(f"Web: {paced['agents']:,} agents paced at 10 Hz, three ways "
              f"({paced['rounds']} block{'s' if paced['rounds'] != 1 else ''} of "
              f"{paced['block_ticks']} ticks each; ms)",
              ["web", "ticks", "Hz", "tick p50", "tick p99", "tick max",
               "block p99s: median (range)", "p50 / none", "p99 / none", "between p99",
               "main thread CPU", "frames/s", "frame p50", "frame max",
               "frames' share of wall"])
    base = modes["none"]["tick"]["p99_ms"]
    base50 = modes["none"]["tick"]["p50_ms"]
    for key, name in _WEB_MODES:
        m = modes[key]
        tick = m["tick"]
        frame = m.get("frame_ms", {})
        blocks = sorted(m["p99_per_block_ms"])
        t.rows.append([name, _n(m["ticks"]), _n(m["rate_hz"], 2), _n(tick["p50_ms"]),
                       _n(tick["p99_ms"]), _n(tick["max_ms"]),
                       f"{blocks[len(blocks) // 2]:.1f} ({blocks[0]:.1f}-{blocks[-1]:.1f})",
                       f"{tick['p50_ms'] / base50:.2f}x" if base50 else "-",
                       f"{tick['p99_ms'] / base:.2f}x" if base else "-",
                       _n(m["between"]["p99_ms"]), _pct(m["main_thread_cpu_share"]),
                       _n(m.get("frames_per_s")), _n(frame.get("p50"), 2),
                       _n(frame.get("max"), 2), _pct(m.get("frame_share_of_wall"))])
    ratio = paced["p99_ratio"]
    t.notes.append(
        "The same world and session in interleaved blocks (rotating order), no save folder; "
        "block p99s = each block's own p99; "
        "tick = the tick loop's own tick time (World.step and every observer; the live "
        "feed's frame is built after the tick, while the loop waits for the next one, and "
        "counts in main thread CPU and frame); between = the work after a tick (garbage "
        "collection); main "
        "thread CPU = its CPU time over the wall time (ticks, the server's handlers and "
        "socket writes); frame = the feed's frame (diff, filtering, encoding, hand-over) as "
        "web.feed.stats() times it; share = frame time over wall time. The clients run in a "
        'process of their own and subscribe with {"op": "subscribe", "rate": 10}.')
    if ratio is not None:
        t.notes.append(f"goal: tick p99 with {_WEB_CLIENTS} clients <= 1.10x the world's "
                       f"without a server: {ratio:.2f}x "
                       f"({'met' if ratio <= 1.10 else 'not met'})")
    tables = [t]
    c = modes["clients"].get("clients")
    if c is not None:
        t = Table(f"Web: {c['clients']} WebSocket clients subscribed to everything "
                  f"({paced['agents']:,} agents at 10 Hz)", ["figure", "value"])
        t.rows += [
            ["KB received per client per s (median; min-max)",
             f"{_kb(c['bytes_per_client_per_s'])} ({_kb(c['bytes_per_client_per_s_min'])}-"
             f"{_kb(c['bytes_per_client_per_s_max'])})"],
            ["KB sent per client per s (server's count)",
             _kb(c["server_bytes_per_client_per_s"])],
            ["delta frames per client per s (median; min)",
             f"{c['frames_per_client_per_s']:.2f} ({c['frames_per_client_per_s_min']:.2f})"],
            ["feed frames per s", _n(modes["clients"].get("frames_per_s"), 2)],
            ["subscription groups (one encoding per frame each)", _n(c["groups"])],
            ["keyframes after the first (a coalesced client's catch-up)",
             _n(c["keyframes_after_the_first"])],
            ["coalesced", _n(c["coalesced"])],
            ["closed as too slow / by the server", f"{c['closed_as_too_slow']} / "
                                                   f"{c['closed_by_server']}"],
            [f"first frame with {c['clients']} connecting at once, ms (median; max)",
             f"{c['first_frame_ms_all_at_once']['median']:,.1f} "
             f"({c['first_frame_ms_all_at_once']['max']:,.1f})"],
            ["keyframe KB", _kb(c["keyframe_bytes"])],
        ]
        tables.append(t)
    d = big["deltas"]
    holds = d["holds"]
    t = Table(f"Web: deltas at {big['agents']:,} agents ({big['map']} map, "
              f"{big['entities']:,} entities), a frame after each of {d['frames']} ticks",
              ["figure", "value"])
    key = d["keyframe"]
    t.rows += [
        ["delta per tick for a subscriber to everything, KB (median; min-max)",
         f"{_kb(d['bytes']['median'])} ({_kb(d['bytes']['min'])}-{_kb(d['bytes']['max'])})"],
        ["of which agents / items / objects / events, KB (median)",
         " / ".join(_kb(holds.get(f"bytes_{p}")) for p in ("agents", "items", "objects",
                                                          "events"))],
        ["records: agents updated / items added, dropped / objects updated (median)",
         f"{_n(holds.get('agents_upd'))} / {_n(holds.get('items_add'))}, "
         f"{_n(holds.get('items_drop'))} / {_n(holds.get('objects_upd'))}"],
        [f"events per frame (at most {d['max_events_per_frame']}) / dropped (median)",
         f"{_n(holds.get('events'))} / {_n(holds.get('events_dropped'))}"],
        ["frame build ms (median; max)", f"{d['frame_ms']['p50']:.1f} "
                                         f"({d['frame_ms']['max']:.1f})"],
        ["of which reading every agent's state, ms (median)", f"{d['agents_scan_ms']:.1f}"],
        ["tick without a frame / with its frame inside it, ms (median; max)",
         f"{d['tick_without_frame']['p50_ms']:.1f} ({d['tick_without_frame']['max_ms']:.1f}) / "
         f"{d['tick_with_frame']['p50_ms']:.1f} ({d['tick_with_frame']['max_ms']:.1f})"],
        ["garbage collection after the tick without a frame / with, ms (median; max)",
         f"{d['between_without_frame']['p50_ms']:.1f} "
         f"({d['between_without_frame']['max_ms']:.1f}) / "
         f"{d['between_with_frame']['p50_ms']:.1f} ({d['between_with_frame']['max_ms']:.1f})"],
        [f"frames per s the default web.frame_budget ({d['frame_budget']:g}) allows",
         _n(d["default_budget_frames_per_s"], 2)],
        ["keyframe KB (agents / items / objects records)",
         f"{_kb(key['bytes'])} ({key['records']['agents']:,} / {key['records']['items']:,} / "
         f"{key['records']['objects']:,})"],
        ["keyframe build + encode ms", f"{key['build_ms']:.1f} + {key['encode_ms']:.1f}"],
    ]
    t.notes.append("Ticks flat out: first with no client (without a frame), then with a "
                   "subscriber to everything, web.frame_budget lifted to 1 and the frame "
                   "built inside the tick, so that every tick gets its frame (rate 30, so "
                   "that no tick's delta is merged into the next). Sizes are the encoded "
                   "JSON sent; the agents' state is read again after each tick to time it, "
                   "outside the tick.")
    tables.append(t)
    t = Table("Web: time to first frame (connection to keyframe, one client at a time, world "
              "running at 10 Hz)",
              ["agents", "entities", "clients", "median ms", "min ms", "max ms", "keyframe KB",
               "keyframe build + encode ms (in process)"])
    for part in (paced, big):
        f = part["first_frame"]
        t.rows.append([_n(part["agents"]), _n(part["entities"]), _n(f["count"]),
                       _n(f["median_ms"]), _n(f["min_ms"]), _n(f["max_ms"]),
                       _kb(f["keyframe_bytes"]),
                       f"{f['keyframe']['build_ms']:.1f} + {f['keyframe']['encode_ms']:.1f}"])
    t.notes.append("From the start of the WebSocket connection (HTTP upgrade) to the keyframe "
                   "received, subscribing as soon as it is open; the server answers between "
                   "ticks, so a tick in progress delays it.")
    tables.append(t)
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
