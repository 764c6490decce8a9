"""No scored metric can be raised by undoing and redoing the same thing.

Every metric a scenario may score (``METRICS`` and ``DERIVED`` less ``NOT_SCORED``) is tried
here by a users' Python brain written to farm it, played through ``run_episode`` as
``python main.py eval`` plays it: goods dropped and picked up again, gifts and trades back
and forth, prices pushed up with offers nobody can take, teammates struck, a capture point
handed back and forth. Each gains nothing, or only what honest play gains. Metrics that are
activity by nature are refused in a score, naming why and what to score instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.metrics import METRICS
from agent_world.core.world import World
from agent_world.eval import ScenarioError, load_scenario, run_episode
from agent_world.eval.episode import Episode
from agent_world.eval.scenario import DERIVED, NOT_SCORED
from tests.helpers import act, add_agent, give_plan, run, small_world
from tests.persistence_helpers import records

FARMERS = '''
from agent_world.agents import Brain, Decision

FOOD = ("berries", "apple", "bread", "meat")


def carried(obs):
    goods = {k: q for k, q in obs.me.items.items() if q}
    if obs.me.gold:
        goods["gold"] = obs.me.gold
    return dict(sorted(goods.items()))


def partner(obs):
    return obs.agents[0].id if obs.agents else None


def only(action, **args):
    """The action, then a wait: the next decision comes before the agent's built-in brain
    would take over, so what happens is the farmer's doing alone."""
    return [Decision(action, args), Decision("idle", {"ticks": 50})]


class DropAndPickUp(Brain):
    """Drops whatever it carries, then picks it up again."""

    def decide(self, obs, actions):
        for kind, qty in carried(obs).items():
            return only("drop", item=kind, qty=qty)
        if obs.items:
            return only("pickup", target=obs.items[0].id)
        return only("idle", ticks=2)


class GiveBack(Brain):
    """Eats when it can, and hands everything else to its partner, who does the same."""

    def decide(self, obs, actions):
        food = [k for k in FOOD if obs.me.items.get(k)]
        if food and obs.me.hunger > 5:
            return only("eat", item=food[0])
        other = partner(obs)
        for kind, qty in carried(obs).items():
            if other is not None:
                return only("give", target=other, item=kind, qty=qty)
        return only("idle", ticks=3)


class TradeBack(Brain):
    """Accepts whatever it is offered, and offers its partner all its goods for a coin."""

    def decide(self, obs, actions):
        if obs.offers:
            return only("trade_accept", offer=obs.offers[0].id)
        other = partner(obs)
        goods = {k: q for k, q in carried(obs).items() if k != "gold"}
        if other is not None and goods:
            return only("trade_offer", target=other, give=goods, want={"gold": 1})
        return only("idle", ticks=3)


class PriceRigger(Brain):
    """Keeps an offer open that asks for ten thousand swords (nobody can take it), so that
    the market wants swords, and holds the one it has."""

    def decide(self, obs, actions):
        other = partner(obs)
        if other is not None and obs.me.gold:
            return only("trade_offer", target=other, give={"gold": 1}, want={"sword": 10000})
        return only("idle", ticks=5)


class Spar(Brain):
    """Strikes the nearest teammate: they heal and are struck again."""

    def decide(self, obs, actions):
        mates = set(obs.custom.get("teammates", ()))
        for agent in obs.agents:
            if agent.id in mates:
                return only("attack", target=agent.id)
        return only("idle", ticks=3)


