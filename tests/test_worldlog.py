"""The world log: formatting, filtering, rotation and surviving write errors.

The writer runs on a thread of its own. Tests wait for it on a semaphore released after each
batch it writes (one batch per ``on_tick`` when the test waits in between), so they are
deterministic and never sleep.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_world import worldlog
from agent_world.types import Event, TickReport
from agent_world.worldlog import _FORMATS, ROUTINE, WorldLog, format_event

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d t=(\d{7}) (.+)$")


class Flushes:
    """Counts the writer thread's batches (wraps its flush step)."""

    def __init__(self, log: WorldLog) -> None:
        self._done = threading.Semaphore(0)
        self._thread = log._thread
        inner = log._flush

        def flush() -> None:
            try:
                inner()
            finally:
                self._done.release()

        log._flush = flush  # type: ignore[method-assign]

    def wait(self) -> None:
        """Wait for the next batch (bounded; fails at once if the writer thread died)."""
        for _ in range(200):
            if self._done.acquire(timeout=0.05):
                return
            if not self._thread.is_alive():
                raise AssertionError("the world-log writer thread died")
        raise AssertionError("the world-log writer did not finish a batch")


@pytest.fixture
def logs() -> Iterator[list[WorldLog]]:
    """Logs made in a test are closed at its end even when it fails."""
    made: list[WorldLog] = []
    yield made
    for log in made:
        log.close()


def open_log(logs: list[WorldLog], path: Path, **kwargs: Any) -> tuple[WorldLog, Flushes]:
    log = WorldLog(path, **kwargs)
    logs.append(log)
    return log, Flushes(log)


def tick(log: WorldLog, flushes: Flushes, n: int, *events: Event) -> None:
    """Report one tick and wait until the writer has handled it."""
    log.on_tick(TickReport(tick=n, inputs=[], events=list(events)))
    flushes.wait()


def read_lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n"), f"{path.name} ends in a partial line"
    lines = text.splitlines()
    for line in lines:
        assert LINE.match(line), f"malformed line in {path.name}: {line!r}"
    return lines


def texts(lines: list[str]) -> list[tuple[int, str]]:
    out = []
    for line in lines:
        m = LINE.match(line)
        assert m is not None, line
        out.append((int(m.group(1)), m.group(2)))
    return out


def say(n: int, text: str = "Fine weather for berries today.") -> Event:
    return {"type": "say", "agent": 7, "name": "Asha", "text": f"{text} ({n})", "heard_by": 2}


# -- realistic events, one per known type (fields as the systems emit them) ---------------------

