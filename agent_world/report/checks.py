"""The bounds a lively world keeps, checked on a report.

Each check is evaluated per window, except the population check, which holds at every
census and is reported by runs of consecutive censuses outside its bounds. A check that
cannot be evaluated (too few offers, no census in the window, a figure the log does not
carry) is skipped with the reason, never passed silently.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from agent_world.report.figures import CensusPoint, Report, Window

__all__ = ["CASTS_MIN", "FAILED_SHARE_MAX", "POPULATION_MAX", "POPULATION_MIN",
           "RICHEST_SHARE_MAX", "SPEECH_DISTINCT_MIN", "SPEECH_MIN_LINES", "STATUSES",
           "TRADE_ACCEPT_MAX", "TRADE_ACCEPT_MIN", "TRADE_MIN_OFFERS", "TRADE_MIN_TRADES",
           "UNDONE_SHARE_MAX", "Finding", "evaluate", "violations"]

STATUSES = ("passed", "violated", "skipped")

# Why each bound is where it is:
RICHEST_SHARE_MAX = 0.25  # one agent with more than a quarter of all gold: a runaway economy
TRADE_ACCEPT_MIN = 0.10  # fewer offers taken: offers are noise nobody wants
TRADE_ACCEPT_MAX = 0.80  # more taken: offers are a formality, nobody bargains or refuses
TRADE_MIN_OFFERS = 20  # fewer offers in a window: the acceptance rate says nothing yet
UNDONE_SHARE_MAX = 0.05  # accepted offers that fall through: rare, or agents offer blindly
TRADE_MIN_TRADES = 20  # fewer accepted offers in a window: the undone share says nothing yet
SPEECH_DISTINCT_MIN = 0.30  # fewer distinct lines: agents repeat a handful of phrases
SPEECH_MIN_LINES = 50  # fewer lines in a window: the distinct share says nothing yet
CASTS_MIN = 1  # a personality that never casts in a window has no use for abilities
POPULATION_MIN = 0.5  # of starting_agents: below, the world is dying out
POPULATION_MAX = 1.5  # of starting_agents: above, growth has run away
FAILED_SHARE_MAX = 0.20  # more failures among the actions started: brains choose blindly


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One check on one window (or one run of censuses): passed, violated or skipped."""

    check: str
    ticks: str  # "A..B": the window, or the censuses of a population run
    status: str  # "passed", "violated" or "skipped"
    detail: str  # what was found and the bound (violated), or why it was skipped

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES!r}")

    def line(self) -> str:
        return f"{self.check} (ticks {self.ticks}): {self.detail}"


def _pct(value: float) -> str:
    return f"{value:.0%}" if value >= 0.1 or value == 0 else f"{value:.1%}"


def _ticks(points: list[CensusPoint]) -> str:
    return f"{points[0].tick}" if len(points) == 1 else f"{points[0].tick}..{points[-1].tick}"


