"""Per-agent metrics: what each agent gathered, ate, walked, fought, traded and decided.

They are world state (``World.metrics``): counted during the tick from the tick's events
and inputs, saved in snapshots and hashed, so a replay, a resume or a fork has exactly the
figures the run had. Decisions come from the ``plan`` inputs that LLMs, users' brains and
remote clients submit (with their latency and tokens), faults from ``decision_fault``
inputs. A world saved before metrics existed runs without them (``game.agent_metrics``
takes its legacy value, off), so it hashes as it did.

No metric that a scenario may score can be raised by undoing and redoing the same thing
(``game.metrics_version`` 2). Gathering counts goods first taken from the world (harvests,
goods the world put on the ground), never units that were carried before (dropped, left by
a death: a ground stack counts them, ``SecondHand``, and they are taken off it first), and
gold picked up likewise; damage and kills on a teammate count as neither; a team's capture
of a point counts once. Figures that are activity by nature (tiles walked, offers, trades,
messages ...) are counted as before but may not be scored with a positive weight
(``UNSCORABLE`` says why and what to score instead). Worlds saved before version 2 count
by version 1 (every pickup, hit and capture), whose handlers are kept below (``_V1``), so
they replay with the figures they had.

Dead agents keep their figures, for scores over a whole episode; past ``MAX_DEAD`` the
oldest deaths' are dropped, so a world left on for days stays bounded.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.items import ITEMS

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["LATENCY_BUCKETS_MS", "MAX_DEAD", "METRICS", "THINKERS", "UNSCORABLE",
           "MetricsBook", "percentile_of"]

METRICS: dict[str, str] = {
    "food_gathered": "food first taken from the world: harvested, or picked up where the "
                     "world put it, not goods carried before (units)",
    "materials_gathered": "other goods first taken from the world, as food_gathered (units)",
    "eaten": "meals eaten",
    "walked": "tiles walked",
    "damage_dealt": "damage done to others (not to teammates)",
    "damage_taken": "damage suffered",
    "kills": "agents it killed (not teammates)",
    "deaths": "times it died (0 or 1)",
    "trades_offered": "trade offers it made",
    "trades_done": "trades it took part in (either side)",
    "thefts": "thefts it committed",
    "robbed": "thefts it suffered",
    "gold_earned": "gold received (trades, thefts, gifts, and picked up where the world "
                   "put it)",
    "gold_spent": "gold given (trades, thefts suffered, gifts)",
    "hazard_damage": "damage suffered on hazard tiles (also in damage_taken)",
    "crafted": "items it crafted",
    "crafted_value": "base value of the items it crafted (gold)",
    "captures": "capture points its team took for the first time with it there",
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

_COST = "weigh it negatively, as a cost, if at all"
UNSCORABLE: dict[str, str] = {
    "walked": "tiles walked back and forth count as much as a journey; score what the "
              "walking is for (food_gathered, team_held, ticks_alive)",
    "damage_dealt": "an agent that heals can be struck again and again (a partner that lets "
                    "itself be hit); score kills (an agent dies once) or team_held",
    "damage_taken": f"an agent can let a partner strike it again and again; {_COST}",
    "hazard_damage": f"an agent can step on and off a hazard again and again; {_COST}",
    "trades_offered": "an offer declined or left to lapse can be made again; score "
                      "wealth_gained",
    "trades_done": "two agents can trade the same goods back and forth; score wealth_gained",
    "thefts": "a partner can be robbed and handed the goods back, again and again; score "
              "wealth_gained",
    "robbed": f"a partner can rob it and hand the goods back, again and again; {_COST}",
    "gold_earned": "gold traded or given back and forth counts every time it arrives; score "
                   "wealth_gained (the net gain)",
    "gold_spent": "gold traded or given back and forth counts every time it leaves; score "
                  "wealth_gained (the net gain)",
    "team_messages": "a message costs nothing and can be sent again and again; score "
                     "team_held, captures or kills",
    "casts": "an ability can be cast again and again, whatever it achieves; score what the "
             "casting is for",
    "casts_failed": f"it counts failures; {_COST}",
    "decisions": "a brain can decide as often as it is asked; score what the decisions "
                 "achieve",
    "decision_faults": f"it counts a brain's faults; {_COST}",
    "tokens": f"it counts what a brain's LLM used; {_COST}",
    "cost": f"it counts what a brain's LLM cost; {_COST}",
    "latency_p50": f"it measures how slowly a brain decides; {_COST}",
    "latency_p95": f"it measures how slowly a brain decides; {_COST}",
}
"""Metrics a scenario may not score with a positive weight: activity that undoing and redoing
raises (or a cost), with why and what to score instead. Every other metric is counted so that
it cannot be raised that way (tests/test_metric_farming.py tries)."""
COUNTED = tuple(name for name in METRICS if not name.startswith("latency_"))
# Plan sources that are decisions (``rl``: an agent_world.rl env's agents).
THINKERS = frozenset({"llm", "brain", "remote", "rl"})
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

    def __init__(self, enabled: bool, version: int = 2) -> None:
        self.enabled = enabled
        self.version = version  # game.metrics_version: how events are counted
        self.handlers = _EVENTS if version >= 2 else _V1
        self.rows: dict[int, dict[str, Any]] = {}
        self.latency: dict[int, list[int]] = {}
        self.dead: list[int] = []  # in order of death, for the bound
        self.captured: dict[str, list[int]] = {}  # team -> points it has taken (version 2)

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
        handler = self.handlers.get(str(event.get("type")))
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
        return not (self.rows or self.captured)

    def get_state(self) -> dict[str, Any]:
        # ``captured`` only once a team took a point: other worlds hash as they did.
        return {"rows": {str(eid): row for eid, row in sorted(self.rows.items())},
                "latency": {str(eid): h for eid, h in sorted(self.latency.items())},
                "dead": self.dead} | (
            {"captured": dict(sorted(self.captured.items()))} if self.captured else {})

    def set_state(self, state: Mapping[str, Any] | None) -> None:
        state = state or {}
        self.rows = {int(eid): dict(row) for eid, row in state.get("rows", {}).items()}
        self.latency = {int(eid): [int(n) for n in h]
                        for eid, h in state.get("latency", {}).items()}
        self.dead = [int(eid) for eid in state.get("dead", [])]
        self.captured = {str(team): [int(p) for p in points]
                         for team, points in state.get("captured", {}).items()}


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
    # Units that were carried before (``second_hand``) are not gathered again.
    fresh = _number(e.get("qty", 1)) - _number(e.get("second_hand", 0))
    _goods(book, world, e.get("agent"), e.get("item"), fresh)


def _pickup_v1(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    _goods(book, world, e.get("agent"), e.get("item"), e.get("qty", 1))


def _harvest(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    _goods(book, world, e.get("agent"), e.get("item"), 1)


def _team(book: MetricsBook, world: World, eid: Any) -> str:
    """An agent's team ("" for none), from the agent or, once it is gone, its row."""
    if not isinstance(eid, int):
        return ""
    team = world.store.try_get(eid, c.Team)
    if team is not None:
        return team.name
    return str(book.rows.get(eid, {}).get("team", ""))


