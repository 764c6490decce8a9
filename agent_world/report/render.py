"""Writing a report: a text view for people (lines under 100 characters) and one JSON
document for tools."""

from __future__ import annotations

import textwrap
from typing import Any

import orjson

from agent_world.report.checks import Finding
from agent_world.report.figures import Report, Window, to_dict
from agent_world.report.models import ModelFigures

__all__ = ["WIDTH", "render_json", "render_text"]

WIDTH = 99  # longest text line
TOP_GROUPS = 8  # groups shown per detail (reasons, causes ...); the JSON has them all
_INDENT = " " * 14


# -- small formatters ----------------------------------------------------------------------


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _pct(value: float | None, unknown: str = "-") -> str:
    if value is None:
        return unknown
    return f"{value:.0%}" if value >= 0.1 or value == 0 else f"{value:.1%}"


def _dec(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _groups(counts: dict[str, int], limit: int = TOP_GROUPS) -> str:
    shown = ", ".join(f"{k} {n:,}" for k, n in list(counts.items())[:limit])
    more = len(counts) - limit
    return shown + (f" and {more} more" if more > 0 else "") if counts else "none"


def _wrap(label: str, text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=f"  {label:<11} ",
                         subsequent_indent=_INDENT, break_on_hyphens=False) or [f"  {label}"]


def _listing(counts: dict[str, int], limit: int = TOP_GROUPS) -> list[str]:
    """One indented line per group: the count, then the group (cut to fit)."""
    lines = []
    for text, n in list(counts.items())[:limit]:
        line = f"{_INDENT}{n:>7,}  {text}"
        lines.append(line if len(line) <= WIDTH else line[:WIDTH - 3] + "...")
    if len(counts) > limit:
        lines.append(f"{_INDENT}{'':>7}  ... and {len(counts) - limit} more")
    return lines


def _table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in (headers, *rows)) for i in range(len(headers))]
    return ["  ".join(cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i])
                      for i, cell in enumerate(row)).rstrip() for row in (headers, *rows)]


# -- the tables ------------------------------------------------------------------------------


_PEOPLE = ("ticks", "agents", "min", "max", "arrived", "died", "kills", "gini", "wgini",
           "rich%", "carry")
_ACTIVITY = ("ticks", "offers", "acc%", "undone", "thefts", "hits", "failed", "fail%", "said",
             "dist%", "casts")


def _people_row(label: str, w: Window) -> tuple[str, ...]:
    p, wealth = w.population, w.wealth
    return (label, _num(p.agents), _num(p.agents_min), _num(p.agents_max), _num(p.arrivals),
            _num(p.deaths), _num(w.conflict.kills), _dec(wealth.gold_gini),
            _dec(wealth.wealth_gini), _pct(wealth.richest_gold_share), _num(wealth.items_max))


def _activity_row(label: str, w: Window) -> tuple[str, ...]:
    t, f, s = w.trade, w.failures, w.speech
    return (label, _num(t.offers), _pct(t.acceptance), _num(t.undone), _num(w.conflict.thefts),
            _num(w.conflict.hits), _num(f.failed), _pct(f.share, "?"), _num(s.lines),
            _pct(s.distinct_share), _num(w.abilities.casts))


def _tables(report: Report) -> list[str]:
    people = [_people_row(w.span, w) for w in report.windows]
    activity = [_activity_row(w.span, w) for w in report.windows]
    people.append(_people_row("total", report.total))
    activity.append(_activity_row("total", report.total))
    return [
        "people and wealth (agents, gini, wgini, rich%: at the last census of each window)",
        *_table(_PEOPLE, people),
        "  gini: gold Gini; wgini: wealth Gini; rich%: the richest agent's share of all gold;",
        "  carry: the most items one agent carried at a census",
        "",
        "activity",
        *_table(_ACTIVITY, activity),
        "  acc%: offers accepted; fail%: failed actions among those started (?: not logged);",
        "  dist%: distinct lines among those said",
    ]


