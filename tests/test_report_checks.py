"""The report's checks: a clean hand-made log passes every one, and each bound is violated
by a log made to break it (and only it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_report_handmade import (
    PERSONALITIES,
    cast,
    census,
    event,
    failed,
    handmade,
    say,
)

from agent_world.cli import report as report_command
from agent_world.report import build_report
from agent_world.report.checks import (
    FAILED_SHARE_MAX,
    RICHEST_SHARE_MAX,
    SPEECH_MIN_LINES,
    TRADE_MIN_OFFERS,
    Finding,
    evaluate,
    violations,
)

Records = list[dict[str, Any]]
ABILITY_OF = {1: "fire_bolt", 2: "shield", 3: "harvest", 4: "proclaim"}


def _offers(n: int, accepted: int, undone: int = 0) -> Records:
    records = [event(100 + i, "trade_offer", agent=1, target=2, offer=i, give={}, want={})
               for i in range(n)]
    records += [event(200 + i, "trade", agent=1, target=2, offer=i, give={}, want={})
                for i in range(accepted)]
    records += [event(300 + i, "trade_undone", agent=1, target=2, offer=i)
                for i in range(undone)]
    return records


def clean(**changes: Any) -> Records:
    """One window (ticks 1..1000) of a lively world; ``changes`` replace a part."""
    parts: dict[str, Records] = {
        "census": [census(500, started=50, over_capacity=0),
                   census(1000, started=100, over_capacity=0)],
        "trade": _offers(40, 20),
        "speech": [say(400 + i % 100, f"line {i}") for i in range(SPEECH_MIN_LINES)],
        "casts": [cast(600 + eid, eid, ABILITY_OF[eid]) for eid in ABILITY_OF],
        "failures": [failed(700 + i, "pickup(target=9)", "#9 is gone") for i in range(10)],
    }
    parts.update(changes)
    return [r for part in parts.values() for r in part]


def _findings(tmp_path: Path, records: Records, **world: Any) -> tuple[Finding, ...]:
    return evaluate(build_report(handmade(tmp_path / "w", records, **world), window=1000))


def test_a_clean_log_passes_every_check(tmp_path: Path) -> None:
    findings = _findings(tmp_path, clean())
    assert {f.status for f in findings} == {"passed"}
    assert {f.check for f in findings} == {
        "personalities_alive", "richest_gold_share", "carrying_capacity", "trade_acceptance",
        "trades_undone", "speech_distinct", "casts_per_personality", "failed_actions",
        "population"}


def _gone(by: str) -> Records:
    return [census(500, started=50, over_capacity=0,
                   by_personality={p: 0 if p == by else 1 for p in PERSONALITIES}),
            census(1000, started=100, over_capacity=0)]


VIOLATIONS: dict[str, tuple[Callable[[], Records], str]] = {
    "personalities_alive": (lambda: clean(census=_gone("gatherer")),
                            "no gatherer agent alive"),
    "richest_gold_share": (
        lambda: clean(census=[census(500, started=50, over_capacity=0),
                              census(1000, started=100, over_capacity=0, richest=0.3)]),
        "the richest agent held 30% of all gold at tick 1000"),
    "carrying_capacity": (
        lambda: clean(census=[census(500, started=50, over_capacity=2),
                              census(1000, started=100, over_capacity=0)]),
        "2 agent(s) carried more than their capacity at tick 500"),
    "trade_acceptance": (lambda: clean(trade=_offers(TRADE_MIN_OFFERS, 1)),
                         "1 of 20 offers accepted (5.0%)"),
    "trades_undone": (lambda: clean(trade=_offers(40, 20, undone=2)),
                      "2 of 22 accepted offers undone (9.1%)"),
    "speech_distinct": (lambda: clean(speech=[say(400 + i, f"line {i % 5}")
                                              for i in range(SPEECH_MIN_LINES)]),
                        "5 distinct of 50 lines (10%)"),
    "casts_per_personality": (lambda: clean(casts=[cast(600 + eid, eid, ABILITY_OF[eid])
                                                    for eid in (1, 3, 4)]),
                              "cautious agents (alive at every census) cast 0"),
    "failed_actions": (lambda: clean(failures=[failed(700 + i, "pickup(target=9)", "#9 is gone")
                                               for i in range(30)]),
                       "30 of 100 actions started failed (30%, ticks 1..1000)"),
    "population": (lambda: clean(census=[census(500, agents=1, started=50, over_capacity=0),
                                         census(1000, started=100, over_capacity=0)]),
                   "1 agents at the lowest"),
}


@pytest.mark.parametrize("check", sorted(VIOLATIONS))
def test_each_bound_is_violated_by_a_log_that_breaks_it(tmp_path: Path, check: str) -> None:
    make, detail = VIOLATIONS[check]
    bad = violations(_findings(tmp_path, make()))
    assert [f.check for f in bad] == [check], [f.line() for f in bad]
    assert detail in bad[0].detail
    assert bad[0].ticks in ("1..1000", "500")


def test_trade_acceptance_has_an_upper_bound_too(tmp_path: Path) -> None:
    bad = violations(_findings(tmp_path, clean(trade=_offers(40, 38))))
    assert [f.line() for f in bad] == [
        "trade_acceptance (ticks 1..1000): 38 of 40 offers accepted (95%); the bounds are "
        "10%..80%"]


def test_a_personality_of_weight_0_may_die_out(tmp_path: Path) -> None:
    mix = {"aggressive": 1.0, "cautious": 1.0, "gatherer": 0.0, "trader": 1.0}
    findings = _findings(tmp_path, clean(census=_gone("gatherer")), mix=mix)
    assert violations(findings) == []


def test_capacity_is_not_checked_in_a_world_without_one(tmp_path: Path) -> None:
    records = clean(census=[census(500, started=50, over_capacity=0, capacity=0),
                            census(1000, started=100, over_capacity=0, capacity=0)])
    found = [f for f in _findings(tmp_path, records) if f.check == "carrying_capacity"]
    assert [(f.status, f.detail) for f in found] == [
        ("skipped", "the world has no carrying capacity (game.carry_capacity 0)")]


def test_population_runs_outside_the_bounds_are_grouped(tmp_path: Path) -> None:
    points = [census(t, agents=n, started=t // 10, over_capacity=0)
              for t, n in ((500, 1), (1000, 1), (1500, 4), (2000, 7), (2500, 9), (3000, 4))]
    bad = [f for f in _findings(tmp_path, points) if f.check == "population"]
    assert [(f.status, f.ticks) for f in bad] == [("violated", "500..1000"),
                                                  ("violated", "2000..2500")]
    assert bad[0].detail.startswith("1 agents at the lowest (2 census(es) below the bounds 2..6")
    assert bad[1].detail.startswith("9 agents at the highest (2 census(es) above")


def test_checks_without_enough_data_are_skipped_not_passed(tmp_path: Path) -> None:
    findings = _findings(tmp_path, [say(10, "hello")], started=None)
    status = {f.check: f.status for f in findings}
    assert status == dict.fromkeys(status, "skipped")
    details = {f.check: f.detail for f in findings}
    assert details["trade_acceptance"] == f"0 offers (fewer than {TRADE_MIN_OFFERS})"
    assert details["richest_gold_share"] == "no census in the window"
    assert details["failed_actions"].startswith("actions started unknown")


def test_check_flag_lists_violations_and_sets_the_exit_status(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = handmade(tmp_path / "good", clean())
    assert report_command.main([str(good), "--window", "1000", "--check"]) == 0
    assert capsys.readouterr().out.splitlines() == ["all 15 checks passed (0 skipped)"]
    bad = handmade(tmp_path / "bad", clean(
        census=[census(500, started=50, over_capacity=0),
                census(1000, started=100, over_capacity=0, richest=0.3)],
        failures=[failed(700 + i, "pickup(target=9)", "#9 is gone") for i in range(30)]))
    assert report_command.main([str(bad), "--window", "1000", "--check"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "richest_gold_share (ticks 1..1000): the richest agent held 30% of all gold at tick "
        f"1000 (more than {RICHEST_SHARE_MAX:.0%} at 1 of 2 censuses)",
        "failed_actions (ticks 1..1000): 30 of 100 actions started failed (30%, ticks "
        f"1..1000); the bound is {FAILED_SHARE_MAX:.0%}",
        "2 of 15 checks violated (0 skipped)"]
