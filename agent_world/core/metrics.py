"""Per-agent metrics: what each agent gathered, ate, walked, fought, traded and decided.

They are world state (``World.metrics``): counted during the tick from the tick's events
and inputs, saved in snapshots and hashed, so a replay, a resume or a fork has exactly the
figures the run had. Decisions come from the ``plan`` inputs that LLMs, users' brains and
remote clients submit (with their latency and tokens), faults from ``decision_fault``
inputs. A world saved before metrics existed runs without them (``game.agent_metrics``
takes its legacy value, off), so it hashes as it did.

Dead agents keep their figures, for scores over a whole episode; past ``MAX_DEAD`` the
oldest deaths' are dropped, so a world left on for days stays bounded.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core.items import ITEMS

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["LATENCY_BUCKETS_MS", "MAX_DEAD", "METRICS", "THINKERS", "MetricsBook",
           "percentile_of"]

METRICS: dict[str, str] = {
    "food_gathered": "food picked up or harvested (units)",
    "materials_gathered": "other goods picked up or harvested (units)",
    "eaten": "meals eaten",
    "walked": "tiles walked",
    "damage_dealt": "damage done to others",
    "damage_taken": "damage suffered",
    "kills": "agents it killed",
    "deaths": "times it died (0 or 1)",
    "trades_offered": "trade offers it made",
    "trades_done": "trades it took part in (either side)",
    "thefts": "thefts it committed",
    "robbed": "thefts it suffered",
    "gold_earned": "gold received (trades, pickups, thefts, gifts)",
    "gold_spent": "gold given (trades, thefts suffered, gifts)",
    "hazard_damage": "damage suffered on hazard tiles (also in damage_taken)",
    "crafted": "items it crafted",
    "crafted_value": "base value of the items it crafted (gold)",
    "captures": "capture points its team took with it there",
    "team_messages": "team_say messages it sent",
    "casts": "abilities cast to effect",
    "casts_failed": "ability casts that failed",
    "decisions": "decisions taken by its brain (LLM, user or remote; built-in not counted)",
    "decision_faults": "decisions its brain failed to make (invalid, late, error)",
    "tokens": "LLM tokens its decisions used",
    "cost": "LLM cost of its decisions (US dollars)",
    "latency_p50": "median decision latency (ms, from buckets)",
    "latency_p95": "95th percentile decision latency (ms, from buckets)",
}
"""Every metric by name, with what it counts."""
COUNTED = tuple(name for name in METRICS if not name.startswith("latency_"))
THINKERS = frozenset({"llm", "brain", "remote"})  # plan sources that are decisions
LATENCY_BUCKETS_MS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000)
MAX_DEAD = 1000
FOOD = frozenset(kind for kind, spec in ITEMS.items() if spec.category == "food")


def percentile_of(histogram: list[int], q: float) -> float:
    """The ``q`` quantile of a latency histogram: the upper bound of the bucket it falls in
    (the last bucket's lower bound for values past all of them)."""
    total = sum(histogram)
    if not total:
        return 0.0
    rank, seen = q * total, 0
    for i, n in enumerate(histogram):
        seen += n
        if seen >= rank:
            return float(LATENCY_BUCKETS_MS[min(i, len(LATENCY_BUCKETS_MS) - 1)])
    return float(LATENCY_BUCKETS_MS[-1])


class MetricsBook:
    """Every agent's figures: ``rows[eid]`` holds its name, brain, birth tick (and death
    tick, once dead) and the nonzero counts."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.rows: dict[int, dict[str, Any]] = {}
        self.latency: dict[int, list[int]] = {}
        self.dead: list[int] = []  # in order of death, for the bound

    # -- counting (during the tick) -------------------------------------------------------

    def _row(self, world: World, eid: int) -> dict[str, Any] | None:
        row = self.rows.get(eid)
        if row is None:
            agent = world.store.try_get(eid, c.Agent)
            if agent is None:
                return None
            row = self.rows[eid] = {"name": agent.name, "brain": agent.brain,
                                    "born": agent.born}
            team = world.store.try_get(eid, c.Team)
            if team is not None:
                row["team"] = team.name
        return row

    def add(self, world: World, eid: Any, metric: str, amount: float = 1) -> None:
        if not isinstance(eid, int) or isinstance(eid, bool) or not amount:
            return
        row = self._row(world, eid)
        if row is not None:
            row[metric] = row.get(metric, 0) + amount

    def walked(self, world: World, eid: int) -> None:
        row = self.rows.get(eid)
        if row is None:
            row = self._row(world, eid)
            if row is None:
                return
        row["walked"] = row.get("walked", 0) + 1

    def on_event(self, world: World, event: Mapping[str, Any]) -> None:
        """Count an event as it is emitted (its agents are all still in the world)."""
        handler = _EVENTS.get(str(event.get("type")))
        if handler is not None:
            handler(self, world, event)

    def on_plan(self, world: World, data: Mapping[str, Any]) -> None:
        """A decision applied (a ``plan`` input from a thinker)."""
        if data.get("source") not in THINKERS:
            return
        eid = data.get("agent")
        self.add(world, eid, "decisions")
        usage = data.get("usage")
        if isinstance(usage, Mapping):
            self.add(world, eid, "tokens", _number(usage.get("prompt_tokens"))
                     + _number(usage.get("completion_tokens")))
            self.add(world, eid, "cost", _number(usage.get("cost")))
        latency = _number(data.get("latency_ms"))
        if isinstance(eid, int) and eid in self.rows:
            hist = self.latency.setdefault(eid, [0] * (len(LATENCY_BUCKETS_MS) + 1))
            hist[bisect.bisect_left(LATENCY_BUCKETS_MS, latency)] += 1

    def died(self, eid: int) -> None:
        self.dead.append(eid)
        while len(self.dead) > MAX_DEAD:
            gone = self.dead.pop(0)
            self.rows.pop(gone, None)
            self.latency.pop(gone, None)

    # -- reading -----------------------------------------------------------------------------

    def of(self, eid: int) -> dict[str, float]:
        """Every metric of one agent (0 where nothing was counted)."""
        row = self.rows.get(eid, {})
        out = {name: float(row.get(name, 0)) for name in COUNTED}
        hist = self.latency.get(eid, [])
        out["latency_p50"] = percentile_of(hist, 0.5)
        out["latency_p95"] = percentile_of(hist, 0.95)
        return out

    def top(self, metric: str, n: int) -> list[tuple[int, float]]:
        """The ``n`` agents highest on ``metric`` (ids break ties, lowest first)."""
        values = [(eid, self.of(eid)[metric]) for eid in self.rows]
        values.sort(key=lambda kv: (-kv[1], kv[0]))
        return values[:n]

    def by(self, key: str) -> dict[str, dict[str, float]]:
        """Sums per ``brain`` (or any row field), with latency quantiles over all of its
        agents' decisions, and how many agents each counts."""
        groups: dict[str, dict[str, float]] = {}
        hists: dict[str, list[int]] = {}
        for eid, row in self.rows.items():
            name = str(row.get(key, "?"))
            group = groups.setdefault(name, {"agents": 0.0})
            group["agents"] += 1
            for metric in COUNTED:
                group[metric] = group.get(metric, 0.0) + float(row.get(metric, 0))
            hist = hists.setdefault(name, [0] * (len(LATENCY_BUCKETS_MS) + 1))
            for i, count in enumerate(self.latency.get(eid, ())):
                hist[i] += count
        for name, group in groups.items():
            group["latency_p50"] = percentile_of(hists[name], 0.5)
            group["latency_p95"] = percentile_of(hists[name], 0.95)
        return dict(sorted(groups.items()))

    # -- state -------------------------------------------------------------------------------

    def is_empty(self) -> bool:
        return not self.rows

    def get_state(self) -> dict[str, Any]:
        return {"rows": {str(eid): row for eid, row in sorted(self.rows.items())},
                "latency": {str(eid): h for eid, h in sorted(self.latency.items())},
                "dead": self.dead}

    def set_state(self, state: Mapping[str, Any] | None) -> None:
        state = state or {}
        self.rows = {int(eid): dict(row) for eid, row in state.get("rows", {}).items()}
        self.latency = {int(eid): [int(n) for n in h]
                        for eid, h in state.get("latency", {}).items()}
        self.dead = [int(eid) for eid in state.get("dead", [])]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else 0.0


def _goods(book: MetricsBook, world: World, eid: Any, kind: Any, qty: Any) -> None:
    if kind == "gold":
        book.add(world, eid, "gold_earned", _number(qty))
    elif kind in FOOD:
        book.add(world, eid, "food_gathered", _number(qty))
    else:
        book.add(world, eid, "materials_gathered", _number(qty))


def _gold_of(goods: Any) -> float:
    return _number(goods.get("gold")) if isinstance(goods, Mapping) else 0.0


def _pickup(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    _goods(book, world, e.get("agent"), e.get("item"), e.get("qty", 1))


def _harvest(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    _goods(book, world, e.get("agent"), e.get("item"), 1)


def _attack(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    damage = _number(e.get("damage"))
    book.add(world, e.get("agent"), "damage_dealt", damage)
    book.add(world, e.get("target"), "damage_taken", damage)


def _death(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    eid = e.get("agent")
    book.add(world, e.get("killer"), "kills")
    book.add(world, eid, "deaths")
    if isinstance(eid, int) and eid in book.rows:
        book.rows[eid]["died_at"] = world.tick
        book.died(eid)


def _offer(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    book.add(world, e.get("agent"), "trades_offered")


def _trade(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    sender, taker = e.get("agent"), e.get("target")
    given, wanted = _gold_of(e.get("give")), _gold_of(e.get("want"))
    for eid in (sender, taker):
        book.add(world, eid, "trades_done")
    book.add(world, sender, "gold_spent", given)
    book.add(world, sender, "gold_earned", wanted)
    book.add(world, taker, "gold_earned", given)
    book.add(world, taker, "gold_spent", wanted)


def _theft(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    if e.get("success") is False:
        return
    book.add(world, e.get("agent"), "thefts")
    book.add(world, e.get("victim"), "robbed")
    if e.get("item") == "gold":
        book.add(world, e.get("agent"), "gold_earned", _number(e.get("qty")))
        book.add(world, e.get("victim"), "gold_spent", _number(e.get("qty")))


def _gift(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    if e.get("item") == "gold":
        book.add(world, e.get("agent"), "gold_spent", _number(e.get("qty")))
        book.add(world, e.get("target"), "gold_earned", _number(e.get("qty")))


def _eat(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    book.add(world, e.get("agent"), "eaten")


def _cast(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    book.add(world, e.get("agent"), "casts")


def _failed(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    if str(e.get("action", "")).startswith("use_ability("):
        book.add(world, e.get("agent"), "casts_failed")


def _hazard(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    damage = _number(e.get("damage"))
    book.add(world, e.get("agent"), "hazard_damage", damage)
    book.add(world, e.get("agent"), "damage_taken", damage)


def _craft(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    book.add(world, e.get("agent"), "crafted")
    book.add(world, e.get("agent"), "crafted_value", _number(e.get("value")))


def _capture(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    for eid in e.get("agents") or ():
        book.add(world, eid, "captures")


def _team_say(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    book.add(world, e.get("agent"), "team_messages")


_EVENTS = {"pickup": _pickup, "harvest": _harvest, "attack": _attack, "death": _death,
           "trade_offer": _offer, "trade": _trade, "theft": _theft, "gift": _gift,
           "eat": _eat, "ability": _cast, "action_failed": _failed, "hazard": _hazard,
           "craft": _craft, "capture": _capture, "team_say": _team_say}