# -- the sections ----------------------------------------------------------------------------


def _population_lines(w: Window) -> list[str]:
    p = w.population
    census = ("no census in the window" if p.agents is None else
              f"{p.agents:,} agents at the last census ({_groups(p.by_personality)}; "
              f"{_groups(p.by_brain)}), {p.agents_min}..{p.agents_max} over "
              f"{p.censuses} censuses")
    return [*_wrap("population", census),
            *_wrap("arrivals", f"{p.arrivals:,}: {_groups(p.arrivals_by_personality)}"),
            *_wrap("deaths", f"{p.deaths:,} by cause: {_groups(p.deaths_by_cause)}; by "
                             f"personality: {_groups(p.deaths_by_personality)}")]


def _wealth_lines(w: Window) -> list[str]:
    m = w.wealth
    over = ("" if m.over_capacity_max is None
            else f"; over capacity at most {m.over_capacity_max:,}")
    if m.load_max is not None:
        over += f"; heaviest load {m.load_max:g}" + (
            f" of {m.capacity:g}" if m.capacity else " (no capacity)")
    text = (f"gold Gini {_dec(m.gold_gini)}, wealth Gini {_dec(m.wealth_gini)}; the richest "
            f"agent held {_pct(m.richest_gold_share)} of all gold (at most "
            f"{_pct(m.richest_gold_share_max)}); items carried p50 {_num(m.items_p50)}, p99 "
            f"{_num(m.items_p99)}, max {_num(m.items_max)}{over}")
    prices = ", ".join(f"{k} {low:g}" + (f"-{high:g}" if high != low else "")
                       for k, (low, high) in m.prices.items()) or "none"
    return [*_wrap("wealth", text), *_wrap("prices", prices)]


def _activity_lines(w: Window) -> list[str]:
    t, c, f = w.trade, w.conflict, w.failures
    trade = (f"{t.offers:,} offers: {t.accepted:,} accepted ({_pct(t.acceptance)}), "
             f"{t.declined:,} declined, {t.expired:,} expired, {t.undone:,} undone")
    conflict = (f"{c.thefts:,} thefts ({c.thefts_succeeded:,} succeeded, {c.thefts_failed:,} "
                f"failed, {c.thefts_noticed:,} noticed); {c.hits:,} hits among "
                f"{c.fighting_pairs:,} attacker-target pairs; {c.kills:,} kills")
    share = ("share of actions started unknown (no actions_started counter)"
             if f.share is None or f.span is None else
             f"{_pct(f.share)} of {f.started:,} actions started in ticks "
             f"{f.span[0]}..{f.span[1]}")
    failed = f"{f.failed:,} actions; {share}; by action: {_groups(f.by_action)}"
    return [*_wrap("trade", trade), *_wrap("conflict", conflict), *_wrap("failed", failed),
            *_listing(f.by_reason)]


def _speech_lines(w: Window) -> list[str]:
    s = w.speech
    lines = _wrap("speech", f"{s.lines:,} lines, {s.distinct:,} distinct "
                            f"({_pct(s.distinct_share)})" + ("; most common:" if s.top else ""))
    return lines + _listing({f'"{text}"': n for text, n in s.top})


def _ability_lines(w: Window) -> list[str]:
    a, angel = w.abilities, w.angel
    lines = _wrap("abilities", f"{a.casts:,} casts: {_groups(a.by_ability)}")
    for personality, casts in a.by_personality_ability.items():
        lines += _wrap("", f"{personality} {a.by_personality[personality]:,}: "
                           f"{_groups(casts)}")
    if a.failures:
        lines += _wrap("", f"{a.failures:,} failed casts: {_groups(a.failures_by_ability)}")
        lines += _listing(a.failures_by_reason)
    if a.disabled or a.killed:
        lines += _wrap("", f"disabled: {_groups(a.disabled)}; calls stopped by a backstop "
                           f"(outside events): {_groups(a.killed)}")
    lines += _wrap("angel", f"{angel.requests:,} requests: {angel.accepted:,} accepted, "
                            f"{angel.refused:,} refused, {angel.expired:,} expired")
    return lines


