"""The rules one cast runs under: caps on the whole cast, a floor under every cooldown, and
strikes for killed calls (a wall-clock kill fails its cast; only a run of them disables);
and the old rules, kept by every world saved before these settings existed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from ability_helpers import FakeRunner, PinnedRunner, cast, returns, scripted, spec, staged
from helpers import STAY, add_agent, give_plan, of_type, run
from persistence_helpers import saving_config

from agent_world.app import Session
from agent_world.config import AbilitiesConfig, Config
from agent_world.core import components as c
from agent_world.core.abilities import AbilityBook
from agent_world.core.rules import missing_settings
from agent_world.core.world import World
from agent_world.persistence import SaveFolder, open_world, replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.sandbox.host import load_builtins
from agent_world.types import ABILITY_KILLED, ABILITY_OK, AbilityResult, Event, TickReport

KILLED = AbilityResult(status=ABILITY_KILLED, reason="ran longer than 50 ms")
DONE = AbilityResult(status=ABILITY_OK, effects=[])
NEW_RULES = ("caps", "min_cooldown_ticks", "kills_to_disable")


def _resolve(effects: Sequence[Mapping[str, Any]], ids: Mapping[str, int]) -> list[dict]:
    """Effects with the placeholders C (caster), T and U (two other agents) made ids."""
    return [{k: ids.get(v, v) if isinstance(v, str) and k in ("target", "to") else v
             for k, v in e.items()} for e in effects]


def _cast_once(effects: Sequence[Mapping[str, Any]], rules: Mapping[str, Any] | None = None,
               ) -> tuple[World, dict[str, int], list[Event]]:
    """One cast of an ability returning ``effects``: the world, the ids and the events."""
    w, caster, target = staged(None, rules=rules)
    other = add_agent(w, "Uma", 6, 6, health=50.0)
    give_plan(w, other, STAY)
    ids = {"C": caster, "T": target, "U": other}
    w.abilities.runner = FakeRunner(returns(*_resolve(effects, ids)))
    w.abilities.add(spec("odd", range_=3))
    give_plan(w, caster, cast("odd"))
    return w, ids, run(w, 1)


def _bodies(w: World) -> list[Any]:
    """What a refused cast must leave alone: every agent's needs, goods, place and statuses."""
    return [(w.store.get(eid, c.Needs), w.store.get(eid, c.Inventory).items,
             w.store.get(eid, c.Position), w.abilities.statuses_of(eid, w.tick))
            for eid, _row in w.agents()]


# -- caps apply to the whole cast --------------------------------------------------------------

DAMAGE_30 = {"type": "damage", "target": "T", "amount": 30}
BREAD_3 = {"type": "create_item", "item": "bread", "qty": 3}

OVER_THE_CAP: dict[str, tuple[list[dict[str, Any]], str]] = {
    "damage-8x30": ([DAMAGE_30] * 8,
                    "damage 240 in one cast exceeds the cap of 30 per cast "
                    "(abilities.max_damage)"),
    "damage-two-targets": ([{"type": "damage", "target": "T", "amount": 20},
                            {"type": "damage", "target": "U", "amount": 20}],
                           "damage 40 in one cast exceeds the cap of 30 per cast "
                           "(abilities.max_damage)"),
    "heal": ([{"type": "heal", "target": "C", "amount": 20},
              {"type": "heal", "target": "T", "amount": 20}],
             "heal 40 in one cast exceeds the cap of 30 per cast (abilities.max_heal)"),
    "bread-8x3": ([BREAD_3] * 8,
                  "created items 24 in one cast exceeds the cap of 3 per cast "
                  "(abilities.max_created_items)"),
    "items-to-two-agents": ([{"type": "create_item", "item": "apple", "qty": 2, "to": "T"},
                             {"type": "create_item", "item": "wood", "qty": 2}],
                            "created items 4 in one cast exceeds the cap of 3 per cast"),
    "need": ([{"type": "need", "target": "T", "need": "energy", "delta": 20},
              {"type": "need", "target": "U", "need": "energy", "delta": -20}],
             "energy change 40 in one cast exceeds the cap of 30 per cast "
             "(abilities.max_need_change)"),
    "push": ([{"type": "push", "target": "T", "tiles": 2},
              {"type": "push", "target": "U", "tiles": 2}],
             "push tiles 4 in one cast exceeds the cap of 3 per cast "
             "(abilities.max_push_tiles)"),
    "status": ([{"type": "status", "target": "T", "status": "root", "ticks": 200}] * 2,
               "root on Tig#2 for 400 ticks in one cast exceeds the cap of 300 per cast "
               "(abilities.max_status_ticks)"),
    "two-moves": ([{"type": "move", "x": 6, "y": 5}, {"type": "move", "x": 7, "y": 6}],
                  "2 moves in one cast; a cast may move its caster once"),
}


