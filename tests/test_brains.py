"""Built-in brains: every choice is a valid action of the action set, and each personality
behaves like itself."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from helpers import act, add_agent, give_plan, goods_of, of_type, run, small_world

from agent_world.config import PERSONALITIES, Config
from agent_world.core import components as c
from agent_world.core.actions import ACTIONS, Action, parse_action
from agent_world.core.social import adjust_relationship
from agent_world.core.world import World


def _choices(decisions, eid):
    return [a for e, _p, a in decisions if e == eid and a is not None]


# -- only the action set ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", [3, 7, 11])
def test_every_personality_only_chooses_valid_actions(decisions, seed) -> None:
    cfg = Config().replace(world={"size": [40, 40], "starting_agents": 16,
                                  "immigration_interval_ticks": 0, "item_spawn_rate": 0.5})
    w = World.create(cfg, seed=seed)
    run(w, 400)
    by_personality: dict[str, Counter[str]] = defaultdict(Counter)
    for eid, personality, action in decisions:
        if action is None:
            continue
        assert isinstance(action, Action)
        assert action.name in ACTIONS
        assert parse_action(action.to_dict()) == action
        assert action.args.get("target") != eid
        by_personality[personality][action.name] += 1
    assert set(by_personality) == set(PERSONALITIES)
    for personality, names in by_personality.items():
        assert len(names) >= 4, (personality, names)


# -- each personality as itself --------------------------------------------------------------


def _bully_scene(personality: str):
    """A weak, rich agent idles in the middle of a map small enough to stay in sight."""
    w = small_world(seed=2, world={"size": [16, 16]})
    me = add_agent(w, "Me", 6, 8, personality=personality)
    mark = add_agent(w, "Mark", 8, 8, gold=20, health=40.0)
    give_plan(w, mark, *[act("idle", ticks=100)] * 6, stay=False)
    return w, me, mark


def test_aggressive_agents_prey_on_the_weak_and_rich(decisions) -> None:
    w, me, mark = _bully_scene("aggressive")
    events = run(w, 400)
    chosen = {a.name for a in _choices(decisions, me) if a.get("target") == mark}
    assert chosen & {"attack", "steal"}
    assert [e for e in of_type(events, "attack") if e["agent"] == me and not e["provoked"]]


@pytest.mark.parametrize("personality", ["cautious", "trader", "gatherer"])
def test_other_personalities_never_start_a_fight(decisions, personality) -> None:
    w, me, _mark = _bully_scene(personality)
    events = run(w, 400)
    assert not any(a.name == "attack" for a in _choices(decisions, me))
    assert of_type(events, "attack") == []


def _ambush(personality: str):
    """``me`` is attacked by a sword-wielding brute: a stronger foe."""
    w = small_world(seed=4)
    me = add_agent(w, "Me", 8, 8, personality=personality)
    brute = add_agent(w, "Brute", 9, 8, personality="aggressive", items={"sword": 1})
    give_plan(w, brute, act("attack", target=me))
    return w, me, brute


def _first_reaction(decisions, me, brute):
    for action in _choices(decisions, me):
        if action.name in ("flee", "attack", "defend") and action.get("target", brute) == brute:
            return action.name
    return None


def test_cautious_agents_flee_a_stronger_attacker(decisions) -> None:
    w, me, brute = _ambush("cautious")
    run(w, 20)
    assert _first_reaction(decisions, me, brute) == "flee"
    assert not any(a.name == "attack" for a in _choices(decisions, me))


def test_aggressive_agents_fight_back(decisions) -> None:
    w, me, brute = _ambush("aggressive")
    events = run(w, 20)
    assert _first_reaction(decisions, me, brute) == "attack"
    assert [e for e in of_type(events, "attack") if e["agent"] == me and e["provoked"]]


def test_traders_offer_their_surplus_for_gold(decisions) -> None:
    w = small_world(seed=6)
    me = add_agent(w, "Me", 5, 5, personality="trader", items={"wood": 5})
    buyer = add_agent(w, "Buyer", 8, 5, gold=30)
    give_plan(w, buyer, act("idle", ticks=100))
    events = run(w, 60)
    offers = [e for e in of_type(events, "trade_offer") if e["agent"] == me]
    assert offers
    assert offers[0]["target"] == buyer
    assert offers[0]["give"].keys() == {"wood"}
    assert offers[0]["want"].keys() == {"gold"}


def test_gatherers_collect_what_lies_around(decisions) -> None:
    # What they have a use for: a herb, a weapon while unarmed, wood for a shelter (they are
    # builders), gold; stone and iron, which nobody uses, stay on the ground.
    w = small_world(seed=8)
    me = add_agent(w, "Me", 5, 5, personality="gatherer", hunger=20.0)
    for kind, (x, y) in {"herb": (8, 5), "wood": (3, 9), "spear": (9, 9), "gold": (2, 2),
                         "stone": (8, 8), "iron": (2, 7)}.items():
        w.spawn_item(kind, 1, x, y)
    bush = w.spawn_object("berry_bush", 5, 1)
    events = run(w, 200)
    assert {"herb", "wood", "spear", "gold"} <= goods_of(w, me).keys()
    assert not {"stone", "iron"} & goods_of(w, me).keys()
    assert any(e["agent"] == me for e in of_type(events, "harvest"))
    assert w.store.get(bush, c.StaticObject).stock < 4


def _friend_scene(personality: str):
    w = small_world(seed=9, world={"size": [16, 16]})
    me = add_agent(w, "Me", 6, 8, personality=personality, items={"berries": 5})
    friend = add_agent(w, "Pal", 8, 8)
    adjust_relationship(w, me, friend, 0.6)
    give_plan(w, friend, *[act("idle", ticks=100)] * 4, stay=False)
    return w, me, friend


def test_gatherers_share_food_with_friends_who_have_none(decisions) -> None:
    w, me, friend = _friend_scene("gatherer")
    events = run(w, 300)
    gifts = [e for e in of_type(events, "gift") if e["agent"] == me]
    assert gifts
    assert (gifts[0]["target"], gifts[0]["item"], gifts[0]["qty"]) == (friend, "berries", 1)
    assert goods_of(w, friend).get("berries", 0) >= 1


def test_aggressive_agents_do_not_share(decisions) -> None:
    w, me, _friend = _friend_scene("aggressive")
    events = run(w, 300)
    assert [e for e in of_type(events, "gift") if e["agent"] == me] == []


@pytest.mark.parametrize("personality", PERSONALITIES)
def test_hungry_agents_eat_what_they_carry(decisions, personality) -> None:
    w = small_world(seed=10)
    me = add_agent(w, "Me", 5, 5, personality=personality, items={"apple": 1, "meat": 1},
                   hunger=50.0)
    events = run(w, 20)
    [meal] = of_type(events, "eat")
    assert meal["item"] == "meat"  # the most filling food that does not go to waste
    assert w.store.get(me, c.Needs).hunger < 50.0


@pytest.mark.parametrize("personality", PERSONALITIES)
def test_exhausted_agents_rest(decisions, personality) -> None:
    w = small_world(seed=12)
    me = add_agent(w, "Me", 5, 5, personality=personality, energy=5.0)
    run(w, 30)
    assert "rest" in {a.name for a in _choices(decisions, me)}
    assert w.store.get(me, c.Needs).energy > 5.0


@pytest.mark.parametrize(("give", "want", "answer"), [
    ({"meat": 2}, {"gold": 3}, "trade_accept"),
    ({"berries": 1}, {"gold": 20}, "trade_decline"),
])
def test_agents_accept_good_offers_and_decline_bad_ones(decisions, give, want, answer) -> None:
    w = small_world(seed=13)
    seller = add_agent(w, "Seller", 5, 5, items={"meat": 2, "berries": 1})
    me = add_agent(w, "Me", 6, 5, personality="gatherer", gold=25)
    give_plan(w, seller, act("idle", ticks=100))
    oid = w.market.open(w.tick, seller, me, give, want)
    events = run(w, 15)
    assert _choices(decisions, me)[0].name == answer
    if answer == "trade_accept":
        assert [e["offer"] for e in of_type(events, "trade")] == [oid]
        assert goods_of(w, me) == {"meat": 2, "gold": 22}
    else:
        assert [e["offer"] for e in of_type(events, "trade_declined")] == [oid]
        assert goods_of(w, me) == {"gold": 25}
