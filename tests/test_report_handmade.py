"""The liveliness report on hand-made save folders: windows, --from/--to, every figure
family, the grouping of reasons and causes, and who cast what.

The folders follow docs/save-format.md: meta.json (SaveFolder.create), a first snapshot with
the world's rules and agents, and event-log files of JSON lines. The helpers here are shared
with the other report tests.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.persistence import SaveFolder
from agent_world.report import ReportError, build_report
from agent_world.report.reasons import death_cause, normalise_reason
from agent_world.report.render import render_text

PERSONALITIES = ("aggressive", "cautious", "gatherer", "trader")
# The starting agents of every hand-made world: one of each personality.
STARTING = {1: "aggressive", 2: "cautious", 3: "gatherer", 4: "trader"}


# -- building folders -------------------------------------------------------------------------


def event(tick: int, type: str, **fields: Any) -> dict[str, Any]:
    return {"tick": tick, "seq": 0, "kind": "event", "type": type, **fields}


def census(tick: int, *, agents: int = 4, by_personality: dict[str, int] | None = None,
           richest: float = 0.2, started: int | None = None, over_capacity: int | None = None,
           prices: dict[str, float] | None = None, items_max: int = 10,
           capacity: float | None = None) -> dict[str, Any]:
    """A census event as the core writes it (agent_world/core/systems/census.py)."""
    counters: dict[str, int] = {"deaths": 0}
    if started is not None:
        counters["actions_started"] = started
    fields: dict[str, Any] = {
        "agents": agents,
        "by_personality": by_personality or dict.fromkeys(PERSONALITIES, 1),
        "by_brain": {"builtin": agents}, "gold_total": 100, "gold_on_ground": 0,
        "gold_gini": 0.3, "wealth_gini": 0.25, "richest_gold_share": richest,
        "items_carried": {"p50": 2, "p99": items_max - 1, "max": items_max},
        "goods_on_ground": 5, "prices": prices or {"apple": 3.0, "wood": 2.0},
        "counters": counters,
    }
    if over_capacity is not None:
        fields["over_capacity"] = over_capacity
    if capacity is not None:
        fields["load"] = {"p50": 4.0, "max": 12.5, "capacity": capacity}
    return event(tick, "census", **fields)


def say(tick: int, text: str, agent: int = 1) -> dict[str, Any]:
    return event(tick, "say", agent=agent, name=f"A{agent}", text=text, heard_by=1)


def failed(tick: int, action: str, reason: str, agent: int = 1) -> dict[str, Any]:
    return event(tick, "action_failed", agent=agent, name=f"A{agent}", action=action,
                 reason=reason)


def cast(tick: int, agent: int, ability: str) -> dict[str, Any]:
    return event(tick, "ability", agent=agent, name=f"A{agent}", ability=ability, effects=[])


def handmade(root: Path, records: list[dict[str, Any]], *, starting: int = 4,
             mix: dict[str, float] | None = None, events: str = "all",
             chunk: int = 10_000, agents: dict[int, str] | None = None,
             started: int | None = 0) -> Path:
    """A save folder at ``root`` whose log holds ``records`` (put in tick order), in files
    of ``chunk`` ticks: finished ranges gzipped, the last one plain."""
    mix = mix if mix is not None else dict.fromkeys(PERSONALITIES, 1.0)
    world = {"starting_agents": starting, "personality_mix": mix}
    folder = SaveFolder.create(root, {"world": root.name, "seed": 7, "last_tick": 0,
                                      "config": {"world": world,
                                                 "persistence": {"events": events}}})
    entities = [{"id": eid, "Agent": {"name": f"A{eid}", "personality": p, "brain": "builtin",
                                      "born": 0, "kills": 0}}
                for eid, p in (agents if agents is not None else STARTING).items()]
    counters = {} if started is None else {"actions_started": started}
    state = {"format": 1, "tick": 0, "config": {"world": world}, "counters": counters,
             "entities": entities}
    snapshot = orjson.dumps({"format": 1, "tick": 0, "hash": "0" * 32, "state": state})
    folder.snapshot_path(0).write_bytes(gzip.compress(snapshot))
    lines = [{"tick": 0, "seq": 0, "kind": "marker", "type": "start", "at": "x"},
             *sorted(records, key=lambda r: r["tick"])]
    ranges: dict[int, list[bytes]] = {}
    for record in lines:
        ranges.setdefault(record["tick"] // chunk * chunk, []).append(orjson.dumps(record) + b"\n")
    last = max(ranges)
    for start, data in ranges.items():
        path = folder.events_dir / folder.chunk_name(start, start + chunk - 1)
        if start == last:
            path.write_bytes(b"".join(data))
        else:
            path.with_name(path.name + ".gz").write_bytes(gzip.compress(b"".join(data)))
    return root


# -- reasons and causes -----------------------------------------------------------------------


@pytest.mark.parametrize(("reason", "ability", "group"), [
    ("cannot reach club#3153", "", "cannot reach <item>"),
    ("cannot reach apple#12", "", "cannot reach <item>"),
    ("Vale#2047 is no longer near", "", "<agent> is no longer near"),
    ("Rosa2#1604 caught me", "", "<agent> caught me"),
    ("#4010 is not an item on the ground", "", "<entity> is not an item on the ground"),
    ("target #12 is gone", "", "target <entity> is gone"),
    ("nothing left on berry_bush#77", "", "nothing left on <object>"),
    ("shelter#104 is out of sight", "", "<object> is out of sight"),
    ("(3, 40) is off the map", "", "(<x>, <y>) is off the map"),
    ("no way to (12, 7)", "", "no way to (<x>, <y>)"),
    ("carrying 2 apple, not 5", "", "carrying <n> <item>, not <n>"),
    ("not carrying any herb", "", "not carrying any <item>"),
    ("the trade fell through: missing 3 wood (has 1)", "",
     "the trade fell through: missing <n> <item> (has <n>)"),
    ("no open offer 17 to you", "", "no open offer <n> to you"),
    ("already waiting for Bo#5 to answer", "", "already waiting for <agent> to answer"),
    ("fire_bolt is cooling down (12 ticks left)", "fire_bolt",
     "<ability> is cooling down (<n> ticks left)"),
    ("too tired for heal (energy 4, it costs 10)", "heal",
     "too tired for <ability> (energy <n>, it costs <n>)"),
    ("fire_bolt: damage 12.5 exceeds the cap of 10 (abilities.max_damage)", "fire_bolt",
     "<ability>: damage <n> exceeds the cap of <n> (abilities.max_damage)"),
    ("no ability named 'firebolt'; did you mean 'fire_bolt'?", "firebolt",
     "no ability named <name>"),
    ("timed out", "", "timed out"),
])
def test_reasons_group_by_what_happened(reason: str, ability: str, group: str) -> None:
    assert normalise_reason(reason, ability) == group


def test_causes_of_death_form_a_small_set() -> None:
    assert death_cause("killed by Vale#2047") == "killed"
    assert death_cause("killed by Bo Ray#3") == "killed"
    assert death_cause("starvation") == "starvation"
    assert death_cause("wounds") == "wounds"
    assert death_cause("struck down by the operator") == "struck down by the operator"
    assert death_cause("hit by 3 meteors") == "hit by <n> meteors"


# -- windows and ranges ----------------------------------------------------------------------


def _offers_every_10_ticks(tmp_path: Path) -> Path:
    records = [event(t, "trade_offer", agent=1, target=2, offer=t, give={}, want={})
               for t in range(10, 1001, 10)]
    return handmade(tmp_path / "w", records, chunk=250)


def test_windows_cover_the_log_from_the_first_tick_after_the_snapshot(tmp_path: Path) -> None:
    report = build_report(_offers_every_10_ticks(tmp_path), window=300)
    assert [(w.start, w.end) for w in report.windows] == [
        (1, 300), (301, 600), (601, 900), (901, 1000)]
    assert [w.trade.offers for w in report.windows] == [30, 30, 30, 10]
    assert report.total.trade.offers == 100
    assert (report.first, report.last) == (1, 1000)


def test_from_and_to_limit_the_ticks(tmp_path: Path) -> None:
    report = build_report(_offers_every_10_ticks(tmp_path), first=205, last=455, window=100)
    assert [(w.start, w.end) for w in report.windows] == [
        (205, 304), (305, 404), (405, 455)]
    assert [w.trade.offers for w in report.windows] == [10, 10, 5]  # 210..300, ..., 410..450


def test_a_range_outside_the_log_is_refused(tmp_path: Path) -> None:
    path = _offers_every_10_ticks(tmp_path)
    with pytest.raises(ReportError, match="--from 5000 is past the end"):
        build_report(path, first=5000)
    with pytest.raises(ReportError, match="--to 5000 is past the end of the log"):
        build_report(path, last=5000)
    with pytest.raises(ReportError, match="--from 600 is after --to 500"):
        build_report(path, first=600, last=500)
    with pytest.raises(ReportError, match="at least 100"):
        build_report(path, window=99)


def test_windows_without_a_line_are_reported_empty(tmp_path: Path) -> None:
    records = [say(50, "early"), say(950, "late")]
    report = build_report(handmade(tmp_path / "w", records), window=200)
    assert [w.speech.lines for w in report.windows] == [1, 0, 0, 0, 1]


# -- the figure families ---------------------------------------------------------------------


def test_population_arrivals_and_deaths(tmp_path: Path) -> None:
    records = [
        event(10, "spawn", agent=9, name="N", personality="trader", x=1, y=1, brain="builtin"),
        event(20, "spawn", agent=10, name="M", personality="trader", x=1, y=1, brain="llm"),
        event(30, "death", agent=1, name="A1", personality="aggressive", cause="starvation",
              killer=0),
        event(40, "death", agent=2, name="A2", personality="cautious",
              cause="killed by Vale#2047", killer=2047),
        event(41, "death", agent=3, name="A3", personality="gatherer", cause="killed by Bo#3",
              killer=3),
        event(42, "death", agent=4, name="A4", personality="trader",
              cause="struck down by the operator", killer=0),
        event(43, "death", agent=9, name="N", personality="trader", cause="wounds", killer=0),
        census(500, agents=6), census(1000, agents=2,
                                      by_personality={"trader": 1, "aggressive": 1}),
    ]
    p = build_report(handmade(tmp_path / "w", records), window=1000).windows[0].population
    assert (p.censuses, p.agents, p.agents_min, p.agents_max) == (2, 2, 2, 6)
    assert p.by_personality == {"trader": 1, "aggressive": 1}
    assert (p.arrivals, p.arrivals_by_personality) == (2, {"trader": 2})
    assert p.deaths == 5
    assert p.deaths_by_cause == {"killed": 2, "starvation": 1,
                                 "struck down by the operator": 1, "wounds": 1}
    assert p.deaths_by_personality == {"trader": 2, "aggressive": 1, "cautious": 1,
                                       "gatherer": 1}


def test_wealth_and_prices(tmp_path: Path) -> None:
    records = [
        census(300, richest=0.4, items_max=50, prices={"apple": 2.0}),
        event(400, "price", item="apple", old=2.0, price=1.5, supply=3, demand=1.0),
        event(450, "price", item="wood", old=2.0, price=2.5, supply=3, demand=1.0),
        census(600, richest=0.1, items_max=20, prices={"apple": 4.0, "wood": 2.0},
               over_capacity=3, capacity=40),
    ]
    w = build_report(handmade(tmp_path / "w", records), window=1000).windows[0].wealth
    assert (w.gold_gini, w.wealth_gini) == (0.3, 0.25)
    assert (w.richest_gold_share, w.richest_gold_share_max) == (0.1, 0.4)
    assert (w.items_p99, w.items_max) == (49, 50)
    assert (w.over_capacity_max, w.load_max, w.capacity) == (3, 12.5, 40)
    assert w.prices == {"apple": (1.5, 4.0), "wood": (2.0, 2.5)}


def test_trade_theft_and_fights(tmp_path: Path) -> None:
    records = [event(t, "trade_offer", agent=1, target=2, offer=t, give={}, want={})
               for t in range(1, 11)]
    records += [event(20, "trade", agent=1, target=2, offer=1, give={}, want={}),
                event(21, "trade", agent=1, target=2, offer=2, give={}, want={}),
                event(22, "trade_undone", agent=1, target=2, offer=2),
                event(23, "trade_declined", agent=2, target=1, offer=3),
                event(24, "trade_expired", offer=4, agent=1, target=2),
                event(30, "theft", agent=1, victim=2, item="gold", qty=2, success=True,
                      noticed=False),
                event(31, "theft", agent=1, victim=2, item="", qty=0, success=False,
                      noticed=True),
                event(32, "theft", agent=3, victim=2, item="apple", qty=1, noticed=True),
                event(40, "attack", agent=1, target=2, damage=5, health=90),
                event(41, "attack", agent=1, target=2, damage=5, health=85),
                event(42, "attack", agent=2, target=1, damage=5, health=95),
                event(43, "death", agent=2, name="A2", personality="cautious",
                      cause="killed by A1#1", killer=1)]
    w = build_report(handmade(tmp_path / "w", records), window=1000).windows[0]
    assert (w.trade.offers, w.trade.accepted, w.trade.declined, w.trade.expired,
            w.trade.undone) == (10, 2, 1, 1, 1)
    # an undone trade is an accepted offer that could not go through (no trade event)
    assert (w.trade.acceptance, w.trade.undone_share) == (0.2, round(1 / 3, 4))
    c = w.conflict
    assert (c.thefts, c.thefts_succeeded, c.thefts_failed, c.thefts_noticed) == (3, 2, 1, 2)
    assert (c.hits, c.fighting_pairs, c.kills) == (3, 2, 1)


def test_failed_actions_by_reason_and_share_of_actions_started(tmp_path: Path) -> None:
    records = [failed(10, "move_to(target=3153)", "cannot reach club#3153"),
               failed(11, "move_to(target=12)", "cannot reach apple#12"),
               failed(12, "trade_accept(offer=4)", "Vale#2047 is no longer near"),
               failed(13, "use_ability(ability=heal)", "heal is cooling down (3 ticks left)"),
               failed(14, "use_ability(ability=fire_bolt, target=2)",
                      "fire_bolt is cooling down (9 ticks left)"),
               census(1000, started=40)]
    f = build_report(handmade(tmp_path / "w", records), window=1000).windows[0].failures
    assert f.failed == 5
    assert f.by_reason == {"<ability> is cooling down (<n> ticks left)": 2,
                           "cannot reach <item>": 2, "<agent> is no longer near": 1}
    assert f.by_action == {"move_to": 2, "use_ability": 2, "trade_accept": 1}
    assert (f.started, f.failed_in_span, f.share, f.span) == (40, 5, 0.125, (1, 1000))


def test_the_failed_share_is_unknown_without_the_counter(tmp_path: Path) -> None:
    records = [failed(10, "pickup(target=4)", "#4 is gone"), census(1000)]
    f = build_report(handmade(tmp_path / "w", records, started=None),
                     window=1000).windows[0].failures
    assert (f.failed, f.started, f.share) == (1, None, None)


def test_each_window_counts_failures_from_the_census_before_it(tmp_path: Path) -> None:
    records = [failed(t, "pickup(target=4)", "#4 is gone") for t in (100, 900, 1500)]
    records += [census(1000, started=10), census(2000, started=30)]
    path = handmade(tmp_path / "w", records)
    report = build_report(path, window=1000)
    first, second = (w.failures for w in report.windows)
    assert (first.failed_in_span, first.started, first.span) == (2, 10, (1, 1000))
    assert (second.failed_in_span, second.started, second.span) == (1, 20, (1001, 2000))
    assert report.total.failures.share == 0.1  # 3 of 30
    later = build_report(path, first=1001, window=1000).windows[0].failures
    assert (later.failed_in_span, later.started, later.span) == (1, 20, (1001, 2000))


def test_speech_lines_distinct_and_most_common(tmp_path: Path) -> None:
    texts = ["hi"] * 4 + ["bye"] * 3 + ["a", "b", "c", "d"]
    records = [say(10 + i, text) for i, text in enumerate(texts)]
    s = build_report(handmade(tmp_path / "w", records), window=1000).windows[0].speech
    assert (s.lines, s.distinct, s.distinct_share) == (11, 6, round(6 / 11, 4))
    assert s.top == (("hi", 4), ("bye", 3), ("a", 1), ("b", 1), ("c", 1))


def test_casts_by_ability_and_by_the_casters_personality(tmp_path: Path) -> None:
    records = [
        event(10, "spawn", agent=9, name="N", personality="trader", x=1, y=1, brain="builtin"),
        cast(500, 1, "fire_bolt"), cast(501, 1, "shove"), cast(502, 2, "shield"),
        cast(503, 9, "proclaim"), cast(504, 77, "dash"),
        failed(505, "use_ability(ability=heal)", "too tired for heal (energy 3, it costs 10)"),
        failed(506, "use_ability(ability=heal, target=2)", "heal is disabled: failed: boom"),
        event(507, "ability_disabled", ability="heal", reason="failed: boom"),
        event(508, "ability_killed", ability="dash", agent=1, reason="time", strikes=1,
              limit=3),
        event(600, "ability_requested", request=1, agent=1, text="a gust"),
        event(601, "ability_requested", request=2, agent=2, text="a wall"),
        event(602, "ability_requested", request=3, agent=3, text="a song"),
        event(650, "ability_accepted", ability="gust", description="d", origin="angel",
              sha256="ab", request=1, agent=1),
        event(651, "ability_refused", request=2, agent=2, reason="no"),
        event(900, "ability_request_expired", request=3, agent=3),
    ]
    report = build_report(handmade(tmp_path / "w", records), first=200, window=1000)
    a = report.windows[0].abilities
    assert a.casts == 5
    assert a.by_ability == {"dash": 1, "fire_bolt": 1, "proclaim": 1, "shield": 1, "shove": 1}
    # agent 1 and 2 from the first snapshot, 9 from its spawn before --from, 77 never seen
    assert a.by_personality == {"aggressive": 2, "cautious": 1, "trader": 1, "unknown": 1}
    assert a.by_personality_ability["aggressive"] == {"fire_bolt": 1, "shove": 1}
    assert a.failures == 2
    assert a.failures_by_ability == {"heal": 2}
    assert a.failures_by_reason == {"<ability> is disabled: failed: boom": 1,
                                    "too tired for <ability> (energy <n>, it costs <n>)": 1}
    assert (a.disabled, a.killed) == ({"heal": 1}, {"dash": 1})
    angel = report.windows[0].angel
    assert (angel.requests, angel.accepted, angel.refused, angel.expired) == (3, 1, 1, 1)


def test_ticks_over_budget_and_skipped_show_as_the_time_lost(tmp_path: Path) -> None:
    # Issue 30: a world starved between ticks lost them without an overrun or a slow tick;
    # the loop now says so with a 'skipped' event, and the report adds up the time lost.
    records = [event(10, "overrun", late_tick=9, ms=250.0, budget_ms=100.0),
               event(20, "skipped", ticks=7, ms=875.0, budget_ms=100.0),
               event(1500, "skipped", ticks=3, ms=320.0, budget_ms=100.0), say(1600, "hi")]
    report = build_report(handmade(tmp_path / "w", records), window=1000)
    first, second = report.windows[0].pace, report.windows[1].pace
    assert (first.overruns, first.skipped_ticks, first.lost_s) == (1, 7, 0.875)
    assert (second.overruns, second.skipped_ticks, second.lost_s) == (0, 3, 0.32)
    total = report.total.pace
    assert (total.overruns, total.skipped_ticks, total.lost_s) == (1, 10, 1.195)
    text = render_text(report, ())
    assert "pace        1 ticks over their budget; 7 ticks skipped, 0.9 s of the world's " \
           "time lost" in text
    quiet = build_report(handmade(tmp_path / "q", [say(10, "hi")]), window=1000)
    assert "pace" not in render_text(quiet, ())  # a world that kept pace says nothing


def test_a_malformed_event_line_is_skipped_with_a_note(tmp_path: Path) -> None:
    records = [event(10, "say", agent=1), say(11, "fine"), event(12, "price", item="apple")]
    report = build_report(handmade(tmp_path / "w", records), window=1000)
    assert report.windows[0].speech.lines == 1
    assert report.notes == ("skipped 2 event line(s) missing a field the report needs",)