@pytest.mark.parametrize("case", list(OVER_THE_CAP))
def test_a_cast_over_a_cap_in_total_is_refused_whole_naming_the_cap(case) -> None:
    effects, message = OVER_THE_CAP[case]
    w, ids, events = _cast_once(effects)
    (failed,) = [e for e in of_type(events, "action_failed") if e["agent"] == ids["C"]]
    assert message in failed["reason"]
    assert not of_type(events, "ability")
    reference, _, _ = _cast_once([])  # the same tick with a cast that does nothing
    assert _bodies(w) == _bodies(reference)
    assert "odd" not in w.abilities.disabled  # the world refused; the ability is not broken


WITHIN_THE_CAPS: dict[str, list[dict[str, Any]]] = {
    "damage-split": [{"type": "damage", "target": "T", "amount": 15},
                     {"type": "damage", "target": "U", "amount": 15}],
    "heal-split": [{"type": "heal", "target": "T", "amount": 10}] * 3,
    "items-split": [{"type": "create_item", "item": "bread", "qty": 2},
                    {"type": "create_item", "item": "apple", "qty": 1, "to": "T"}],
    "each-need-apart": [{"type": "need", "target": "T", "need": "energy", "delta": 30},
                        {"type": "need", "target": "T", "need": "hunger", "delta": -30}],
    "push-split": [{"type": "push", "target": "T", "tiles": 1},
                   {"type": "push", "target": "U", "tiles": 2}],
    "status-per-target": [{"type": "status", "target": "T", "status": "root", "ticks": 300},
                          {"type": "status", "target": "U", "status": "root", "ticks": 300},
                          {"type": "status", "target": "T", "status": "slow", "ticks": 300}],
    "one-move": [{"type": "move", "x": 6, "y": 4}],
}


@pytest.mark.parametrize("case", list(WITHIN_THE_CAPS))
def test_a_cast_within_its_caps_takes_effect(case) -> None:
    _w, ids, events = _cast_once(WITHIN_THE_CAPS[case])
    (done,) = of_type(events, "ability")
    assert done["agent"] == ids["C"] and len(done["effects"]) == len(WITHIN_THE_CAPS[case])


def test_thirty_casts_of_eight_bread_effects_make_no_bread() -> None:
    runner = FakeRunner(returns(*[BREAD_3] * 8))
    w, caster, _ = staged(runner, spec("bakery"))
    for _ in range(30):
        give_plan(w, caster, cast("bakery"))
        run(w, 1)
    assert len(runner.calls) == 30  # a refused cast starts no cooldown: nothing happened
    assert w.store.get(caster, c.Inventory).count("bread") == 0
    assert w.counters["ability_casts_refused"] == 30
    assert "ability_casts" not in w.counters


# -- a floor under every cooldown --------------------------------------------------------------


def test_cooldown_zero_cannot_cast_every_tick() -> None:
    runner = FakeRunner(returns({"type": "create_item", "item": "bread", "qty": 3}))
    w, caster, _ = staged(runner, spec("oven", cooldown=0))
    for _ in range(30):
        give_plan(w, caster, cast("oven"))
        run(w, 1)
    assert w.ability_rules.min_cooldown_ticks == 10
    assert w.counters["ability_casts"] == 3
    assert w.store.get(caster, c.Inventory).count("bread") == 9
    assert w.abilities.cooldowns[caster]["oven"] == 31