class _Checker:
    def __init__(self, window: Window, census: list[CensusPoint]) -> None:
        self.window = window
        self.census = census

    def finding(self, check: str, status: str, detail: str) -> Finding:
        return Finding(check=check, ticks=self.window.span, status=status, detail=detail)

    # -- per census, grouped by window -------------------------------------------------------

    def personalities(self, mix: dict[str, float]) -> Iterator[Finding]:
        if not self.census:
            yield self.finding("personalities_alive", "skipped", "no census in the window")
            return
        for name, weight in sorted(mix.items()):
            if weight <= 0:
                continue
            gone = [c for c in self.census if c.by_personality.get(name, 0) == 0]
            if gone:
                yield self.finding(
                    "personalities_alive", "violated",
                    f"no {name} agent alive (personality_mix weight {weight:g}) at "
                    f"{len(gone)} of {len(self.census)} censuses, first at tick {gone[0].tick}")
            else:
                yield self.finding("personalities_alive", "passed", f"{name} alive throughout")

    def richest(self) -> Iterator[Finding]:
        if not self.census:
            yield self.finding("richest_gold_share", "skipped", "no census in the window")
            return
        over = [c for c in self.census if c.richest_gold_share > RICHEST_SHARE_MAX]
        if over:
            worst = max(over, key=lambda c: c.richest_gold_share)
            yield self.finding(
                "richest_gold_share", "violated",
                f"the richest agent held {_pct(worst.richest_gold_share)} of all gold at tick "
                f"{worst.tick} (more than {_pct(RICHEST_SHARE_MAX)} at {len(over)} of "
                f"{len(self.census)} censuses)")
        else:
            yield self.finding("richest_gold_share", "passed",
                               f"at most {_pct(RICHEST_SHARE_MAX)} of all gold")

    def capacity(self) -> Iterator[Finding]:
        reported = [c for c in self.census if c.over_capacity is not None]
        if not reported:
            yield self.finding("carrying_capacity", "skipped",
                               "the censuses do not report over_capacity")
            return
        if all(c.capacity == 0 for c in reported):
            yield self.finding("carrying_capacity", "skipped",
                               "the world has no carrying capacity (game.carry_capacity 0)")
            return
        over = [c for c in reported if c.over_capacity]
        if over:
            worst = max(over, key=lambda c: c.over_capacity or 0)
            yield self.finding(
                "carrying_capacity", "violated",
                f"{worst.over_capacity} agent(s) carried more than their capacity at tick "
                f"{worst.tick} (at {len(over)} of {len(reported)} censuses; the bound is 0)")
        else:
            yield self.finding("carrying_capacity", "passed", "nobody over capacity")

    # -- per window -------------------------------------------------------------------------

    def trade(self) -> Iterator[Finding]:
        trade = self.window.trade
        if trade.offers < TRADE_MIN_OFFERS or trade.acceptance is None:
            yield self.finding("trade_acceptance", "skipped",
                               f"{trade.offers} offers (fewer than {TRADE_MIN_OFFERS})")
        elif not TRADE_ACCEPT_MIN <= trade.acceptance <= TRADE_ACCEPT_MAX:
            yield self.finding(
                "trade_acceptance", "violated",
                f"{trade.accepted} of {trade.offers} offers accepted ({_pct(trade.acceptance)}); "
                f"the bounds are {_pct(TRADE_ACCEPT_MIN)}..{_pct(TRADE_ACCEPT_MAX)}")
        else:
            yield self.finding("trade_acceptance", "passed",
                               f"{_pct(trade.acceptance)} of offers accepted")
        taken = trade.accepted + trade.undone
        if taken < TRADE_MIN_TRADES or trade.undone_share is None:
            yield self.finding("trades_undone", "skipped",
                               f"{taken} offers accepted (fewer than {TRADE_MIN_TRADES})")
        elif trade.undone_share > UNDONE_SHARE_MAX:
            yield self.finding(
                "trades_undone", "violated",
                f"{trade.undone} of {taken} accepted offers undone "
                f"({_pct(trade.undone_share)}); the bound is {_pct(UNDONE_SHARE_MAX)}")
        else:
            yield self.finding("trades_undone", "passed",
                               f"{_pct(trade.undone_share)} of trades undone")

    def speech(self) -> Iterator[Finding]:
        speech = self.window.speech
        if speech.lines < SPEECH_MIN_LINES or speech.distinct_share is None:
            yield self.finding("speech_distinct", "skipped",
                               f"{speech.lines} lines (fewer than {SPEECH_MIN_LINES})")
        elif speech.distinct_share < SPEECH_DISTINCT_MIN:
            yield self.finding(
                "speech_distinct", "violated",
                f"{speech.distinct} distinct of {speech.lines} lines "
                f"({_pct(speech.distinct_share)}); the bound is at least "
                f"{_pct(SPEECH_DISTINCT_MIN)}")
        else:
            yield self.finding("speech_distinct", "passed",
                               f"{_pct(speech.distinct_share)} of lines distinct")

    def casts(self) -> Iterator[Finding]:
        if not self.census:
            yield self.finding("casts_per_personality", "skipped", "no census in the window")
            return
        present = [p for p in self.census[0].by_personality
                   if all(c.by_personality.get(p, 0) > 0 for c in self.census)]
        cast = self.window.abilities.by_personality
        for name in sorted(present):
            n = cast.get(name, 0)
            if n < CASTS_MIN:
                yield self.finding(
                    "casts_per_personality", "violated",
                    f"{name} agents (alive at every census) cast {n} abilities; the bound is "
                    f"at least {CASTS_MIN}")
            else:
                yield self.finding("casts_per_personality", "passed", f"{name} cast {n}")

    def failures(self) -> Iterator[Finding]:
        failures = self.window.failures
        if failures.share is None or failures.started is None or failures.span is None:
            yield self.finding("failed_actions", "skipped",
                               "actions started unknown (the census counters have no "
                               "actions_started)")
            return
        span = f"ticks {failures.span[0]}..{failures.span[1]}"
        if failures.share > FAILED_SHARE_MAX:
            yield self.finding(
                "failed_actions", "violated",
                f"{failures.failed_in_span} of {failures.started} actions started failed "
                f"({_pct(failures.share)}, {span}); the bound is {_pct(FAILED_SHARE_MAX)}")
        else:
            yield self.finding("failed_actions", "passed",
                               f"{_pct(failures.share)} of actions failed ({span})")


def _side(point: CensusPoint, low: float, high: float) -> str:
    return "below" if point.agents < low else "above" if point.agents > high else ""


def _population(report: Report) -> Iterator[Finding]:
    """Runs of consecutive censuses outside POPULATION_MIN..POPULATION_MAX x starting."""
    starting = report.world.starting_agents
    span = f"{report.first}..{report.last}"
    if not starting:
        yield Finding(check="population", ticks=span, status="skipped",
                      detail="the world started without agents")
        return
    if not report.census:
        yield Finding(check="population", ticks=span, status="skipped",
                      detail="no census in the report")
        return
    low, high = POPULATION_MIN * starting, POPULATION_MAX * starting
    bounds = (f"{low:g}..{high:g} ({_pct(POPULATION_MIN)}..{_pct(POPULATION_MAX)} of "
              f"starting_agents {starting})")
    violated = False
    for side, group in itertools.groupby(report.census, key=lambda c: _side(c, low, high)):
        if not side:
            continue
        run = list(group)
        violated = True
        extreme = min(c.agents for c in run) if side == "below" else max(c.agents for c in run)
        yield Finding(check="population", ticks=_ticks(run), status="violated",
                      detail=f"{extreme} agents at the {'lowest' if side == 'below' else 'highest'}"
                             f" ({len(run)} census(es) {side} the bounds {bounds})")
    if not violated:
        yield Finding(check="population", ticks=span, status="passed",
                      detail=f"within {bounds} at every census")


def evaluate(report: Report) -> tuple[Finding, ...]:
    """Every check on every window of ``report`` (see the constants for the bounds)."""
    findings: list[Finding] = []
    for window in report.windows:
        mine = [c for c in report.census if window.start <= c.tick <= window.end]
        checker = _Checker(window, mine)
        findings.extend(itertools.chain(
            checker.personalities(report.world.personality_mix), checker.richest(),
            checker.capacity(), checker.trade(), checker.speech(), checker.casts(),
            checker.failures()))
    findings.extend(_population(report))
    return tuple(findings)


def violations(findings: tuple[Finding, ...]) -> list[Finding]:
    return [f for f in findings if f.status == "violated"]