EXAMPLES: dict[str, list[tuple[Event, str]]] = {
    "spawn": [({"type": "spawn", "agent": 7, "name": "Asha", "personality": "trader",
                "x": 3, "y": 4, "brain": "builtin"},
               "SPAWN    Asha#7 (trader, builtin) appears at (3, 4)")],
    "death": [({"type": "death", "agent": 7, "name": "Asha", "personality": "trader",
                "cause": "starvation", "killer": 0, "x": 3, "y": 4, "age": 1200,
                "dropped": {"berries": 2, "gold": 5}},
               "DEATH    Asha#7 (trader) died of starvation at (3, 4) aged 1200 ticks, "
               "dropping 2 berries, 5 gold"),
              ({"type": "death", "agent": 9, "name": "Bram", "personality": "aggressive",
                "cause": "killed by Asha#7", "killer": 7, "x": 1, "y": 2, "age": 30,
                "dropped": {}},
               "DEATH    Bram#9 (aggressive) was killed by Asha#7 at (1, 2) aged 30 ticks"),
              ({"type": "death", "agent": 4, "name": "Cai", "personality": "cautious",
                "cause": "struck down by the operator", "killer": 0, "x": 5, "y": 6,
                "age": 1, "dropped": {}},
               "DEATH    Cai#4 (cautious) was struck down by the operator at (5, 6) aged 1 "
               "tick"),
              ({"type": "death", "agent": 5, "name": "Dag", "personality": "gatherer",
                "cause": "wounds", "killer": 0, "x": 0, "y": 0, "age": 0, "dropped": {}},
               "DEATH    Dag#5 (gatherer) died of wounds at (0, 0) aged 0 ticks"),
              ({"type": "death", "agent": 6, "name": "Eda", "personality": "trader",
                "cause": "old age", "killer": 0, "x": 2, "y": 3, "age": 200000,
                "dropped": {"apple": 1}, "estate_lost": 40,
                "heirs": [{"agent": 7, "name": "Asha", "gold": 20},
                          {"agent": 9, "name": "Bram", "gold": 20}]},
               "DEATH    Eda#6 (trader) died of old age at (2, 3) aged 200000 ticks, dropping "
               "1 apple; 40 gold went in dues; heirs: Asha#7 20 gold, Bram#9 20 gold")],
    "attack": [({"type": "attack", "agent": 7, "name": "Asha", "target": 9,
                 "target_name": "Bram", "damage": 6.0, "health": 94.0, "defended": False,
                 "provoked": False},
                "ATTACK   Asha#7 hits Bram#9 for 6 -> health 94"),
               ({"type": "attack", "agent": 7, "name": "Asha", "target": 9,
                 "target_name": "Bram", "damage": 3.5, "health": 0.0, "defended": True,
                 "provoked": True},
                "ATTACK   Asha#7 hits Bram#9 for 3.5 (defended) -> health 0")],
    "trade": [({"type": "trade", "agent": 7, "name": "Asha", "target": 9,
                "target_name": "Bram", "offer": 3, "give": {"wood": 2, "stone": 1},
                "want": {"gold": 5}},
               "TRADE    Asha#7 gives 2 wood, 1 stone to Bram#9 for 5 gold"),
              ({"type": "trade", "agent": 7, "name": "Asha", "target": 9,
                "target_name": "Bram", "offer": 4, "give": {"herb": 1}, "want": {"gold": 20},
                "fee": 2},
               "TRADE    Asha#7 gives 1 herb to Bram#9 for 20 gold (market fee 2 gold)")],
    "trade_undone": [({"type": "trade_undone", "agent": 9, "name": "Bram", "target": 7,
                       "target_name": "Asha", "offer": 3, "reason": "Asha#7 is no longer near"},
                      "UNDONE   Bram#9 accepted offer #3 of Asha#7, but Asha#7 is no longer "
                      "near")],
    "weapon_broke": [({"type": "weapon_broke", "agent": 7, "name": "Asha", "item": "spear"},
                      "BROKE    Asha#7's spear breaks")],
    "theft": [({"type": "theft", "agent": 7, "name": "Asha", "victim": 9,
                "victim_name": "Bram", "item": "bread", "qty": 1, "noticed": False},
               "THEFT    Asha#7 stole 1 bread from Bram#9 (unseen)"),
              ({"type": "theft", "agent": 7, "name": "Asha", "victim": 9,
                "victim_name": "Bram", "item": "gold", "qty": 4, "success": True,
                "noticed": True},
               "THEFT    Asha#7 stole 4 gold from Bram#9 (seen)"),
              ({"type": "theft", "agent": 7, "name": "Asha", "victim": 9,
                "victim_name": "Bram", "item": "", "qty": 0, "success": False,
                "noticed": True},
               "THEFT    Asha#7 failed to rob Bram#9 (seen)")],
    "say": [({"type": "say", "agent": 7, "name": "Asha", "text": "Nice day.", "heard_by": 3},
             'SAY      Asha#7: "Nice day." (heard by 3)'),
            ({"type": "say", "agent": 7, "name": "Asha", "text": "Leave.", "heard_by": 1,
              "to": 9, "to_name": "Bram"},
             'SAY      Asha#7 to Bram#9: "Leave." (heard by 1)')],
    "gift": [({"type": "gift", "agent": 7, "name": "Asha", "target": 9, "target_name": "Bram",
               "item": "berries", "qty": 2},
              "GIFT     Asha#7 gives 2 berries to Bram#9")],
    "team_say": [({"type": "team_say", "agent": 7, "name": "Asha", "team": "red",
                   "text": "hold the north point", "heard_by": 3},
                  "TEAM     Asha#7 to team red: \"hold the north point\" (heard by 3)")],
    "craft": [({"type": "craft", "agent": 7, "name": "Asha", "item": "spear",
                "inputs": {"club": 1, "stone": 1}, "value": 18.0},
               "CRAFT    Asha#7 makes a spear from 1 club, 1 stone")],
    "capture": [({"type": "capture", "point": 40, "team": "red", "previous": "blue",
                  "agents": [7, 9], "x": 12, "y": 30},
                 "CAPTURE  team red takes the point at (12, 30) from blue"),
                ({"type": "capture", "point": 40, "team": "red", "previous": "",
                  "agents": [7], "x": 12, "y": 30},
                 "CAPTURE  team red takes the point at (12, 30)")],
    "hazard": [({"type": "hazard", "agent": 7, "name": "Asha", "damage": 1.5, "x": 4, "y": 5},
                "HAZARD   Asha#7 is hurt for 1.5 at (4, 5)")],
    "price": [({"type": "price", "item": "club", "old": 8.729, "price": 8.222, "supply": 6,
                "demand": 1.0},
               "PRICE    club 8.729 -> 8.222 gold (supply 6, demand 1)")],
    "overrun": [({"type": "overrun", "late_tick": 7, "ms": 250.0, "budget_ms": 100.0},
                 "OVERRUN  tick 7 took 250 ms (budget 100 ms)")],
    "skipped": [({"type": "skipped", "ticks": 3, "ms": 312.5, "budget_ms": 100.0},
                 "SKIPPED  3 ticks: the loop fell 312.5 ms behind and started afresh (a tick "
                 "is 100 ms)")],
    "input_rejected": [({"type": "input_rejected", "seq": 4, "input": "give",
                         "source": "console", "reason": "unknown item 'cake'"},
                        "REJECTED input #4 (give from console): unknown item 'cake'")],
    "interview": [({"type": "interview", "agent": 3, "name": "Zed", "question": "how are you?",
                    "answer": "Hungry.", "interview": "i4-1"},
                   'ASKED    Zed#3 was asked "how are you?" and answered "Hungry."')],
    "played": [({"type": "played", "agent": 3, "name": "Zed", "player": "Ada"},
                "PLAYED   Ada takes control of Zed#3 (its brain is paused)")],
    "released": [({"type": "released", "agent": 3, "name": "Zed", "player": "Ada",
                   "reason": "no order for 300 s (web.play_idle_s)"},
                  "RELEASED Ada gives Zed#3 back to its brain (no order for 300 s "
                  "(web.play_idle_s))")],
    "spoken": [({"type": "spoken", "speaker": "Ada", "text": "hello there", "x": 4, "y": 5,
                 "heard_by": 2, "to": 3, "to_name": "Zed"},
                'SPOKEN   Ada (a person) to Zed#3: "hello there" (heard by 2)'),
               ({"type": "spoken", "speaker": "Ada", "text": "anyone?", "x": 4, "y": 5,
                 "heard_by": 0},
                'SPOKEN   Ada (a person): "anyone?" (heard by 0)')],
    "removed": [({"type": "removed", "target": 5, "what": "bread#5"},
                 "REMOVED  bread#5 by the operator")],
    "given": [({"type": "given", "target": 9, "target_name": "Bram", "item": "gold", "qty": 10},
               "GIVEN    the operator gives 10 gold to Bram#9")],
    "ability": [({"type": "ability", "agent": 7, "name": "Asha", "ability": "fire_bolt",
                  "effects": ["damage 8 to Bram#9", "message 'Burn!' (heard by 2)"]},
                 "ABILITY  Asha#7 uses fire_bolt: damage 8 to Bram#9; message 'Burn!' "
                 "(heard by 2)")],
    "ability_requested": [({"type": "ability_requested", "request": 2, "agent": 7,
                            "name": "Asha", "text": "let me fly"},
                           'REQUEST  Asha#7 asks the angel (request #2): "let me fly"')],
    "ability_accepted": [({"type": "ability_accepted", "ability": "fly", "description": "Fly.",
                           "origin": "angel", "sha256": "ab12", "request": 2, "agent": 7,
                           "name": "Asha"},
                          "NEW      ability fly (angel, for Asha#7): Fly."),
                         ({"type": "ability_accepted", "ability": "zap", "description": "Zap.",
                           "origin": "operator", "sha256": "cd34"},
                          "NEW      ability zap (operator): Zap.")],
    "ability_refused": [({"type": "ability_refused", "request": 2, "agent": 7,
                          "name": "Asha", "reason": "no acceptable ability after 3 tries"},
                         "REFUSED  the angel refused Asha#7 (request #2): no acceptable "
                         "ability after 3 tries")],
    "ability_disabled": [({"type": "ability_disabled", "ability": "spin", "agent": 7,
                           "name": "Asha", "reason": "was stopped: ran longer than 50 ms"},
                          "DISABLED ability spin (cast by Asha#7): was stopped: ran longer "
                          "than 50 ms")],
    "ability_enabled": [({"type": "ability_enabled", "ability": "spin"},
                         "ENABLED  ability spin by the operator")],
    "ability_killed": [({"type": "ability_killed", "ability": "spin", "agent": 7,
                         "name": "Zed", "reason": "ran longer than 50 ms of wall-clock time",
                         "strikes": 1, "limit": 3},
                        "KILLED   ability spin (cast by Zed#7) was stopped: ran longer than "
                        "50 ms of wall-clock time (strike 1 of 3)")],
    "ability_request_expired": [({"type": "ability_request_expired", "request": 2,
                                  "agent": 7},
                                 "EXPIRED  request #2 of agent #7 got no answer in time")],
    # routine: logged only with ``everything``; the viewer shows them on demand
    "pickup": [({"type": "pickup", "agent": 7, "name": "Asha", "item": "apple", "qty": 1},
                "PICKUP   Asha#7 picks up 1 apple")],
    "drop": [({"type": "drop", "agent": 7, "name": "Asha", "item": "stone", "qty": 2},
              "DROP     Asha#7 drops 2 stone")],
    "eat": [({"type": "eat", "agent": 7, "name": "Asha", "item": "apple", "hunger": 12.5},
             "EAT      Asha#7 eats an apple")],
    "use": [({"type": "use", "agent": 7, "name": "Asha", "item": "herb", "health": 80.0},
             "USE      Asha#7 uses a herb")],
    "harvest": [({"type": "harvest", "agent": 7, "name": "Asha", "object": "berry_bush",
                  "item": "berries"}, "HARVEST  Asha#7 gathers berries from a berry bush")],
    "action_failed": [({"type": "action_failed", "agent": 7, "name": "Asha", "action": "eat",
                        "reason": "no food carried"},
                       "FAILED   Asha#7 could not eat: no food carried")],
    "trade_offer": [({"type": "trade_offer", "agent": 7, "name": "Asha", "target": 9,
                      "target_name": "Bram", "offer": 3, "give": {"wood": 2},
                      "want": {"gold": 5}},
                     "OFFER    Asha#7 offers 2 wood to Bram#9 for 5 gold")],
    "trade_declined": [({"type": "trade_declined", "agent": 9, "name": "Bram", "target": 7,
                         "target_name": "Asha", "offer": 3},
                        "DECLINED Bram#9 declines offer #3 of Asha#7")],
    "trade_expired": [({"type": "trade_expired", "offer": 3, "agent": 7, "target": 9},
                       "EXPIRED  offer #3 of agent #7 to agent #9 expired")],
    "defend": [({"type": "defend", "agent": 7, "name": "Asha"}, "DEFEND   Asha#7 raises a guard")],
    "spoiled": [({"type": "spoiled", "agent": 7, "name": "Asha", "goods": {"berries": 2}},
                 "SPOILED  Asha#7's 2 berries spoiled")],
    "census": [({"type": "census", "agents": 20, "gold_total": 300,
                 "by_personality": {"trader": 20}},
                "CENSUS   agents 20, gold total 300")],
}