def test_a_longer_cooldown_than_the_floor_is_kept() -> None:
    w, caster, _ = staged(FakeRunner(returns()), spec("slowpoke", cooldown=25))
    give_plan(w, caster, cast("slowpoke"))
    run(w, 1)
    assert w.abilities.cooldowns[caster]["slowpoke"] == 26


def test_the_catalog_and_the_call_show_the_cooldown_that_applies() -> None:
    runner = FakeRunner(returns())
    w, caster, _ = staged(runner, spec("quick", cooldown=2), spec("patient", cooldown=40))
    quick, patient = w.abilities.catalog()
    assert (quick["cooldown"], quick["declared_cooldown"]) == (10, 2)
    assert patient["cooldown"] == 40 and "declared_cooldown" not in patient
    give_plan(w, caster, cast("quick"))
    run(w, 1)
    assert runner.calls[0].ctx["ability"]["cooldown"] == 10


# -- every built-in ability fits the caps at its worst -------------------------------------------

BUILTIN_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "build_shelter": ("build_shelter", {"x": 3, "y": 5}),
    "dash": ("dash", {"x": 10, "y": 10}),
    "dash-blocked": ("dash", {"x": 6, "y": 4}),  # the tree's tile
    "fire_bolt": ("fire_bolt", {"target": "T"}),
    "forage": ("forage", {}),
    "harvest": ("harvest", {"target": "tree"}),
    "harvest-nothing": ("harvest", {"target": "rock"}),
    "haste": ("haste", {}),
    "heal-other": ("heal", {"target": "T"}),
    "heal-self": ("heal", {}),
    "proclaim": ("proclaim", {"text": "x" * 160}),
    "rally": ("rally", {}),
    "shield": ("shield", {}),
    "shove": ("shove", {"target": "A"}),
}


def test_every_built_in_ability_is_covered() -> None:
    assert {name for name, _ in BUILTIN_CASES.values()} == {s.name for s in load_builtins()}


@pytest.mark.parametrize("case", list(BUILTIN_CASES))
def test_a_built_in_ability_takes_effect_at_its_worst_case(case) -> None:
    """Its random numbers pinned high, and as many agents around as rally can touch."""
    name, args = BUILTIN_CASES[case]
    runner = PinnedRunner()
    w, caster, target = staged(runner)
    for builtin in load_builtins():
        w.abilities.install_builtin(builtin)
    ids = {"T": target, "tree": w.spawn_object("tree", 6, 4),
           "rock": w.spawn_object("rock", 4, 6),
           "A": add_agent(w, "Ada", 6, 5), "B": add_agent(w, "Bo", 5, 7),
           "D": add_agent(w, "Di", 4, 4)}
    w.store.get(ids["rock"], c.StaticObject).stock = 0
    for eid in (ids["A"], ids["B"], ids["D"]):
        give_plan(w, eid, STAY)
    give_plan(w, caster, cast(name, **{k: ids.get(v, v) for k, v in args.items()}))
    events = run(w, 1)
    assert len(runner.calls) == 1
    assert not [e for e in of_type(events, "action_failed") if e["agent"] == caster]
    (done,) = of_type(events, "ability")
    assert done["ability"] == name
    if name == "rally":
        assert len(done["effects"]) == w.ability_rules.max_effects  # 4 heals, 3 lifts, a word
    if name == "forage":
        assert w.store.get(caster, c.Inventory).count("berries") == 2


# -- strikes: a killed call fails its cast; a run of them disables ------------------------------


def _cast_each_tick(w: World, caster: int, name: str, ticks: int) -> list[Event]:
    events: list[Event] = []
    for _ in range(ticks):
        give_plan(w, caster, cast(name))
        events.extend(run(w, 1))
    return events


def test_two_kills_then_a_completed_call_clear_the_count() -> None:
    runner = FakeRunner(scripted(KILLED, KILLED, DONE, KILLED, KILLED))
    w, caster, _ = staged(runner, spec("flaky"), rules={"min_cooldown_ticks": 0})
    events = _cast_each_tick(w, caster, "flaky", 2)
    assert w.abilities.strikes == {"flaky": 2}
    reasons = [e["reason"] for e in of_type(events, "action_failed")]
    assert reasons[0].startswith("flaky was stopped: ran longer than 50 ms (1 of 3 killed "
                                 "calls in a row disable it: abilities.kills_to_disable)")
    assert [e["strikes"] for e in of_type(events, "ability_killed")] == [1, 2]
    _cast_each_tick(w, caster, "flaky", 1)
    assert w.abilities.strikes == {}
    _cast_each_tick(w, caster, "flaky", 2)
    assert w.abilities.strikes == {"flaky": 2}
    assert "flaky" not in w.abilities.disabled
    assert len(runner.calls) == 5