class TakeTurns(Brain):
    """Two teams take turns at the one capture point: red stands on it for a hundred
    ticks, then blue, then red again ..., each leaving it to the other."""

    def decide(self, obs, actions):
        point = obs.custom["capture_points"][0]
        mine = (obs.tick // 100) % 2 == (0 if obs.custom["team"] == "red" else 1)
        if mine:
            return only("move_to", x=point["x"], y=point["y"])
        away = 0 if point["x"] > 10 else 19
        return only("move_to", x=away, y=away)


class Crafter(Brain):
    """Crafts a club whenever it can, drops its clubs and picks them up again."""

    def decide(self, obs, actions):
        if obs.me.items.get("wood", 0) >= 2:
            return only("craft", item="club")
        if obs.me.items.get("club"):
            return only("drop", item="club", qty=obs.me.items["club"])
        if obs.items:
            return only("pickup", target=obs.items[0].id)
        return only("idle", ticks=2)
'''

BRAINS = ("DropAndPickUp", "GiveBack", "TradeBack", "PriceRigger", "Spar", "TakeTurns",
          "Crafter")

# A small bare map where nothing appears by itself and nothing is lost: what the subjects
# have is what they were given, and they see each other.
BARE = ("world: {starting_agents: 0, obstacle_density: 0.0, "
        "objects_per_1000_tiles: 0, shelters_per_1000_tiles: 0, item_spawn_rate: 0.0, "
        "max_items_per_1000_tiles: 0, immigration_interval_ticks: 0%s}\n"
        "game: {food_spoilage: 0.0, ground_item_life_ticks: 0, gold_upkeep_per_hour: 0.0, "
        "market_fee: 0.0, hunger_per_tick: 0.05, vision_radius: 24%s}\n")


def scenario(tmp_path: Path, body: str, *, world: str = ", size: [16, 16]", game: str = "",
             ticks: int = 600) -> Any:
    path = tmp_path / "farm.yaml"
    path.write_text("name: farm\n" + BARE % (world, game) + body + f"end: {{ticks: {ticks}}}\n")
    return load_scenario(str(path))


def base(tmp_path: Path) -> Config:
    folder = tmp_path / "brains"
    folder.mkdir(exist_ok=True)
    (folder / "farmers.py").write_text(FARMERS)
    return Config().replace(brains={
        "path": str(folder), "deadline_ms": 5000, "min_gap_ticks": 2,
        "think_interval_ticks": 10,
        "registered": {name.lower(): f"farmers:{name}" for name in BRAINS}})


def subjects(count: int, goods: str) -> str:
    return f"subjects: {{count: {count}, personality: cautious, goods: {{{goods}}}}}\n"


def play(tmp_path: Path, body: str, brain: str, **kwargs: Any) -> Episode:
    return run_episode(scenario(tmp_path, body, **kwargs), brain, 1, tmp_path / brain,
                       base=base(tmp_path))


def events(episode: Episode, kind: str) -> list[dict[str, Any]]:
    return [r for r in records(Path(episode.folder))
            if r.get("kind") == "event" and r.get("type") == kind]


# -- the rule: every metric is tried here or refused in a score --------------------------------

TRIED = {
    "food_gathered": "test_goods_dropped_and_picked_up_again_are_not_gathered",
    "materials_gathered": "test_goods_dropped_and_picked_up_again_are_not_gathered",
    "eaten": "test_gifts_back_and_forth_raise_no_score",
    "wealth_gained": "test_gifts_back_and_forth_raise_no_score, "
                     "test_trades_back_and_forth_raise_no_score, "
                     "test_prices_pushed_up_with_offers_raise_no_wealth",
    "kills": "test_teammates_struck_and_killed_count_for_nothing",
    "captures": "test_a_point_handed_back_and_forth_is_captured_once",
    "team_held": "test_a_point_handed_back_and_forth_is_captured_once",
    "crafted": "test_crafts_count_only_what_the_goods_make",
    "crafted_value": "test_crafts_count_only_what_the_goods_make",
    # An agent is born once and dies once: nothing to undo.
    "ticks_alive": "no undo: an agent lives from its birth to its death or the end",
    "deaths": "no undo: an agent dies once (0 or 1)",
    # Figures of an episode's course, decided by metrics tried above.
    "completed": "no undo: a subject completes once, when its figures (food_gathered and "
                 "the rest, tried above) first reach the target",
    "won": "no undo: decided at the end from who is alive and team_held (tried above)",
}


def test_every_metric_is_tried_here_or_refused_in_a_score() -> None:
    metrics = set(METRICS) | set(DERIVED)
    assert set(NOT_SCORED) <= metrics
    assert metrics - set(NOT_SCORED) == set(TRIED)
    for reason in TRIED.values():
        for name in reason.split(", "):
            assert not name.startswith("test_") or name in globals(), name


NEEDS = {
    "ticks_to_complete": "complete: {food_gathered: 5}\n",
    "recipe_efficiency": "game: {recipes: {club: wood*2}}\n",
    "materials_wasted": "game: {recipes: {club: wood*2}}\n",
    "coordination": "world: {capture_points: 1}\nteams: {red: {count: 1}, blue: {count: 1, "
                    "brain: builtin}}\n",
}


@pytest.mark.parametrize("metric", sorted(NOT_SCORED))
def test_a_farmable_metric_is_refused_a_positive_weight_saying_why(tmp_path: Path,
                                                                   metric: str) -> None:
    path = tmp_path / "s.yaml"
    needs = NEEDS.get(metric, "")  # what an episode's figure measures
    path.write_text(f"name: s\n{needs}score: {{ticks_alive: 1, {metric}: 0.5}}\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(str(path))
    message = str(caught.value)
    assert f"score.{metric} may not have a positive weight: {NOT_SCORED[metric]}" in message
    assert "\n" not in message and ("score " in message or "weigh it negatively" in message)
    path.write_text(f"name: s\n{needs}score: {{ticks_alive: 1, {metric}: -0.5}}\n")
    assert load_scenario(str(path)).score[metric] == -0.5  # a cost is fine


def test_a_scenario_cannot_ask_for_the_old_counting(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ngame: {metrics_version: 1}\nscore: {food_gathered: 1}\n")
    with pytest.raises(ScenarioError, match=r"game\.metrics_version 1: an episode counts "
                                            r"metrics by the current rules, version 2"):
        load_scenario(str(path))
    # Nor can a configuration: an episode counts by the current rules whatever it says.
    old = Config().replace(game={"metrics_version": 1})
    assert load_scenario("foraging").config(old).game.metrics_version == 2


# -- the world: units carried before are picked up, not gathered ------------------------------


def test_a_stack_counts_the_units_carried_before_and_gives_them_first() -> None:
    world = small_world()
    world.spawn_item("apple", 4, 3, 3)
    dead = add_agent(world, "Ann", 3, 3, items={"apple": 2}, gold=5, health=-1.0)
    give_plan(world, dead, act("idle", ticks=100))
    run(world, 1)
    [stack] = [i for i in world.ground.items.at(3, 3) if world.store.get(i, c.Item).kind ==
               "apple"]
    assert world.store.get(stack, c.Item).qty == 6  # it merged, as stacks always have
    assert world.store.get(stack, c.SecondHand).qty == 2
    finder = add_agent(world, "Fay", 3, 3, gold=0)
    give_plan(world, finder, act("pickup", target=stack))
    [pickup] = [e for e in run(world, 1) if e["type"] == "pickup"]
    assert (pickup["qty"], pickup["second_hand"]) == (6, 2)
    figures = world.metrics.of(finder)
    assert figures["food_gathered"] == 4  # the four the world put there
    gold = next(i for i in world.ground.items.at(3, 3))
    give_plan(world, finder, act("pickup", target=gold))
    [pickup] = [e for e in run(world, 1) if e["type"] == "pickup"]
    assert pickup["item"] == "gold" and pickup["second_hand"] == pickup["qty"] > 0
    assert world.store.get(finder, c.Inventory).gold == pickup["qty"]
    assert world.metrics.of(finder)["gold_earned"] == 0  # a dead agent's purse
    world.close()


def test_a_partial_pickup_takes_the_units_carried_before_first() -> None:
    world = small_world(game={"carry_capacity": 2.0})  # two apples a pack
    world.spawn_item("apple", 3, 4, 4)
    dead = add_agent(world, "Ann", 4, 4, items={"apple": 2}, health=-1.0)
    give_plan(world, dead, act("idle", ticks=100))
    run(world, 1)
    [stack] = world.ground.items.at(4, 4)
    assert world.store.get(stack, c.SecondHand).qty == 2
    first, second = add_agent(world, "Fay", 4, 4), add_agent(world, "Gus", 4, 4)
    give_plan(world, first, act("pickup", target=stack))
    run(world, 1)
    assert world.store.get(first, c.Inventory).count("apple") == 2
    assert world.metrics.of(first)["food_gathered"] == 0  # the dead one's two went first
    assert world.store.get(stack, c.Item).qty == 3
    assert not world.store.has(stack, c.SecondHand)  # only goods fresh from the world left
    give_plan(world, second, act("pickup", target=stack))
    run(world, 1)
    assert world.metrics.of(second)["food_gathered"] == 2
    world.close()


def test_marks_and_points_taken_are_state_saved_loaded_and_hashed(tmp_path: Path) -> None:
    world = small_world(game={"capture_ticks": 3, "capture_radius": 1})
    world.spawn_object("capture_point", 10, 10)
    red = world.spawn_agent("Rua", "cautious", 10, 10, team="red")
    dropper = add_agent(world, "Dan", 4, 4, items={"apple": 3})
    give_plan(world, red, act("idle", ticks=100))
    give_plan(world, dropper, act("drop", item="apple", qty=2))
    run(world, 10)
    state = json.loads(world.state_bytes())
    assert state["metrics"]["captured"] == {"red": sorted(world.ground.capture_points)}
    assert [r["SecondHand"] for r in state["entities"] if "SecondHand" in r] == [{"qty": 2}]
    path = tmp_path / "state.json"
    path.write_bytes(world.state_bytes())
    copy = World.from_state(json.loads(path.read_bytes()))
    try:
        assert copy.state_hash() == world.state_hash()
        assert copy.metrics.captured == world.metrics.captured
        for _ in range(50):
            world.step()
            copy.step()
        assert copy.state_hash() == world.state_hash()
    finally:
        world.close()
        copy.close()


def test_the_counting_changes_only_the_figures_never_the_world() -> None:
    def stripped(world: World) -> dict[str, Any]:
        state = json.loads(world.state_bytes())
        state.pop("metrics", None)
        del state["config"]["game"]["metrics_version"]
        for row in state["entities"]:
            row.pop("SecondHand", None)
        return state

    old, new = (World.create(Config().replace(game={"metrics_version": v}), seed=8)
                for v in (1, 2))
    try:
        for _ in range(2000):
            old.step()
            new.step()
        assert stripped(old) == stripped(new)
        marked = [r for r in json.loads(new.state_bytes())["entities"] if "SecondHand" in r]
        assert marked and not any("SecondHand" in r
                                  for r in json.loads(old.state_bytes())["entities"])
        assert (new.metrics.by("brain")["builtin"]["food_gathered"]
                < old.metrics.by("brain")["builtin"]["food_gathered"])
    finally:
        old.close()
        new.close()


# -- brains that try to farm -------------------------------------------------------------------


def test_goods_dropped_and_picked_up_again_are_not_gathered(tmp_path: Path) -> None:
    episode = play(tmp_path, subjects(1, "berries: 4, wood: 2, gold: 10")
                   + "score: {food_gathered: 1, materials_gathered: 1}\n", "dropandpickup")
    pickups = events(episode, "pickup")
    assert len(pickups) > 20  # it dropped and picked up again and again
    assert sum(p["qty"] for p in pickups) == sum(p["second_hand"] for p in pickups)
    m = episode.metrics
    assert (m["food_gathered"], m["materials_gathered"], m["gold_earned"]) == (0, 0, 0)
    assert episode.score == 0


def test_gifts_back_and_forth_raise_no_score(tmp_path: Path) -> None:
    episode = play(tmp_path, subjects(2, "berries: 3, wood: 2, gold: 10")
                   + "score: {wealth_gained: 1, eaten: 1, food_gathered: 1}\n", "giveback",
                   game=", hunger_per_tick: 0.2")
    assert len(events(episode, "gift")) > 20  # handed back and forth
    m = episode.metrics
    assert m["gold_earned"] > 50  # gross gold counts every gift (it may not be scored)
    assert m["food_gathered"] == 0
    # Gifts between subjects move wealth between them; their mean does not grow. It falls
    # by at most the meals eaten (berries, 2 gold each at the start's prices), which came
    # out of the berries they had: six given, up to three each at birth.
    assert 0 < m["eaten"] * 2 <= 6 + 2 * 3
    assert -2.0 * m["eaten"] <= m["wealth_gained"] < 0


def test_trades_back_and_forth_raise_no_score(tmp_path: Path) -> None:
    episode = play(tmp_path, subjects(2, "berries: 3, wood: 2, gold: 10")
                   + "score: {wealth_gained: 1}\n", "tradeback")
    assert len(events(episode, "trade")) > 10
    assert episode.metrics["trades_done"] > 10  # counted, but it may not be scored
    assert episode.score == 0  # a trade moves wealth from one to the other; the mean stays


def test_prices_pushed_up_with_offers_raise_no_wealth(tmp_path: Path) -> None:
    episode = play(tmp_path, subjects(2, "sword: 1, gold: 50")
                   + "score: {wealth_gained: 1}\n", "pricerigger", ticks=900)
    swords = [e for e in events(episode, "price") if e["item"] == "sword"]
    start, end = swords[0]["old"], swords[-1]["price"]
    assert end > start * 2  # the rig works on the market: at the end's prices each
    # subject's sword would be worth this much more ...
    assert episode.metrics["wealth_gained"] == pytest.approx(0.0)  # ... but not to a score
    assert episode.score == pytest.approx(0.0)


def test_teammates_struck_and_killed_count_for_nothing(tmp_path: Path) -> None:
    episode = play(tmp_path, "teams:\n  red: {count: 3, brain: subject, personality: "
                   "cautious}\n  blue: {count: 1, brain: spar, personality: cautious}\n"
                   "score: {kills: 1}\n", "spar", game=", combat_damage_multiplier: 6.0")
    red = episode.teams["red"]
    assert red["damage_taken"] > 50  # they did strike each other
    assert red["deaths"] >= 1  # to death
    assert (red["damage_dealt"], red["kills"]) == (0, 0)
    assert episode.score == 0


def test_a_point_handed_back_and_forth_is_captured_once(tmp_path: Path) -> None:
    episode = play(tmp_path, "teams:\n  red: {count: 2, brain: subject, personality: "
                   "cautious}\n"
                   "  blue: {count: 2, brain: taketurns, personality: cautious}\n"
                   "score: {captures: 1, team_held: 0.01}\n", "taketurns",
                   world=", size: [20, 20], capture_points: 1",
                   game=", capture_radius: 1, capture_ticks: 10", ticks=1200)
    captures = events(episode, "capture")
    assert [e["team"] for e in captures][:4] == ["red", "blue", "red", "blue"]
    assert len(captures) >= 8  # handed back and forth
    assert episode.teams["red"]["captures"] <= 2  # once for each of its two agents
    assert episode.metrics["captures"] <= 1
    # Point-ticks held are the ticks red owned the point, from each capture to the next.
    ends = [*captures[1:], {"tick": episode.ticks + 1}]
    owned = sum(b["tick"] - a["tick"] for a, b in zip(captures, ends, strict=True)
                if a["team"] == "red")
    assert episode.metrics["team_held"] == owned > 0


def test_crafts_count_only_what_the_goods_make(tmp_path: Path) -> None:
    episode = play(tmp_path, subjects(2, "wood: 4") + "score: {crafted: 1, crafted_value: 1}\n",
                   "crafter", game=", recipes: {club: 'wood*2'}, craft_ticks: 5")
    assert len(events(episode, "drop")) > 5  # it dropped its clubs and took them again
    assert episode.metrics["crafted"] == 2  # four wood make two clubs, however handled
    assert episode.metrics["crafted_value"] == 20