CASES = [case for cases in EXAMPLES.values() for case in cases]


def test_every_known_type_has_an_example() -> None:
    assert set(EXAMPLES) == set(_FORMATS)


@pytest.mark.parametrize(("event", "expected"), CASES,
                         ids=[f"{e['type']}-{i}" for i, (e, _) in enumerate(CASES)])
def test_known_events_use_their_fixed_phrase(event: Event, expected: str) -> None:
    line = format_event(event)
    assert line == expected
    assert "=" not in line.replace("->", "")  # not the key=value fallback


# -- the fallback -----------------------------------------------------------------------------


def test_a_sentence_is_the_line_without_its_tag() -> None:
    for event, expected in CASES:
        assert worldlog.sentence(event) == expected[worldlog.TAG_WIDTH + 1:]
    assert worldlog.sentence({"type": "state_hash", "kind": "check", "hash": "ab"}) == \
        "state_hash: hash=ab"
    assert worldlog.sentence({"kind": "input", "type": "kill", "source": "web",
                              "data": {"target": 3}}) == "web: kill target 3"
    assert worldlog.sentence({"kind": "input", "type": "plan", "source": "web", "data": {
        "agent": 61, "source": "console", "actions": [
            {"name": "say", "args": {"text": "hi"}}, {"name": "rest", "args": {}}]}}) == \
        'web: plan for agent #61: say "hi", then rest'