def test_kills_to_disable_kills_in_a_row_disable_the_ability() -> None:
    runner = FakeRunner(lambda call: KILLED)
    w, caster, _ = staged(runner, spec("spin"))
    events = _cast_each_tick(w, caster, "spin", 4)
    assert w.ability_rules.kills_to_disable == 3
    (disabled,) = of_type(events, "ability_disabled")
    assert disabled["tick"] == 3
    assert disabled["reason"] == ("was stopped: ran longer than 50 ms (3 killed calls in a "
                                  "row; abilities.kills_to_disable is 3)")
    assert len(runner.calls) == 3  # the fourth cast finds it disabled
    assert of_type(events, "action_failed")[-1]["reason"].startswith("spin is disabled")
    assert w.abilities.strikes == {}  # a disabled ability starts afresh when re-enabled


def test_an_error_still_disables_at_once_and_clears_the_strikes() -> None:
    broken = AbilityResult(status="error", reason="limit: step budget of 20000 steps spent")
    w, caster, _ = staged(FakeRunner(scripted(KILLED, broken)), spec("spin"),
                          rules={"min_cooldown_ticks": 0})
    _cast_each_tick(w, caster, "spin", 2)
    assert w.abilities.disabled["spin"] == "failed: limit: step budget of 20000 steps spent"
    assert w.abilities.strikes == {}


def test_the_strikes_survive_a_save_and_load_through_a_json_file(tmp_path: Path) -> None:
    w, caster, _ = staged(FakeRunner(lambda call: KILLED), spec("spin"))
    _cast_each_tick(w, caster, "spin", 2)
    path = tmp_path / "state.json"
    path.write_bytes(w.state_bytes())
    again = World.from_state(json.loads(path.read_text()))
    assert again.abilities.strikes == {"spin": 2}
    assert again.state_hash() == w.state_hash()
    for world in (w, again):
        world.abilities.runner = FakeRunner(lambda call: KILLED)
        _cast_each_tick(world, caster, "spin", 1)
        assert "spin" in world.abilities.disabled
    assert again.state_hash() == w.state_hash()
    book = AbilityBook(AbilitiesConfig())
    book.set_state(json.loads(json.dumps({**w.abilities.get_state(), "strikes": {"x": 2}})))
    assert book.strikes == {"x": 2}
    assert json.loads(json.dumps(book.get_state()))["strikes"] == {"x": 2}


def _casting_run(config: Config, casts: dict[int, int], runner: FakeRunner) -> tuple[str, int]:
    """A saved run where agent 1 casts ``flaky`` at the given ticks; its hash and tick."""
    opened = open_world(config, setup=lambda world: setattr(world.abilities, "runner", runner))
    session = Session(config, opened.world, folder=opened.folder)
    world = session.world
    flaky = spec("flaky")
    world.inbox.submit("ability", {"name": "flaky", "source": flaky.source,
                                   "sha256": flaky.digest, "meta": flaky.meta.to_dict(),
                                   "request": 0, "origin": "operator"})
    caster = world.agents()[0][0]
    assert caster in casts.values()

    async def drive() -> None:
        for _ in range(70):
            if world.tick in casts:
                give_plan(world, casts[world.tick], cast("flaky"))
            await session.loop.run(max_ticks=1, paced=False)

    try:
        asyncio.run(drive())
        return world.state_hash(), world.tick
    finally:
        session.close()