def _pace_lines(w: Window) -> list[str]:
    """The machine's clock, when it slipped (a world that kept pace says nothing)."""
    p = w.pace
    if not p.overruns and not p.skipped_ticks:
        return []
    return _wrap("pace", f"{p.overruns:,} ticks over their budget; {p.skipped_ticks:,} ticks "
                         f"skipped, {p.lost_s:,.1f} s of the world's time lost")


def _section(title: str, w: Window) -> list[str]:
    return ["", title, *_population_lines(w), *_wealth_lines(w), *_activity_lines(w),
            *_speech_lines(w), *_ability_lines(w), *_pace_lines(w)]


def _check_lines(findings: tuple[Finding, ...]) -> list[str]:
    bad = [f for f in findings if f.status == "violated"]
    skipped = sum(1 for f in findings if f.status == "skipped")
    head = (f"checks: {len(bad)} violated, {len(findings) - len(bad) - skipped} passed, "
            f"{skipped} skipped (--check lists the violated ones and sets the exit status)")
    lines = ["", *textwrap.wrap(head, WIDTH)]
    for f in bad:
        lines += textwrap.wrap(f.line(), WIDTH, initial_indent="  ", subsequent_indent="    ")
    return lines


def render_text(report: Report, findings: tuple[Finding, ...]) -> str:
    info = report.world
    seed = "?" if info.seed is None else info.seed
    start = "?" if info.starting_agents is None else f"{info.starting_agents:,}"
    head = [f"liveliness of world '{info.name}': seed {seed}, {start} starting agents",
            f"save folder {info.path}",
            f"ticks {report.first}..{report.last} in windows of {report.window:,} ticks; "
            f"{report.lines:,} log lines read", ""]
    body = _tables(report)
    for w in report.windows:
        body += _section(f"ticks {w.span}", w)
    if len(report.windows) > 1:
        body += _section(f"total, ticks {report.first}..{report.last}", report.total)
    body += _model_lines(report.models)
    return "\n".join(head + body + _check_lines(findings)) + "\n"


def _model_lines(models: tuple[ModelFigures, ...]) -> list[str]:
    """A table of the LLM's decisions by model profile (none: no LLM agent decided)."""
    if not models:
        return []
    rows: list[tuple[str, ...]] = [
        (m.profile, ", ".join(m.models) or "-", _num(m.requests), _num(m.decisions),
             _num(m.fallbacks), _num(m.invalid),
             f"{m.latency_p50_ms / 1000:.2f}/{m.latency_p95_ms / 1000:.2f}",
             _num(m.prompt_tokens), _num(m.cached_tokens), _num(m.answer_tokens),
             f"${m.cost:.4f}") for m in models]
    return ["", "LLM agents' requests by model profile, over the reported ticks",
            *_table(("profile", "model", "requests", "decisions", "fallbacks", "invalid",
                     "latency s p50/p95", "prompt tok", "cached tok", "answer tok", "cost"),
                    rows)]


def document(report: Report, findings: tuple[Finding, ...]) -> dict[str, Any]:
    """The whole report as plain JSON values."""
    return {
        "world": to_dict(report.world),
        "range": {"first": report.first, "last": report.last, "window": report.window,
                  "lines_read": report.lines},
        "windows": [to_dict(w) for w in report.windows],
        "total": to_dict(report.total),
        "census": [to_dict(c) for c in report.census],
        "models": [to_dict(m) for m in report.models],
        "notes": list(report.notes),
        "checks": [to_dict(f) for f in findings],
    }


def render_json(report: Report, findings: tuple[Finding, ...]) -> str:
    return orjson.dumps(document(report, findings), option=orjson.OPT_INDENT_2).decode() + "\n"