def test_unknown_type_falls_back_to_key_value() -> None:
    line = format_event({"type": "weather", "tick": 5, "kind": "rain", "hours": 3})
    assert line == "WEATHER  kind=rain hours=3"
    assert format_event({"a": 1}) == "EVENT    a=1"


MALFORMED: list[Event] = [
    {"type": "attack", "agent": 7},  # missing fields
    {"type": "attack", "agent": 7, "name": "Asha", "target": 9, "target_name": "Bram",
     "damage": "lots", "health": 94.0},  # a string where a number belongs
    {"type": "price", "item": "club", "old": None, "price": 8.2, "supply": 6, "demand": 1.0},
    {"type": "spawn"},
    {"type": "trade", "agent": 7, "name": "Asha", "target": 9, "target_name": "Bram",
     "give": ["wood"], "want": {"gold": 5}},  # a list where a mapping belongs
    {"type": "death", "agent": 7, "name": "Asha", "personality": "trader", "cause": "wounds",
     "x": 3, "y": 4, "age": 10, "dropped": ["berries"]},
    {"type": "say", "agent": 7, "name": "Asha", "heard_by": 1},  # no text
]


@pytest.mark.parametrize("event", MALFORMED, ids=lambda e: str(e["type"]))
def test_malformed_known_events_fall_back_and_never_raise(event: Event) -> None:
    line = format_event(event)
    assert line.startswith(str(event["type"]).upper())
    assert "agent=7" in line or "item=club" in line or line.strip() == "SPAWN"