def test_a_replay_from_the_log_disables_at_the_same_tick(tmp_path: Path) -> None:
    config = saving_config(tmp_path).replace(world={"personality_mix": {
        "aggressive": 0, "cautious": 1, "gatherer": 0, "trader": 0}})
    live = FakeRunner(scripted(KILLED, DONE, KILLED, KILLED, KILLED))
    probe = World.create(config)
    caster = probe.agents()[0][0]
    probe.close()
    casts = dict.fromkeys((2, 14, 26, 38, 50, 62), caster)
    live_hash, live_tick = _casting_run(config, casts, live)
    assert len(live.calls) == 5  # the sixth cast found it disabled

    folder = SaveFolder.open(tmp_path / "saves" / "w")
    start = load_first_snapshot(folder, config)
    fresh = FakeRunner(returns())  # answers only what the log does not hold
    start.world.abilities.runner = fresh
    disabled: list[int] = []

    def watch(report: TickReport) -> None:
        disabled.extend(report.tick for e in report.events if e["type"] == "ability_disabled")

    result = replay(start.world, folder, on_tick=watch)
    assert result.checks > 0 and start.world.tick == live_tick
    assert disabled == [51]  # casts at ticks 3, 15, 27, 39, 51: killed, done, then three kills
    assert len(fresh.calls) == 1
    assert start.world.state_hash() == live_hash
    start.world.close()


# -- worlds saved before these settings keep the old rules -------------------------------------


def test_the_new_settings_have_legacy_values_that_reproduce_the_old_rules() -> None:
    legacy = missing_settings("abilities", 1)
    assert {k: legacy[k] for k in NEW_RULES} == {"caps": "effect", "min_cooldown_ticks": 0,
                                                 "kills_to_disable": 1}
    new = Config().abilities
    assert (new.caps, new.min_cooldown_ticks, new.kills_to_disable) == ("cast", 10, 3)


def _as_saved_before(w: World) -> bytes:
    old = json.loads(w.state_bytes())
    for key in NEW_RULES:
        del old["config"]["abilities"][key]
    return json.dumps(old, separators=(",", ":")).encode()


def test_a_state_saved_without_the_new_settings_loads_with_the_old_rules() -> None:
    w, caster, target = staged(None, spec("odd"), spec("spin"))
    run(w, 3)
    saved = _as_saved_before(w)
    old = World.from_state(json.loads(saved))
    assert old.state_bytes() == saved  # its hash, and so its logged hashes, still hold
    rules = old.ability_rules
    assert (rules.caps, rules.min_cooldown_ticks, rules.kills_to_disable) == ("effect", 0, 1)
    assert "declared_cooldown" not in old.abilities.catalog()[0]
    again = World.from_state(json.loads(old.state_bytes()))
    assert again.state_hash() == old.state_hash()

    # Per-effect caps: two blows of 20 land.
    two_blows = [{"type": "damage", "target": target, "amount": 20}] * 2
    old.abilities.runner = FakeRunner(returns(*two_blows))
    _cast_each_tick(old, caster, "odd", 1)
    assert old.store.get(target, c.Needs).health == 10.0
    # No floor under COOLDOWN 0: a cast every tick.
    old.abilities.runner = FakeRunner(returns())
    _cast_each_tick(old, caster, "odd", 1)
    assert old.counters["ability_casts"] == 2
    # The first kill disables, in the words it always had.
    old.abilities.runner = FakeRunner(lambda call: KILLED)
    events = _cast_each_tick(old, caster, "spin", 1)
    assert old.abilities.disabled["spin"] == "was stopped: ran longer than 50 ms"
    assert of_type(events, "action_failed")[0]["reason"] == \
        "spin was stopped: ran longer than 50 ms"
    assert "strikes" not in json.loads(old.state_bytes())["abilities"]


def test_a_new_world_runs_with_the_new_rules() -> None:
    w, caster, target = staged(None, spec("odd"))
    w.abilities.runner = FakeRunner(returns(
        *[{"type": "damage", "target": target, "amount": 20}] * 2))
    rules = w.ability_rules
    assert (rules.caps, rules.min_cooldown_ticks, rules.kills_to_disable) == ("cast", 10, 3)
    events = _cast_each_tick(w, caster, "odd", 1)
    assert "damage 40 in one cast exceeds" in of_type(events, "action_failed")[0]["reason"]
    again = World.from_state(json.loads(w.state_bytes()))
    assert again.ability_rules == w.ability_rules
