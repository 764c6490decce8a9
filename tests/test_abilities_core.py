"""The engine side of abilities, with a scripted runner: metadata, effects, casting, requests,
late outcome inputs and state. No worker processes here (see test_sandbox.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ability_helpers import FakeRunner, cast, returns, spec, staged, stay
from helpers import add_agent, give_plan, of_type, pos, run, small_world

from agent_world.core import components as c
from agent_world.core.abilities import AbilityBook, AbilityError, AbilityMeta, ability_seed
from agent_world.core.effects import MalformedEffects, parse_effects
from agent_world.core.world import World
from agent_world.types import (
    ABILITY_ERROR,
    ABILITY_KILLED,
    ABILITY_POSTPONED,
    AbilityResult,
    Input,
)

# -- metadata ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("changes", "message"), [
    ({"name": "Heal"}, "NAME must be"),
    ({"name": "x"}, "NAME must be"),
    ({"description": ""}, "DESCRIPTION must be"),
    ({"energy_cost": float("nan")}, "ENERGY_COST"),
    ({"energy_cost": True}, "ENERGY_COST"),
    ({"cooldown": 1.5}, "COOLDOWN"),
    ({"range": -1}, "RANGE"),
    ({"args": {"victim": "agent"}}, "unknown argument 'victim'"),
    ({"args": {"target": "tile"}}, "ARGS['target'] must be one of"),
    ({"args": {"x": "int"}}, "declare x and y together"),
    ({"args": ["target"]}, "ARGS must be a dict"),
])
def test_metadata_is_checked_and_the_error_names_the_field(changes, message) -> None:
    fields = {"name": "heal", "description": "d", "energy_cost": 1, "cooldown": 0,
              "range": 1, "args": {}} | changes
    with pytest.raises(AbilityError, match=re.escape(message)):
        AbilityMeta(**fields)


def test_metadata_round_trips_and_knows_optional_arguments() -> None:
    meta = AbilityMeta(name="heal", description="d", energy_cost=2, cooldown=3, range=1,
                       args={"target": "agent?", "text": "text"})
    assert AbilityMeta.from_dict(meta.to_dict()) == meta
    assert meta.required() == ["text"]
    assert meta.kind("target") == "agent"


def test_the_seed_of_a_call_is_stable_and_differs_by_every_part() -> None:
    seeds = {ability_seed(1, 2, 3, "a"), ability_seed(2, 2, 3, "a"),
             ability_seed(1, 3, 3, "a"), ability_seed(1, 2, 4, "a"), ability_seed(1, 2, 3, "b")}
    assert len(seeds) == 5
    assert ability_seed(1, 2, 3, "a") == 7763791937329255396  # never Python's hash()


# -- effect data -------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "message"), [
    ({"type": "heal"}, "must return a list"),
    ([{"type": "heal", "target": 1, "amount": 1}] * 9, "at most 8"),
    (["heal"], "must be a dict"),
    ([{"type": "explode"}], "type must be one of"),
    ([{"type": "heal", "target": 1, "amount": 1, "caster": 9}], "unknown key 'caster'"),
    ([{"type": "heal", "target": 1}], "missing key 'amount'"),
    ([{"type": "heal", "target": True, "amount": 1}], "must be an entity id"),
    ([{"type": "heal", "target": 1, "amount": float("inf")}], "finite number"),
    ([{"type": "heal", "target": 1, "amount": [5]}], "got a list"),
    ([{"type": "message", "text": "x" * 161}], "printable text"),
    ([{"type": "message", "text": "a\nb"}], "printable text"),
    ([{"type": "status", "target": 1, "status": "invulnerable", "ticks": 5}], "a status"),
    ([{"type": "create_item", "item": "diamond", "qty": 1}], "an item kind"),
])
def test_malformed_effect_data_is_refused_naming_the_problem(raw, message) -> None:
    with pytest.raises(MalformedEffects, match=re.escape(message)):
        parse_effects(raw, 8)


def test_the_effect_validator_does_not_recurse_into_a_deep_value() -> None:
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(MalformedEffects, match="got a list"):
        parse_effects([{"type": "heal", "target": 1, "amount": deep}], 8)
    with pytest.raises(MalformedEffects, match="must be a dict"):
        parse_effects([deep], 8)


# -- casting -----------------------------------------------------------------------------------


def test_a_cast_applies_its_effects_and_pays_energy_and_cooldown() -> None:
    runner = FakeRunner(lambda call: AbilityResult(status="ok", effects=[
        {"type": "heal", "target": call.ctx["target"]["id"], "amount": 20}]))
    w, caster, target = staged(runner, spec("mend", energy=10, cooldown=50,
                                            args={"target": "agent"}))
    give_plan(w, caster, cast("mend", target=target))
    events = run(w, 1)
    assert w.store.get(target, c.Needs).health == 70.0
    assert w.store.get(caster, c.Needs).energy < 91
    assert w.abilities.cooldowns[caster]["mend"] == w.tick + 50
    (event,) = of_type(events, "ability")
    assert event["ability"] == "mend" and "heal 20" in event["effects"][0]
    ctx = runner.calls[0].ctx
    assert ctx["caster"]["id"] == caster and ctx["target"]["kind"] == "agent"
    assert ctx["seed"] == ability_seed(w.seed, 1, caster, "mend")
    json.dumps(ctx)  # plain data only


def test_a_cooling_down_ability_fails_with_the_ticks_left() -> None:
    w, caster, _ = staged(FakeRunner(returns()), spec("mend", cooldown=50))
    give_plan(w, caster, cast("mend"), cast("mend"))
    events = run(w, 3)
    assert "mend is cooling down" in of_type(events, "action_failed")[0]["reason"]


@pytest.mark.parametrize(("action", "message"), [
    (cast("mnd"), "no ability named 'mnd'; did you mean 'mend'?"),
    (cast("mend", text="hi"), "takes no argument text"),
    (cast("bolt"), "bolt needs argument target"),
    (cast("bolt", target=99), "#99 does not exist"),
])
def test_a_cast_the_world_cannot_run_fails_with_a_reason(action, message) -> None:
    w, caster, _ = staged(FakeRunner(returns()), spec("mend"),
                          spec("bolt", args={"target": "agent"}))
    give_plan(w, caster, action)
    events = run(w, 2)
    assert message in " | ".join(e["reason"] for e in of_type(events, "action_failed"))


def test_a_caster_walks_into_range_before_casting() -> None:
    runner = FakeRunner(returns())
    w, caster, _ = staged(runner, spec("touch", range_=1, args={"target": "agent"}))
    far = add_agent(w, "Far", 10, 5)
    stay(w, far)
    give_plan(w, caster, cast("touch", target=far))
    run(w, 3)
    assert runner.calls == []
    run(w, 20)
    assert len(runner.calls) == 1
    assert max(abs(a - b) for a, b in zip(pos(w, caster), pos(w, far), strict=True)) <= 1


@pytest.mark.parametrize(("effect", "reason"), [
    ({"type": "damage", "target": 0, "amount": 5}, "is not a living agent"),
    ({"type": "damage", "target": "T", "amount": 500}, "exceeds the cap of 30"),
    ({"type": "transfer", "item": "apple", "qty": 1, "from": "T", "to": "C"},
     "is none of these"),
    ({"type": "transfer", "item": "apple", "qty": 1, "from": "T", "to": "T"},
     "moves goods from its caster"),
    ({"type": "transfer", "item": "wood", "qty": 9, "from": "C", "to": "T"},
     "carries 5 wood, not 9"),
    ({"type": "create_item", "item": "gold", "qty": 1}, "gold cannot be created"),
    ({"type": "move", "x": 19, "y": 19}, "move distance"),
    ({"type": "spawn_object", "kind": "rock", "x": 7, "y": 5}, "is occupied"),
])
def test_effects_that_break_world_rules_refuse_the_whole_cast(effect, reason) -> None:
    w, caster, target = staged(None)
    ids = {"T": target, "C": caster}
    resolved = {k: ids.get(v, v) if isinstance(v, str) and k in ("target", "from", "to")
                else v for k, v in effect.items()}
    w.abilities.runner = FakeRunner(returns(
        {"type": "heal", "target": caster, "amount": 5}, resolved))
    w.abilities.add(spec("odd"))
    before = w.store.get(caster, c.Needs).health
    give_plan(w, caster, cast("odd"))
    events = run(w, 1)
    assert reason in of_type(events, "action_failed")[0]["reason"]
    assert w.store.get(caster, c.Needs).health == before  # nothing applied, not even the heal
    assert "odd" not in w.abilities.disabled  # the world refused; the ability is not broken


def test_malformed_effects_disable_the_ability() -> None:
    w, caster, _ = staged(FakeRunner(lambda call: AbilityResult(status="ok", effects={"a": 1})),
                          spec("weird"))
    give_plan(w, caster, cast("weird"), cast("weird"))
    events = run(w, 3)
    assert "malformed" in w.abilities.disabled["weird"]
    assert of_type(events, "ability_disabled")[0]["ability"] == "weird"
    assert "weird is disabled" in of_type(events, "action_failed")[-1]["reason"]


def test_each_effect_kind_changes_the_world_as_documented() -> None:
    w, caster, target = staged(None)
    tree = w.spawn_object("tree", 4, 5)
    apple = w.spawn_item("apple", 3, 5, 6)
    effects = [
        {"type": "damage", "target": target, "amount": 10},
        {"type": "push", "target": target, "tiles": 2},
        {"type": "transfer", "item": "apple", "qty": 1, "from": tree, "to": caster},
        {"type": "transfer", "item": "apple", "qty": 2, "from": apple, "to": caster},
        {"type": "need", "target": caster, "need": "hunger", "delta": 20},
        {"type": "status", "target": caster, "status": "regen", "ticks": 10},
        {"type": "spawn_object", "kind": "berry_bush", "x": 6, "y": 6},
        {"type": "message", "text": "So it is."},
    ]
    w.abilities.runner = FakeRunner(returns(*effects))
    w.abilities.add(spec("many", range_=3))
    give_plan(w, caster, cast("many"))
    events = run(w, 1)
    assert w.store.get(target, c.Needs).health == 40.0
    assert pos(w, target) == (9, 5)
    assert w.store.get(tree, c.StaticObject).stock == 2
    assert w.store.get(apple, c.Item).qty == 1
    assert w.store.get(caster, c.Inventory).items["apple"] == 5
    assert w.store.get(caster, c.Needs).hunger == 20.0
    assert w.store.get(target, c.Combat).last_attacker == caster
    assert w.ground.objects.at(6, 6)
    assert w.abilities.statuses_of(caster, w.tick) == {"regen": 10}
    assert len(of_type(events, "ability")[0]["effects"]) == 8


def test_statuses_work_and_expire() -> None:
    w, caster, target = staged(None)
    book = w.abilities
    book.statuses[target] = {"poison": 3}
    book.statuses[caster] = {"root": 10, "shield": 10}
    give_plan(w, caster, {"name": "move_to", "args": {"x": 1, "y": 1}})
    start = pos(w, caster)
    run(w, 5)
    assert pos(w, caster) == start  # rooted
    assert w.store.get(target, c.Needs).health == 48.5  # three ticks of poison
    assert target not in book.statuses  # expired and dropped
    assert book.has_status(caster, "shield", w.tick)


# -- outcomes that depend on the clock ----------------------------------------------------------


def _killed_once(call):
    return AbilityResult(status=ABILITY_KILLED, reason="ran longer than 50 ms")


def test_a_kill_fails_the_cast_with_a_strike_and_is_logged_as_an_input_of_its_tick() -> None:
    w, caster, _ = staged(FakeRunner(_killed_once), spec("slow"))
    seen: list[Input] = []
    w.input_observers.append(seen.extend)
    give_plan(w, caster, cast("slow"))
    report = w.step()
    late = [i for i in seen if i.type == "ability_outcome"]
    assert len(late) == 1 and late[0].tick == 1 and late[0] in report.inputs
    assert late[0].data == {"caster": caster, "ability": "slow", "status": "killed",
                            "reason": "ran longer than 50 ms"}
    assert late[0].seq == w.inbox.next_seq - 1
    assert "slow was stopped" in of_type(report.events, "action_failed")[0]["reason"]
    assert w.abilities.strikes == {"slow": 1}  # test_ability_rules.py: when kills disable
    assert "slow" not in w.abilities.disabled


def test_a_replay_uses_the_recorded_outcome_instead_of_running_the_call() -> None:
    live, caster, _ = staged(FakeRunner(_killed_once), spec("slow"))
    replayed, _, _ = staged(None, spec("slow"))
    never = FakeRunner(returns({"type": "heal", "target": caster, "amount": 5}))
    replayed.abilities.runner = never
    logged: list[list[Input]] = []
    for w in (live, replayed):
        give_plan(w, caster, cast("slow"))
    for _ in range(3):
        logged.append(list(live.step().inputs))
    for inputs in logged:
        replayed.step(inputs)
    assert never.calls == []
    assert replayed.state_hash() == live.state_hash()


def test_a_postponed_call_keeps_the_action_for_the_next_tick() -> None:
    answers = iter([AbilityResult(status=ABILITY_POSTPONED, reason="no time"),
                    AbilityResult(status="ok", effects=[])])
    runner = FakeRunner(lambda call: next(answers))
    w, caster, _ = staged(runner, spec("later"))
    seen: list[Input] = []
    w.input_observers.append(seen.extend)
    give_plan(w, caster, cast("later"))
    events = run(w, 2)
    assert [i.data["status"] for i in seen if i.type == "ability_outcome"] == ["postponed"]
    assert len(runner.calls) == 2 and len(of_type(events, "ability")) == 1
    assert "later" not in w.abilities.disabled


def test_an_error_result_disables_with_the_reason_in_the_event() -> None:
    w, caster, _ = staged(FakeRunner(lambda call: AbilityResult(
        status=ABILITY_ERROR, reason="limit: step budget of 20000 steps spent")), spec("spin"))
    give_plan(w, caster, cast("spin"))
    events = run(w, 1)
    assert of_type(events, "ability_disabled")[0]["reason"].endswith("steps spent")


def test_the_inbox_refuses_late_input_types() -> None:
    w = small_world()
    with pytest.raises(ValueError, match="written by the world itself"):
        w.inbox.submit("ability_outcome", {"caster": 1, "ability": "x", "status": "killed",
                                           "reason": "forged"})


def test_calls_of_one_tick_go_to_the_runner_in_one_batch_up_to_the_cap() -> None:
    runner = FakeRunner(returns())
    w, caster, target = staged(runner, spec("tap"), game=None)
    others = [add_agent(w, f"A{i}", 2 + i, 9) for i in range(4)]
    w.ability_rules = w.ability_rules.__class__(calls_per_tick=3)
    for eid in [caster, target, *others]:
        give_plan(w, eid, cast("tap"))
    run(w, 2)
    assert [n for n, _ in runner.batches] == [3, 3]


# -- requests and new abilities ----------------------------------------------------------------


def _accept_data(s, request=0):
    return {"name": s.name, "source": s.source, "sha256": s.digest, "meta": s.meta.to_dict(),
            "request": request, "origin": "angel"}


def test_a_request_waits_for_the_answer_and_the_ability_arrives_as_an_input() -> None:
    w, caster, _ = staged(FakeRunner(returns()))
    give_plan(w, caster, {"name": "request_ability", "args": {"text": "let me fly"}})
    events = run(w, 3)
    (asked,) = of_type(events, "ability_requested")
    assert asked["request"] == 1 and asked["text"] == "let me fly"
    w.inbox.submit("ability", _accept_data(spec("fly"), request=1))
    events = run(w, 1)
    assert of_type(events, "ability_accepted")[0]["agent"] == caster
    assert w.store.get(caster, c.Intent).last_result == "ok: learned fly"
    assert w.abilities.get("fly") is not None and w.abilities.requests == {}


def test_a_refusal_or_a_timeout_fails_the_request() -> None:
    w, caster, target = staged(None, game=None)
    w.ability_rules = w.ability_rules.__class__(request_timeout_ticks=20)
    give_plan(w, caster, {"name": "request_ability", "args": {"text": "x"}})
    give_plan(w, target, {"name": "request_ability", "args": {"text": "y"}})
    run(w, 2)
    w.inbox.submit("ability_refused", {"request": 1, "reason": "cannot"})
    events = run(w, 30)
    reasons = {e["agent"]: e["reason"] for e in of_type(events, "action_failed")}
    assert reasons[caster] == "the angel refused: cannot"
    assert reasons[target] == "the angel did not answer within 20 ticks"


@pytest.mark.parametrize(("change", "reason"), [
    ({"sha256": "0" * 64}, "does not match the source"),
    ({"name": "other"}, "differs from the metadata"),
    ({"meta": {"name": "fly"}}, "exactly the keys"),
])
def test_a_bad_ability_input_is_rejected(change, reason) -> None:
    w = small_world()
    w.inbox.submit("ability", _accept_data(spec("fly")) | change)
    events = run(w, 1)
    assert reason in of_type(events, "input_rejected")[0]["reason"]


def test_a_name_that_is_taken_is_rejected_and_the_requester_told() -> None:
    w, caster, _ = staged(None, spec("fly"))
    give_plan(w, caster, {"name": "request_ability", "args": {"text": "fly"}})
    run(w, 1)
    w.inbox.submit("ability", _accept_data(spec("fly"), request=1))
    events = run(w, 1)
    assert "already exists" in of_type(events, "input_rejected")[0]["reason"]
    assert "refused" in of_type(events, "action_failed")[0]["reason"]


def test_the_operator_can_disable_and_enable_an_ability() -> None:
    w, _, _ = staged(None, spec("fly"))
    w.inbox.submit("ability_state", {"ability": "fly", "enabled": False, "reason": "too good"})
    run(w, 1)
    assert w.abilities.disabled == {"fly": "too good"}
    w.inbox.submit("ability_state", {"ability": "fly", "enabled": True})
    run(w, 1)
    assert w.abilities.disabled == {}


# -- state -------------------------------------------------------------------------------------


def test_a_world_without_ability_state_keeps_the_old_snapshot_layout() -> None:
    w = small_world()
    run(w, 5)
    state = json.loads(w.state_bytes())
    assert "abilities" not in state
    old = json.loads(w.state_bytes())
    del old["config"]["abilities"]  # as written before abilities existed
    rebuilt = World.from_state(old)
    assert "abilities" not in json.loads(rebuilt.state_bytes())["config"]
    assert rebuilt.state_bytes() == json.dumps(old, separators=(",", ":")).encode()


def test_ability_state_round_trips_through_a_file_and_behaves_the_same(tmp_path: Path) -> None:
    w, caster, target = staged(None, spec("fly", cooldown=30))
    w.abilities.disable("fly", "broken")
    w.abilities.statuses[target] = {"shield": 40}
    w.abilities.cooldowns[caster] = {"fly": 25}
    give_plan(w, caster, {"name": "request_ability", "args": {"text": "z"}})
    run(w, 2)
    path = tmp_path / "state.json"
    path.write_bytes(w.state_bytes())
    again = World.from_state(json.loads(path.read_text()))
    assert again.state_hash() == w.state_hash()
    for world in (w, again):
        world.abilities.runner = FakeRunner(returns())
    run(w, 30)
    run(again, 30)
    assert again.state_hash() == w.state_hash()
    book = AbilityBook(w.ability_rules)
    plain = json.loads(json.dumps(w.abilities.get_state()))
    book.set_state(plain)
    assert json.loads(json.dumps(book.get_state())) == plain


def test_the_catalog_lists_every_ability_with_its_state() -> None:
    w, _, _ = staged(None, spec("fly"))
    w.abilities.disable("fly", "broken")
    (entry,) = w.abilities.catalog()
    assert entry["name"] == "fly" and entry["disabled"] == "broken"
    assert entry["builtin"] is False