@pytest.mark.parametrize("event", MALFORMED, ids=lambda e: str(e["type"]))
def test_a_malformed_event_does_not_stop_the_log(tmp_path: Path, logs: list[WorldLog],
                                                 event: Event) -> None:
    path = tmp_path / "world.log"
    log, flushes = open_log(logs, path)
    tick(log, flushes, 1, event)
    tick(log, flushes, 2, say(2))
    log.close()
    lines = texts(read_lines(path))
    assert [t for t, _ in lines] == [1, 2]
    assert lines[1][1].startswith("SAY")


# -- what gets logged -------------------------------------------------------------------------


def test_one_stamped_line_per_notable_event(tmp_path: Path, logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    log, flushes = open_log(logs, path)
    spawn, attack = EXAMPLES["spawn"][0], EXAMPLES["attack"][0]
    tick(log, flushes, 123, spawn[0], attack[0])
    log.on_tick(TickReport(tick=124, inputs=[], events=[]))  # nothing happened: no line
    tick(log, flushes, 9_999_999, EXAMPLES["gift"][0][0])
    log.close()
    lines = read_lines(path)
    assert [line.split(" ", 2)[2] for line in lines] == [
        f"t=0000123 {spawn[1]}", f"t=0000123 {attack[1]}",
        f"t=9999999 {EXAMPLES['gift'][0][1]}",
    ]


def test_every_example_is_written_through_the_log(tmp_path: Path,
                                                  logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    log, _ = open_log(logs, path)
    for i, (event, _) in enumerate(CASES):
        log.on_tick(TickReport(tick=i + 1, inputs=[], events=[event]))
    log.close()
    assert texts(read_lines(path)) == [(i + 1, expected) for i, (event, expected) in
                                       enumerate(CASES) if event["type"] not in ROUTINE]


ROUTINE_EVENTS: list[Event] = [
    {"type": "pickup", "agent": 7, "name": "Asha", "item": "apple", "qty": 1},
    {"type": "harvest", "agent": 7, "name": "Asha", "object": "tree", "item": "wood"},
    {"type": "eat", "agent": 7, "name": "Asha", "item": "apple", "hunger": 12.5},
    {"type": "action_failed", "agent": 7, "name": "Asha", "action": "eat",
     "reason": "no food carried"},
    {"type": "trade_offer", "agent": 7, "name": "Asha", "target": 9, "target_name": "Bram",
     "offer": 3, "give": {"wood": 2}, "want": {"gold": 5}},
    {"type": "trade_declined", "agent": 9, "name": "Bram", "target": 7, "target_name": "Asha",
     "offer": 3},
    {"type": "trade_expired", "offer": 3, "agent": 7, "target": 9},
    {"type": "defend", "agent": 7, "name": "Asha"},
    {"type": "use", "agent": 7, "name": "Asha", "item": "herb", "health": 80.0},
    {"type": "drop", "agent": 7, "name": "Asha", "item": "stone", "qty": 2},
    {"type": "census", "agents": 20, "gold_total": 300},
    {"type": "spoiled", "agent": 7, "name": "Asha", "goods": {"berries": 2}},
]


def test_routine_examples_cover_every_routine_type() -> None:
    assert {e["type"] for e in ROUTINE_EVENTS} == ROUTINE


def test_routine_events_are_skipped(tmp_path: Path, logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    log, flushes = open_log(logs, path)
    death = EXAMPLES["death"][0]
    tick(log, flushes, 5, *ROUTINE_EVENTS, death[0])
    log.close()
    assert texts(read_lines(path)) == [(5, death[1])]


def test_everything_logs_routine_events_too(tmp_path: Path, logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    log, flushes = open_log(logs, path, everything=True)
    tick(log, flushes, 5, *ROUTINE_EVENTS)
    log.close()
    lines = texts(read_lines(path))
    assert [text for _, text in lines] == [format_event(e) for e in ROUTINE_EVENTS]
    assert lines[0] == (5, "PICKUP   Asha#7 picks up 1 apple")


def test_notes_are_logged_verbatim(tmp_path: Path, logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    log, _ = open_log(logs, path)
    log.note(0, "world 'default' running from tick 0 (seed 3)")
    log.note(42, "world 'default' stopped at tick 42")
    log.close()
    assert texts(read_lines(path)) == [(0, "world 'default' running from tick 0 (seed 3)"),
                                       (42, "world 'default' stopped at tick 42")]


def test_close_flushes_everything(tmp_path: Path) -> None:
    path = tmp_path / "deeper" / "logs" / "world.log"  # folders are created as needed
    log = WorldLog(path)
    for n in range(1, 2001):
        log.on_tick(TickReport(tick=n, inputs=[], events=[say(n)]))
    log.close()
    assert [t for t, _ in texts(read_lines(path))] == list(range(1, 2001))
    assert log.stats() == {"lines_written": 2000, "lines_dropped": 0, "backlog": 0,
                           "error": None}


def test_echo_gets_the_same_lines(tmp_path: Path, logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    echo = io.StringIO()
    log, flushes = open_log(logs, path, echo=echo)
    tick(log, flushes, 1, say(1))
    tick(log, flushes, 2, say(2))
    assert echo.getvalue() == path.read_text(encoding="utf-8")
    echo.close()  # the terminal goes away: the file still gets every line
    tick(log, flushes, 3, say(3))
    log.close()
    assert [t for t, _ in texts(read_lines(path))] == [1, 2, 3]


# -- rotation ---------------------------------------------------------------------------------


def all_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + "*"))


def test_rotation_keeps_n_backups_of_complete_lines(tmp_path: Path,
                                                    logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    max_bytes = 400
    log, flushes = open_log(logs, path, max_bytes=max_bytes, backups=3)
    for n in range(1, 61):
        tick(log, flushes, n, *[say(n, f"line {k} of tick")
                                for k in range(1 + n % 3)])  # 1..3 lines per batch
    log.close()
    names = [p.name for p in all_files(path)]
    assert [n for n in names if n != "world.log"] == ["world.log.1", "world.log.2",
                                                      "world.log.3"]
    ordered = [path.with_name("world.log.3"), path.with_name("world.log.2"),
               path.with_name("world.log.1"), path]
    if not path.exists():  # the last batch itself was rotated away
        ordered.pop()
    batches: dict[int, set[str]] = {}
    all_lines: list[tuple[int, str]] = []
    for file in ordered:
        lines = read_lines(file)  # complete, well-formed lines only
        size = file.stat().st_size
        if file != path:
            last_batch = [ln for ln in lines if ln.split(" ")[2] == lines[-1].split(" ")[2]]
            # rotated as soon as a batch took the file to max_bytes, not later
            assert size >= max_bytes
            assert size - sum(len(ln) + 1 for ln in last_batch) < max_bytes
        else:
            assert size < max_bytes
        for t, _ in texts(lines):
            batches.setdefault(t, set()).add(file.name)
        all_lines.extend(texts(lines))
    # no batch is split between two files
    assert all(len(files) == 1 for files in batches.values())
    # the files hold the newest lines, contiguous and in order, ending with the last tick
    ticks = sorted(batches)
    assert ticks == list(range(ticks[0], 61))
    assert [t for t, _ in all_lines] == sorted(t for t, _ in all_lines)
    expected = [(n, f"SAY      Asha#7: \"line {k} of tick ({n})\" (heard by 2)")
                for n in range(ticks[0], 61) for k in range(1 + n % 3)]
    assert all_lines == expected


def test_rotation_with_zero_backups_keeps_no_old_file(tmp_path: Path,
                                                      logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    max_bytes = 400
    log, flushes = open_log(logs, path, max_bytes=max_bytes, backups=0)
    for n in range(1, 41):
        tick(log, flushes, n, say(n))
        assert [p.name for p in all_files(path)] in (["world.log"], [])
        if path.exists():
            assert path.stat().st_size < max_bytes
            assert [t for t, _ in texts(read_lines(path))][-1] == n
    log.close()


def test_rotation_with_one_backup(tmp_path: Path, logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    log, flushes = open_log(logs, path, max_bytes=400, backups=1)
    for n in range(1, 42):
        tick(log, flushes, n, say(n))
    log.close()
    assert [p.name for p in all_files(path)] in (["world.log", "world.log.1"], ["world.log.1"])
    backup = [t for t, _ in texts(read_lines(path.with_name("world.log.1")))]
    current = [t for t, _ in texts(read_lines(path))] if path.exists() else []
    assert backup + current == list(range(backup[0], 42))


def test_a_failed_rotation_does_not_duplicate_lines(tmp_path: Path,
                                                    logs: list[WorldLog]) -> None:
    path = tmp_path / "world.log"
    in_the_way = tmp_path / "world.log.1"
    in_the_way.mkdir()  # the backup's name is taken by a folder: renaming fails
    log, flushes = open_log(logs, path, max_bytes=400, backups=1)
    for n in range(1, 21):
        tick(log, flushes, n, say(n))
    ticks = [t for t, _ in texts(read_lines(path))]
    assert sorted(set(ticks)) == list(range(1, 21))
    assert len(ticks) == 20, f"{len(ticks)} lines written for 20 events"
    in_the_way.rmdir()
    tick(log, flushes, 21, say(21))
    log.close()


# -- write errors -----------------------------------------------------------------------------


def test_write_error_is_reported_once_and_lines_are_kept(
        tmp_path: Path, logs: list[WorldLog], capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "logs"
    blocker.write_text("a file where the log folder should be\n", encoding="utf-8")
    path = blocker / "world.log"
    log, flushes = open_log(logs, path)

    tick(log, flushes, 1, say(1))  # on_tick never raises, whatever the writer meets
    tick(log, flushes, 2, say(2), EXAMPLES["gift"][0][0])
    err = capsys.readouterr().err
    assert err.count("world log: cannot write") == 1
    assert str(path) in err
    assert log.stats()["lines_written"] == 0
    assert log.stats()["backlog"] == 3
    assert log.stats()["error"] is not None

    blocker.unlink()  # the path becomes writable
    tick(log, flushes, 3, say(3))
    err = capsys.readouterr().err
    assert "cannot write" not in err
    assert err.count(f"world log: writing {path} again") == 1
    assert [t for t, _ in texts(read_lines(path))] == [1, 2, 2, 3]
    assert log.stats() == {"lines_written": 4, "lines_dropped": 0, "backlog": 0,
                           "error": None}
    log.close()
    assert [t for t, _ in texts(read_lines(path))] == [1, 2, 2, 3]


def test_dropped_lines_are_counted_truly(tmp_path: Path, logs: list[WorldLog],
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(worldlog, "MAX_BACKLOG_LINES", 5)
    blocker = tmp_path / "logs"
    blocker.write_text("not a folder\n", encoding="utf-8")
    path = blocker / "world.log"
    log, flushes = open_log(logs, path)
    sent = 0
    for n, count in ((1, 8), (2, 1), (3, 1)):
        tick(log, flushes, n, *[say(n, f"event {k}") for k in range(count)])
        sent += count
    blocker.unlink()
    tick(log, flushes, 4, say(4))
    sent += 1
    log.close()
    capsys.readouterr()
    text = path.read_text(encoding="utf-8")
    event_lines = [ln for ln in text.splitlines() if LINE.match(ln)]
    markers = [int(m) for m in re.findall(r"dropped (\d+) lines", text)]
    missing = sent - len(event_lines)
    assert missing > 0
    assert sum(markers) == missing, f"markers say {markers}, {missing} lines are missing"
    assert log.stats()["lines_dropped"] == missing


def test_control_characters_never_reach_a_log_line_or_the_terminal(
        tmp_path: Path, logs: list[WorldLog]) -> None:
    """Whatever outside text an event carries (a name from an old save, a note quoting a
    brain's error), ESC, BEL, NUL and backspace are written as escapes and line breaks as
    spaces, in the file and on the echo alike."""
    path, echo = tmp_path / "world.log", io.StringIO()
    log, flushes = open_log(logs, path, echo=echo)
    tick(log, flushes, 7, {"type": "note", "text": "a\x1b[2Jb\x07c\x00d\x08e\nf"})
    log.close()
    (line,) = read_lines(path)
    assert line.endswith("t=0000007 a\\x1b[2Jb\\x07c\\x00d\\x08e f")
    assert echo.getvalue().strip().endswith("a\\x1b[2Jb\\x07c\\x00d\\x08e f")
