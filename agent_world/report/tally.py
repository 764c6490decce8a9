"""Counting one window's events: the hot path of the report.

A ``Tally`` holds plain counters for one span of ticks. Each event type the report reads has
one small handler in ``HANDLERS``; every other type (pickups, meals, state hashes ...) costs
one dict lookup. Particulars are kept raw here (reasons, causes) and grouped once per
window in ``summary.py``, so a line costs as little as it can.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_world.core import events as ev
from agent_world.report.figures import CensusPoint

__all__ = ["HANDLERS", "UNKNOWN", "Tally", "census_point", "merge"]

UNKNOWN = "unknown"  # the personality of an agent the report has not seen arrive
_USE_ABILITY = "use_ability("
_ABILITY_ARG = len("use_ability(ability=")

Record = dict[str, Any]


def _add(counts: dict[Any, int], key: Any, n: int = 1) -> None:
    counts[key] = counts.get(key, 0) + n


class Tally:
    """Counters for ticks ``start``..``end``. ``personality_of`` (agent id -> personality)
    is shared by every window and grows with each spawn."""

    def __init__(self, start: int, end: int, personality_of: dict[int, str]) -> None:
        self.start = start
        self.end = end
        self.personality_of = personality_of
        self.census: list[CensusPoint] = []
        self.failed_so_far = 0  # failed actions since the report's first tick (shared count)
        self.arrivals: dict[str, int] = {}
        self.deaths: dict[tuple[str, str], int] = {}  # (raw cause, personality)
        self.kills = 0
        self.offers = self.accepted = self.declined = self.expired = self.undone = 0
        self.thefts = self.thefts_succeeded = self.thefts_noticed = 0
        self.hits = 0
        self.pairs: set[tuple[Any, Any]] = set()
        # (action name, the ability for use_ability else "", raw reason)
        self.failures: dict[tuple[str, str, str], int] = {}
        self.speech: dict[str, int] = {}
        self.casts: dict[tuple[str, str], int] = {}  # (personality, ability)
        self.disabled: dict[str, int] = {}
        self.killed: dict[str, int] = {}
        self.requests = self.angel_accepted = self.angel_refused = self.requests_expired = 0
        self.prices: dict[str, list[float]] = {}  # item: [lowest, highest]
        self.overruns = self.skipped_ticks = 0
        self.lost_ms = 0.0

    def price(self, item: str, value: float) -> None:
        seen = self.prices.get(item)
        if seen is None:
            self.prices[item] = [value, value]
        elif value < seen[0]:
            seen[0] = value
        elif value > seen[1]:
            seen[1] = value


# -- handlers, one per event type -----------------------------------------------------------


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def census_point(e: Record, failed_so_far: int) -> CensusPoint:
    """The figures of a census event the report uses."""
    carried = e.get("items_carried") or {}
    counters = e.get("counters")
    over = e.get("over_capacity")
    load = e.get("load") or {}
    # A counter is made by its first count: absent from the counters means none yet (a world
    # that never counts it shows none at every census, and its share stays unknown).
    started = counters.get("actions_started", 0) if isinstance(counters, dict) else None
    return CensusPoint(
        tick=e["tick"], agents=int(e["agents"]),
        by_personality=dict(e.get("by_personality") or {}),
        by_brain=dict(e.get("by_brain") or {}),
        gold_gini=float(e.get("gold_gini", 0.0)), wealth_gini=float(e.get("wealth_gini", 0.0)),
        richest_gold_share=float(e.get("richest_gold_share", 0.0)),
        items_p50=int(carried.get("p50", 0)), items_p99=int(carried.get("p99", 0)),
        items_max=int(carried.get("max", 0)),
        over_capacity=int(over) if isinstance(over, int) else None,
        load_max=_number(load.get("max")), capacity=_number(load.get("capacity")),
        prices={k: float(v) for k, v in (e.get("prices") or {}).items()},
        actions_started=started if isinstance(started, int) else None,
        failed_so_far=failed_so_far)


def _census(t: Tally, e: Record) -> None:
    point = census_point(e, t.failed_so_far)
    t.census.append(point)
    for item, value in point.prices.items():
        t.price(item, value)


def _spawn(t: Tally, e: Record) -> None:
    personality = str(e.get("personality", UNKNOWN))
    t.personality_of[e["agent"]] = personality
    _add(t.arrivals, personality)


def _death(t: Tally, e: Record) -> None:
    _add(t.deaths, (str(e.get("cause", "")), str(e.get("personality", UNKNOWN))))
    if e.get("killer"):
        t.kills += 1


def _trade_offer(t: Tally, e: Record) -> None:
    t.offers += 1


def _trade(t: Tally, e: Record) -> None:
    t.accepted += 1


def _trade_declined(t: Tally, e: Record) -> None:
    t.declined += 1


def _trade_expired(t: Tally, e: Record) -> None:
    t.expired += 1


def _trade_undone(t: Tally, e: Record) -> None:
    t.undone += 1


def _theft(t: Tally, e: Record) -> None:
    t.thefts += 1
    if e.get("success", True):  # a pickup of someone's goods is a theft without the field
        t.thefts_succeeded += 1
    if e.get("noticed"):
        t.thefts_noticed += 1


def _attack(t: Tally, e: Record) -> None:
    t.hits += 1
    t.pairs.add((e.get("agent"), e.get("target")))


def _action_failed(t: Tally, e: Record) -> None:
    action = str(e.get("action", ""))
    reason = str(e.get("reason", ""))
    t.failed_so_far += 1
    if action.startswith(_USE_ABILITY):
        ability = action[_ABILITY_ARG:].split(",", 1)[0].rstrip(")")
        _add(t.failures, ("use_ability", ability, reason))
    else:
        _add(t.failures, (action.split("(", 1)[0], "", reason))


def _say(t: Tally, e: Record) -> None:
    text = e["text"]
    t.speech[text] = t.speech.get(text, 0) + 1


def _ability(t: Tally, e: Record) -> None:
    _add(t.casts, (t.personality_of.get(e["agent"], UNKNOWN), str(e.get("ability"))))


def _ability_disabled(t: Tally, e: Record) -> None:
    _add(t.disabled, str(e.get("ability")))


def _ability_killed(t: Tally, e: Record) -> None:
    _add(t.killed, str(e.get("ability")))


def _ability_requested(t: Tally, e: Record) -> None:
    t.requests += 1


def _ability_accepted(t: Tally, e: Record) -> None:
    t.angel_accepted += 1


def _ability_refused(t: Tally, e: Record) -> None:
    t.angel_refused += 1


def _ability_request_expired(t: Tally, e: Record) -> None:
    t.requests_expired += 1


def _price(t: Tally, e: Record) -> None:
    t.price(str(e["item"]), float(e["price"]))


def _overrun(t: Tally, e: Record) -> None:
    t.overruns += 1


def _skipped(t: Tally, e: Record) -> None:
    t.skipped_ticks += int(e.get("ticks", 0))
    t.lost_ms += float(e.get("ms", 0.0))


HANDLERS: dict[str, Callable[[Tally, Record], None]] = {
    ev.CENSUS: _census,
    ev.SPAWN: _spawn,
    ev.DEATH: _death,
    ev.TRADE_OFFER: _trade_offer,
    ev.TRADE: _trade,
    ev.TRADE_DECLINED: _trade_declined,
    ev.TRADE_EXPIRED: _trade_expired,
    ev.TRADE_UNDONE: _trade_undone,
    ev.THEFT: _theft,
    ev.ATTACK: _attack,
    ev.ACTION_FAILED: _action_failed,
    ev.SAY: _say,
    ev.ABILITY: _ability,
    ev.ABILITY_DISABLED: _ability_disabled,
    ev.ABILITY_KILLED: _ability_killed,
    ev.ABILITY_REQUESTED: _ability_requested,
    ev.ABILITY_ACCEPTED: _ability_accepted,
    ev.ABILITY_REFUSED: _ability_refused,
    ev.ABILITY_REQUEST_EXPIRED: _ability_request_expired,
    ev.PRICE: _price,
    ev.OVERRUN: _overrun,
    ev.SKIPPED: _skipped,
}


# -- the whole span ---------------------------------------------------------------------------


def _sum(into: dict[Any, int], counts: dict[Any, int]) -> None:
    for key, n in counts.items():
        into[key] = into.get(key, 0) + n


def merge(tallies: list[Tally], personality_of: dict[int, str]) -> Tally:
    """One tally for the ticks of all ``tallies`` (consecutive windows, in order)."""
    start = tallies[0].start if tallies else 0
    end = tallies[-1].end if tallies else -1
    total = Tally(start, end, personality_of)
    for t in tallies:
        total.census.extend(t.census)
        for name in ("kills", "offers", "accepted", "declined", "expired", "undone", "thefts",
                     "thefts_succeeded", "thefts_noticed", "hits", "requests",
                     "angel_accepted", "angel_refused", "requests_expired", "overruns",
                     "skipped_ticks", "lost_ms"):
            setattr(total, name, getattr(total, name) + getattr(t, name))
        for name in ("arrivals", "deaths", "failures", "speech", "casts",
                     "disabled", "killed"):
            _sum(getattr(total, name), getattr(t, name))
        total.pairs |= t.pairs
        for item, (low, high) in t.prices.items():
            total.price(item, low)
            total.price(item, high)
    total.failed_so_far = tallies[-1].failed_so_far if tallies else 0
    return total
