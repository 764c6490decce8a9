"""Per-agent metrics at the console: ``/top [METRIC] [N]`` ranks agents by one of them, and
``/metrics [AGENT]`` shows one agent's figures, or every brain's totals. The figures are the
world's own (``World.metrics``: counted in ticks, saved and replayed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_world.commands.lookup import resolve
from agent_world.commands.parsing import (
    CommandError,
    EntityRef,
    did_you_mean,
    parse_entity_ref,
    parse_int,
)
from agent_world.commands.views import format_table
from agent_world.core.metrics import METRICS

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["METRICS_HELP", "TOP_HELP", "MetricsArgs", "TopArgs", "metrics", "parse_metrics",
           "parse_top", "top"]

TOP_HELP = ("METRIC: one of " + ", ".join(METRICS) + "; without one, /top lists them.",
            "N: how many agents (10 by default). Dead agents keep their figures (marked †).")
METRICS_HELP = ("/metrics AGENT: every figure of one agent (id or name, dead ones too while "
                "their figures are kept).",
                "/metrics: each brain's totals over its agents (latency over all their "
                "decisions).")
BRAIN_COLUMNS = ("agents", "food_gathered", "eaten", "kills", "deaths", "trades_done",
                 "gold_earned", "decisions", "decision_faults", "latency_p95", "tokens",
                 "cost")
TEAM_COLUMNS = ("captures", "team_messages", "kills", "deaths", "damage_dealt",
                "damage_taken", "crafted_value", "food_gathered")


@dataclass(frozen=True, slots=True)
class TopArgs:
    metric: str | None = None
    n: int = 10


@dataclass(frozen=True, slots=True)
class MetricsArgs:
    agent: EntityRef | None = None


def _metric(word: str) -> str:
    name = word.lower()
    if name not in METRICS:
        # A short word ('gold', 'damage') is part of the names it means, which difflib
        # finds too far away to suggest: name those.
        within = [metric for metric in METRICS if name and name in metric]
        hint = (f"; the metrics with {name!r:.40} in their name: {', '.join(within)}"
                if within else did_you_mean(name, METRICS))
        raise CommandError(f"unknown metric {word!r:.40} (/top lists them){hint}")
    return name


def parse_top(argv: Sequence[str]) -> TopArgs:
    if not argv:
        return TopArgs()
    if len(argv) > 2:
        raise CommandError("expected METRIC and at most N")
    n = parse_int(argv[1], "N", low=1, high=1000) if len(argv) == 2 else 10
    return TopArgs(_metric(argv[0]), n)


def parse_metrics(argv: Sequence[str]) -> MetricsArgs:
    if len(argv) > 1:
        raise CommandError("expected at most one AGENT")
    return MetricsArgs(parse_entity_ref(argv[0]) if argv else None)


def _value(value: float) -> str:
    return f"{value:,.4f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"


def _off(console: Console) -> None:
    if not console.world.metrics.enabled:
        raise CommandError("this world counts no metrics (game.agent_metrics is off: it was "
                           "saved before they existed)")


async def top(console: Console, args: TopArgs) -> list[str]:
    _off(console)
    if args.metric is None:
        return ["metrics (/top METRIC [N]):",
                *(f"  {name:<19} {what}" for name, what in METRICS.items())]
    world = console.world
    book = world.metrics
    ranked = [(eid, value) for eid, value in book.top(args.metric, args.n) if value]
    if not ranked:
        return [f"no agent has any {args.metric} yet (tick {world.tick})"]
    rows = []
    for rank, (eid, value) in enumerate(ranked, 1):
        row = book.rows[eid]
        mark = "" if world.alive(eid) else " †"
        rows.append([str(rank), f"{row['name']}#{eid}{mark}", str(row.get("brain", "?")),
                     _value(value)])
    return [f"top {len(rows)} by {args.metric} ({METRICS[args.metric]}), tick {world.tick}:",
            *format_table(["#", "agent", "brain", args.metric], rows)]


async def metrics(console: Console, args: MetricsArgs) -> list[str]:
    _off(console)
    world = console.world
    book = world.metrics
    if args.agent is None:
        groups = book.by("brain")
        if not groups:
            return [f"no agent has figures yet (tick {world.tick})"]
        rows = [[brain, *(_value(g[col]) for col in BRAIN_COLUMNS)]
                for brain, g in groups.items()]
        lines = [f"metrics by brain, tick {world.tick} (sums over agents, alive and dead):",
                 *format_table(["brain", *BRAIN_COLUMNS], rows)]
        teams = {name: g for name, g in book.by("team").items() if name != "?"}
        if teams:
            held = world.teams.held
            rows = [[team, str(held.get(team, 0)),
                     *(_value(g[col]) for col in (*BRAIN_COLUMNS[:1], *TEAM_COLUMNS))]
                    for team, g in teams.items()]
            lines += ["by team (held: capture point-ticks):",
                      *format_table(["team", "held", BRAIN_COLUMNS[0], *TEAM_COLUMNS], rows)]
        return lines
    ref = args.agent
    # A dead agent's figures are kept after it is gone: look it up by id among them first.
    eid = ref.eid if ref.eid is not None and ref.eid in book.rows else resolve(
        world, ref, agent=True)
    if eid not in book.rows:
        return [f"{world.label(eid)} has no figures yet"]
    row = book.rows[eid]
    figures = book.of(eid)
    state = "" if world.alive(eid) else " (dead)"
    return [f"{row['name']}#{eid}{state}, brain {row.get('brain', '?')}, tick {world.tick}:",
            *(f"  {name:<19} {_value(figures[name]):>10}  {METRICS[name]}"
              for name in METRICS)]