def _teammates(book: MetricsBook, world: World, a: Any, b: Any) -> bool:
    team = _team(book, world, a)
    return bool(team) and team == _team(book, world, b)


def _attack(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    damage = _number(e.get("damage"))
    if not _teammates(book, world, e.get("agent"), e.get("target")):
        book.add(world, e.get("agent"), "damage_dealt", damage)
    book.add(world, e.get("target"), "damage_taken", damage)


def _attack_v1(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    damage = _number(e.get("damage"))
    book.add(world, e.get("agent"), "damage_dealt", damage)
    book.add(world, e.get("target"), "damage_taken", damage)


def _death(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    eid = e.get("agent")
    if not _teammates(book, world, e.get("killer"), eid):
        book.add(world, e.get("killer"), "kills")
    _died(book, world, eid)


def _death_v1(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    book.add(world, e.get("killer"), "kills")
    _died(book, world, e.get("agent"))


def _died(book: MetricsBook, world: World, eid: Any) -> None:
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
    """A point counts the first time a team takes it: one handed back and forth between
    two teams is not taken again and again."""
    team, point = str(e.get("team", "")), e.get("point")
    if not isinstance(point, int) or point in book.captured.get(team, ()):
        return
    book.captured[team] = sorted([*book.captured.get(team, ()), point])
    _capture_v1(book, world, e)


def _capture_v1(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    for eid in e.get("agents") or ():
        book.add(world, eid, "captures")


def _team_say(book: MetricsBook, world: World, e: Mapping[str, Any]) -> None:
    book.add(world, e.get("agent"), "team_messages")


_EVENTS = {ev.PICKUP: _pickup, ev.HARVEST: _harvest, ev.ATTACK: _attack, ev.DEATH: _death,
           ev.TRADE_OFFER: _offer, ev.TRADE: _trade, ev.THEFT: _theft, ev.GIFT: _gift,
           ev.EAT: _eat, ev.ABILITY: _cast, ev.ACTION_FAILED: _failed, ev.HAZARD: _hazard,
           ev.CRAFT: _craft, ev.CAPTURE: _capture, ev.TEAM_SAY: _team_say}
# Version 1 of the counting (worlds saved before game.metrics_version): every pickup, hit
# and capture counted. Its differences live here and nowhere else.
_V1 = {**_EVENTS, ev.PICKUP: _pickup_v1, ev.ATTACK: _attack_v1, ev.DEATH: _death_v1,
       ev.CAPTURE: _capture_v1}
