"""Built-in brains, version 2: they leave alone what they could not reach, count what they
start, trade by need, talk from their own lives without telling anyone about themselves, cast
the abilities that suit them (only where the world runs abilities) and ask the angel, within
the world's hourly allowance, for what no ability they know does."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

import pytest
from ability_helpers import FakeRunner, returns
from helpers import STAY, act, add_agent, give_plan, of_type, run, small_world

from agent_world.angel.generators import AbilityRequest
from agent_world.angel.templates import TemplateGenerator, _choose
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.abilities import source_digest
from agent_world.core.brains import casting, speech
from agent_world.core.brains.casting import REQUESTS
from agent_world.core.calendar import TICKS_PER_HOUR
from agent_world.core.minds import UNREACHABLE_TICKS
from agent_world.core.social import adjust_relationship
from agent_world.core.systems import movement
from agent_world.core.world import World
from agent_world.sandbox.compiler import compile_ability
from agent_world.sandbox.host import load_builtins


def _with_abilities(w: World) -> FakeRunner:
    """Attach a runner and the built-in abilities as the sandbox layer does to a new world
    (before its first tick: its brains cast). The runner returns no effects."""
    runner = FakeRunner(returns())
    w.abilities.runner = runner
    for spec in load_builtins():
        w.abilities.install_builtin(spec)
    return runner


# -- failures are not repeated -----------------------------------------------------------------


def test_an_unreachable_target_is_tried_once_and_then_left_alone(monkeypatch) -> None:
    w = small_world(seed=2, game={"hunger_per_tick": 0.0})
    for x, y in ((14, 13), (15, 13), (16, 13), (14, 14), (16, 14), (14, 15), (15, 15),
                 (16, 15)):
        w.terrain.block(x, y)  # gold on an island nobody can reach
    gold = w.spawn_item("gold", 5, 15, 14, source="test")
    me = add_agent(w, "Me", 12, 12, personality="gatherer")
    searches = Counter()
    real = movement.find_path

    def counting(*args, **kwargs):
        searches[w.tick] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(movement, "find_path", counting)
    events = run(w, UNREACHABLE_TICKS - 100)
    failed = [e for e in of_type(events, "action_failed") if e["agent"] == me]
    assert [e["reason"] for e in failed] == [f"cannot reach gold#{gold}"]
    assert w.minds.avoids(me, gold, w.tick)
    assert sum(searches.values()) <= 4  # one walk (planned once, once more when stuck)
    assert w.counters["actions_started"] >= len(failed)


def test_every_action_begun_is_counted(decisions) -> None:
    w = small_world(seed=3)
    me = add_agent(w, "Me", 5, 5, personality="trader")
    give_plan(w, me, act("idle", ticks=5), act("move_to", x=50, y=50), stay=False)
    events = run(w, 300)
    chosen = sum(1 for _e, _p, a in decisions if a is not None)
    failed = len(of_type(events, "action_failed"))
    assert w.counters["actions_started"] == chosen + 2  # two from the plan, one failing
    assert failed >= 1


# -- trade by need -----------------------------------------------------------------------------


@pytest.mark.parametrize(("hunger", "food", "answer"), [
    (70.0, {}, "trade_accept"),  # hungry with nothing to eat: worth more than the price
    (10.0, {"berries": 12}, "trade_decline"),  # fed and full of berries: not worth it
])
def test_food_is_bought_by_those_who_need_it(decisions, hunger, food, answer) -> None:
    w = small_world(seed=13)
    seller = add_agent(w, "Sel", 5, 5, items={"apple": 4})
    me = add_agent(w, "Me", 6, 5, personality="cautious", items=food, gold=20, hunger=hunger)
    give_plan(w, seller, STAY)
    price = round(w.market.prices["apple"] * 1.1)
    w.market.open(w.tick, seller, me, {"apple": 1}, {"gold": max(1, price)})
    run(w, 20)
    answers = [a.name for e, _p, a in decisions
               if e == me and a is not None and a.name.startswith("trade_")]
    assert answers[0] == answer


def test_an_offer_from_someone_who_walked_off_is_declined_not_undone(decisions) -> None:
    w = small_world(seed=14, game={"hunger_per_tick": 0.0})
    seller = add_agent(w, "Sel", 2, 2, items={"apple": 4})
    me = add_agent(w, "Me", 12, 12, personality="cautious", gold=20, hunger=70.0)
    give_plan(w, seller, STAY)
    w.market.open(w.tick, seller, me, {"apple": 1}, {"gold": 2})
    events = run(w, 20)
    assert of_type(events, "trade_declined") and not of_type(events, "trade_undone")


# -- speech ------------------------------------------------------------------------------------


def test_news_about_others_never_names_the_listener_or_the_speaker() -> None:
    w = small_world(seed=15)
    me = add_agent(w, "Me", 5, 5)
    you = add_agent(w, "You", 6, 5)
    them = add_agent(w, "Them", 7, 5)
    adjust_relationship(w, me, you, -0.9)
    row = w.agent_row(me)
    assert row is not None
    assert speech._gossip(w, me, row, you, "You") is None  # the only enemy is the listener
    adjust_relationship(w, me, them, -0.8)
    w.remember(me, f"Them#{them} robbed me")
    lines = {speech._gossip(w, me, row, you, "You") for _ in range(40)}
    assert all(line is not None and "Them" in line and "Me" not in line for line in lines)
    assert all(line.count("You") <= 1 for line in lines if line)  # addressed, never the subject


def test_only_a_victim_cries_for_help_and_it_names_its_attacker() -> None:
    w = small_world(seed=16)
    foe = add_agent(w, "Bruno", 5, 5, personality="aggressive")
    fear = {speech.cry(w, False, foe)["text"] for _ in range(60)}
    taunts = {speech.cry(w, True, foe)["text"] for _ in range(60)}
    assert all("Bruno" in line for line in fear | taunts)
    assert any(line.startswith("Help!") for line in fear)
    assert not any("Help" in line or "Stay away" in line for line in taunts)


def test_in_a_fight_the_aggressor_taunts_and_the_victim_calls_for_help(decisions) -> None:
    lines: dict[str, list[str]] = defaultdict(list)
    for seed in range(6):
        w = small_world(seed=seed, game={"hunger_per_tick": 0.0})
        brute = add_agent(w, "Brute", 5, 5, personality="aggressive", items={"sword": 1})
        meek = add_agent(w, "Meek", 6, 5, personality="cautious", gold=30)
        give_plan(w, brute, act("attack", target=meek), stay=False)
        for e in of_type(run(w, 120), "say"):
            lines[e["name"]].append(e["text"])
    assert any("Brute" in t for t in lines["Meek"])
    assert not any("Help" in t for t in lines["Brute"])
    assert not any("Meek" in t and ("Help" in t or "Stay away" in t) for t in lines["Meek"])


def test_a_living_world_says_many_different_things() -> None:
    w = World.create(Config(), seed=21)
    said: list[str] = []
    for _ in range(12_000):
        said.extend(e["text"] for e in w.step().events if e["type"] == "say")
    w.close()
    assert len(said) > 200
    assert len(set(said)) / len(said) >= 0.3


# -- abilities and the angel ---------------------------------------------------------------------


def test_brains_never_cast_without_a_runner_or_in_a_world_made_without_abilities(
        decisions) -> None:
    w = World.create(Config(), seed=22)
    run(w, 2000)
    assert not any(a is not None and a.name in ("use_ability", "request_ability")
                   for _e, _p, a in decisions)
    late = World.create(Config(), seed=22)
    run(late, 1)
    runner = _with_abilities(late)  # attached after the first tick: not made with them
    assert not late.abilities.brains_cast
    run(late, 2000)
    assert runner.calls == []
    w.close()
    late.close()


def test_each_personality_casts_the_abilities_that_suit_it(decisions) -> None:
    w = World.create(Config(), seed=23)
    runner = _with_abilities(w)
    assert w.abilities.brains_cast
    run(w, 25_000)
    cast: dict[str, Counter[str]] = defaultdict(Counter)
    for _eid, personality, action in decisions:
        if action is not None and action.name == "use_ability":
            cast[personality][action.args["ability"]] += 1
    for personality, suits in casting.SUITS.items():
        for ability in suits:
            assert cast[personality][ability] > 0, (personality, dict(cast[personality]))
    assert len(runner.calls) < 25_000 / 20  # occasional: every cast is a sandbox round trip
    w.close()


def test_requests_to_the_angel_are_phrased_for_its_templates() -> None:
    kinds = {"energy": "refresh", "slow": "slow", "root": "root", "poison": "poison",
             "food": "conjure", "haste": "haste", "regen": "regen", "voice": "herald",
             "blink": "blink"}
    for need, texts in REQUESTS.items():
        for text in texts:
            assert _choose(text, 0).kind == kinds[need], text
            assert casting.need_of(text) == need


def test_requests_stay_within_the_hourly_allowance(decisions) -> None:
    w = World.create(Config().replace(game={"ability_requests_per_hour": 2.0}), seed=24)
    _with_abilities(w)
    events = run(w, 40_000)
    asked = of_type(events, "ability_requested")
    assert asked, "no agent ever asked the angel"
    gap = TICKS_PER_HOUR // 2
    ticks = [e["tick"] for e in asked]
    assert all(b - a >= gap for a, b in itertools.pairwise(ticks))
    assert {e["text"] for e in asked} <= {t for texts in REQUESTS.values() for t in texts}
    w.close()


def test_what_the_angel_answers_is_taught_to_the_asker_for_its_need() -> None:
    w = small_world(seed=25, game={"hunger_per_tick": 0.0})
    _with_abilities(w)
    me = add_agent(w, "Me", 5, 5, personality="aggressive")
    foe = add_agent(w, "Foe", 7, 5, personality="cautious")
    give_plan(w, foe, STAY)
    text = REQUESTS["poison"][0]
    give_plan(w, me, act("request_ability", text=text))
    [asked] = of_type(run(w, 2), "ability_requested")
    source = TemplateGenerator().write(AbilityRequest(request=asked["request"], agent=me,
                                                      text=text, taken=()), [])
    meta, _code = compile_ability(source)
    run(w, 700)  # the request timed out (a world flat out outpaces the angel) ...
    w.inbox.submit("ability", {"name": meta.name, "source": source,
                               "sha256": source_digest(source), "meta": meta.to_dict(),
                               "request": asked["request"], "origin": "angel"})
    run(w, 1)  # ... and the answer is taught all the same
    assert w.minds.taught == {me: {meta.name: "poison"}}
    assert casting.known_for(w, me, "poison") == [meta.name]
    assert any(m["text"].startswith(f"the angel granted me {meta.name}")
               for m in w.store.get(me, c.Memory).recent)
