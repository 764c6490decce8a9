"""The report's records: frozen figures for one window of ticks (or the whole span).

Every record turns into plain JSON values with ``to_dict``; counts by group are dicts
ordered most common first (ties by name), so the JSON and the text read the same way.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from agent_world.report.models import ModelFigures

__all__ = ["Abilities", "Angel", "CensusPoint", "Conflict", "Failures", "Pace", "Population",
           "Report",
           "Speech", "Trade", "Wealth", "Window", "WorldInfo", "to_dict"]


def to_dict(record: Any) -> dict[str, Any]:
    """A record as plain JSON values (tuples become lists)."""
    data: dict[str, Any] = dataclasses.asdict(record)
    return data


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldInfo:
    """What the save folder says about the world the log belongs to."""

    name: str
    path: str
    seed: int | None
    starting_agents: int | None  # None: neither the first snapshot nor meta.json says
    personality_mix: dict[str, float]  # weights of new agents' personalities
    first_tick: int  # the first snapshot's tick: where the log begins
    events: str  # persistence.events of the latest run: "all", "none" or "?"


@dataclass(frozen=True, slots=True, kw_only=True)
class CensusPoint:
    """One ``census`` event (every 1,000 ticks), the fields the report uses."""

    tick: int
    agents: int
    by_personality: dict[str, int]
    by_brain: dict[str, int]
    gold_gini: float
    wealth_gini: float
    richest_gold_share: float
    items_p50: int
    items_p99: int
    items_max: int
    over_capacity: int | None  # agents carrying more than they may (None: not reported)
    load_max: float | None  # the heaviest load an agent carried (None: not reported)
    capacity: float | None  # game.carry_capacity (0: no limit; None: not reported)
    prices: dict[str, float]
    actions_started: int | None  # the cumulative counter (None: not reported)
    failed_so_far: int  # failed actions the report counted from its first tick to here


@dataclass(frozen=True, slots=True, kw_only=True)
class Population:
    censuses: int  # census events in the window
    agents: int | None  # at the window's last census (None: no census in the window)
    agents_min: int | None
    agents_max: int | None
    by_personality: dict[str, int]  # at the last census
    by_brain: dict[str, int]
    arrivals: int  # spawn events
    arrivals_by_personality: dict[str, int]
    deaths: int
    deaths_by_cause: dict[str, int]  # starvation, wounds, killed, struck down by the operator
    deaths_by_personality: dict[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class Wealth:
    gold_gini: float | None  # at the last census
    wealth_gini: float | None
    richest_gold_share: float | None  # the richest agent's share of all gold, last census
    richest_gold_share_max: float | None  # the largest over the window's censuses
    items_p50: int | None  # items carried per agent: the largest over the censuses
    items_p99: int | None
    items_max: int | None
    over_capacity_max: int | None  # None: the censuses do not report it
    load_max: float | None  # the heaviest load carried at a census (None: not reported)
    capacity: float | None  # the carrying capacity at the last census (0: no limit)
    prices: dict[str, tuple[float, float]]  # item: (lowest, highest) of census and price events


@dataclass(frozen=True, slots=True, kw_only=True)
class Trade:
    offers: int
    accepted: int  # trade events
    declined: int
    expired: int
    undone: int  # trade_undone events: offers accepted that could not go through
    acceptance: float | None  # accepted / offers (None: no offers)
    undone_share: float | None  # undone / (accepted + undone) (None: neither)


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflict:
    thefts: int  # attempts: theft events
    thefts_succeeded: int
    thefts_failed: int
    thefts_noticed: int
    hits: int  # attack events
    fighting_pairs: int  # distinct (attacker, target) pairs
    kills: int  # deaths credited to a killer


@dataclass(frozen=True, slots=True, kw_only=True)
class Failures:
    failed: int  # action_failed events
    by_reason: dict[str, int]  # normalised reasons
    by_action: dict[str, int]
    started: int | None  # actions started over ``span`` (the actions_started counter)
    failed_in_span: int | None  # failed actions over the same span
    share: float | None  # failed_in_span / started (None: unknown)
    span: tuple[int, int] | None  # the census-to-census ticks the share covers


@dataclass(frozen=True, slots=True, kw_only=True)
class Speech:
    lines: int
    distinct: int  # distinct texts
    distinct_share: float | None
    top: tuple[tuple[str, int], ...]  # the most common lines with their counts


@dataclass(frozen=True, slots=True, kw_only=True)
class Abilities:
    casts: int
    by_ability: dict[str, int]
    by_personality: dict[str, int]  # the caster's personality
    by_personality_ability: dict[str, dict[str, int]]
    failures: int  # failed use_ability actions
    failures_by_reason: dict[str, int]
    failures_by_ability: dict[str, int]
    disabled: dict[str, int]  # ability_disabled events by ability
    killed: dict[str, int]  # ability_killed events (calls stopped from outside) by ability


@dataclass(frozen=True, slots=True, kw_only=True)
class Angel:
    requests: int
    accepted: int
    refused: int
    expired: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Pace:
    """How the machine kept the world's clock (events the tick loop adds, not the world's):
    ticks over their budget, and ticks a paced run let go of when it fell behind, with the
    time they stood for."""

    overruns: int
    skipped_ticks: int
    lost_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """The figures of ticks ``start``..``end`` (both included)."""

    start: int
    end: int
    population: Population
    wealth: Wealth
    trade: Trade
    conflict: Conflict
    failures: Failures
    speech: Speech
    abilities: Abilities
    angel: Angel
    pace: Pace

    @property
    def span(self) -> str:
        return f"{self.start}..{self.end}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    world: WorldInfo
    first: int  # the first and last tick reported
    last: int
    window: int  # ticks per window
    lines: int  # log lines read (all kinds, including those before ``first``)
    windows: tuple[Window, ...]
    total: Window
    census: tuple[CensusPoint, ...]
    notes: tuple[str, ...]
    # The LLM's decisions by model profile over the whole range (report/models.py).
    models: tuple[ModelFigures, ...] = ()
