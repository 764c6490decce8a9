"""From a window's counters (``Tally``) to its frozen figures (``Window``): grouping the raw
reasons and causes, rates, and the census-based figures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agent_world.report.figures import (
    Abilities,
    Angel,
    Conflict,
    Failures,
    Pace,
    Population,
    Speech,
    Trade,
    Wealth,
    Window,
)
from agent_world.report.reasons import death_cause, normalise_reason
from agent_world.report.tally import Tally

__all__ = ["TOP_LINES", "Baseline", "summarise"]

TOP_LINES = 5  # most common speech lines shown


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """Where the failed-action share of the next census span starts: a census (or the
    snapshot) with the ``actions_started`` counter and the failures counted up to it."""

    tick: int
    actions_started: int | None
    failed_so_far: int


def ranked(counts: dict[Any, int]) -> dict[str, int]:
    """Counts most common first, ties by name."""
    return {str(k): n for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))}


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _population(t: Tally) -> Population:
    last = t.census[-1] if t.census else None
    agents = [c.agents for c in t.census]
    causes: dict[str, int] = {}
    by_personality: dict[str, int] = {}
    for (cause, personality), n in t.deaths.items():
        group = death_cause(cause)
        causes[group] = causes.get(group, 0) + n
        by_personality[personality] = by_personality.get(personality, 0) + n
    return Population(
        censuses=len(t.census), agents=last.agents if last else None,
        agents_min=min(agents, default=None), agents_max=max(agents, default=None),
        by_personality=dict(last.by_personality) if last else {},
        by_brain=dict(last.by_brain) if last else {},
        arrivals=sum(t.arrivals.values()), arrivals_by_personality=ranked(t.arrivals),
        deaths=sum(causes.values()), deaths_by_cause=ranked(causes),
        deaths_by_personality=ranked(by_personality))


def _largest(values: Iterable[int | float]) -> Any:
    return max(values, default=None)


def _wealth(t: Tally) -> Wealth:
    last = t.census[-1] if t.census else None
    over = [c.over_capacity for c in t.census if c.over_capacity is not None]
    loads = [c.load_max for c in t.census if c.load_max is not None]
    return Wealth(
        gold_gini=last.gold_gini if last else None,
        wealth_gini=last.wealth_gini if last else None,
        richest_gold_share=last.richest_gold_share if last else None,
        richest_gold_share_max=_largest(c.richest_gold_share for c in t.census),
        items_p50=_largest(c.items_p50 for c in t.census),
        items_p99=_largest(c.items_p99 for c in t.census),
        items_max=_largest(c.items_max for c in t.census),
        over_capacity_max=max(over) if over else None,
        load_max=max(loads) if loads else None, capacity=last.capacity if last else None,
        prices={k: (low, high) for k, (low, high) in sorted(t.prices.items())})


def _trade(t: Tally) -> Trade:
    return Trade(offers=t.offers, accepted=t.accepted, declined=t.declined, expired=t.expired,
                 undone=t.undone, acceptance=_ratio(t.accepted, t.offers),
                 undone_share=_ratio(t.undone, t.accepted + t.undone))


def _conflict(t: Tally) -> Conflict:
    return Conflict(thefts=t.thefts, thefts_succeeded=t.thefts_succeeded,
                    thefts_failed=t.thefts - t.thefts_succeeded,
                    thefts_noticed=t.thefts_noticed, hits=t.hits, fighting_pairs=len(t.pairs),
                    kills=t.kills)


def _failure_share(t: Tally, base: Baseline | None) -> tuple[int | None, int | None,
                                                                tuple[int, int] | None]:
    """Actions started and failed from ``base`` to the window's last census, if both carry
    the actions_started counter and it moved (else unknown: None)."""
    if not t.census or base is None:
        return None, None, None
    last = t.census[-1]
    if last.actions_started is None or base.actions_started is None:
        return None, None, None
    started = last.actions_started - base.actions_started
    if started <= 0:
        return None, None, None
    return started, last.failed_so_far - base.failed_so_far, (base.tick + 1, last.tick)


def _failures(t: Tally, base: Baseline | None) -> Failures:
    reasons: dict[str, int] = {}
    actions: dict[str, int] = {}
    for (action, ability, reason), n in t.failures.items():
        group = normalise_reason(reason, ability)
        reasons[group] = reasons.get(group, 0) + n
        actions[action] = actions.get(action, 0) + n
    started, failed, span = _failure_share(t, base)
    share = _ratio(failed, started) if started is not None and failed is not None else None
    return Failures(failed=sum(t.failures.values()), by_reason=ranked(reasons),
                    by_action=ranked(actions), started=started, failed_in_span=failed,
                    share=share, span=span)


def _speech(t: Tally) -> Speech:
    lines = sum(t.speech.values())
    top = sorted(t.speech.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_LINES]
    return Speech(lines=lines, distinct=len(t.speech),
                  distinct_share=_ratio(len(t.speech), lines), top=tuple(top))


def _abilities(t: Tally) -> Abilities:
    by_ability: dict[str, int] = {}
    by_personality: dict[str, int] = {}
    table: dict[str, dict[str, int]] = {}
    for (personality, ability), n in t.casts.items():
        by_ability[ability] = by_ability.get(ability, 0) + n
        by_personality[personality] = by_personality.get(personality, 0) + n
        row = table.setdefault(personality, {})
        row[ability] = row.get(ability, 0) + n
    reasons: dict[str, int] = {}
    failed_abilities: dict[str, int] = {}
    for (action, ability, reason), n in t.failures.items():
        if action != "use_ability":
            continue
        group = normalise_reason(reason, ability)
        reasons[group] = reasons.get(group, 0) + n
        failed_abilities[ability] = failed_abilities.get(ability, 0) + n
    return Abilities(
        casts=sum(by_ability.values()), by_ability=ranked(by_ability),
        by_personality=ranked(by_personality),
        by_personality_ability={p: ranked(table[p]) for p in sorted(table)},
        failures=sum(failed_abilities.values()), failures_by_reason=ranked(reasons),
        failures_by_ability=ranked(failed_abilities), disabled=ranked(t.disabled),
        killed=ranked(t.killed))


def summarise(t: Tally, base: Baseline | None) -> Window:
    """The figures of one tally; ``base`` starts its failed-action share (None: unknown)."""
    return Window(
        start=t.start, end=t.end, population=_population(t), wealth=_wealth(t),
        trade=_trade(t), conflict=_conflict(t), failures=_failures(t, base),
        speech=_speech(t), abilities=_abilities(t),
        angel=Angel(requests=t.requests, accepted=t.angel_accepted, refused=t.angel_refused,
                    expired=t.requests_expired),
        pace=Pace(overruns=t.overruns, skipped_ticks=t.skipped_ticks,
                  lost_s=round(t.lost_ms / 1000, 3)))
