"""Worlds saved before the rules of a living world keep the rules they ran with.

Every setting added for them (brains v2, carrying capacity, spoilage, ground loss, the market
fee, gold upkeep, weapon wear, estates, old age, angel requests, immigrants that fill the mix)
has a legacy value that reproduces the behaviour before it; a state saved without them loads
with those values, keeps its hash, and runs on exactly as the program before them ran it.
The hashes below were computed with that program (commit 69fb84d, before these rules).
"""

from __future__ import annotations

import json

import pytest
from ability_helpers import FakeRunner, returns

from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.rules import missing_settings
from agent_world.core.world import World
from agent_world.sandbox.host import load_builtins

NEW_GAME = ("brain_version", "carry_capacity", "food_spoilage", "ground_item_life_ticks",
            "market_fee", "gold_upkeep_per_hour", "upkeep_free_gold", "weapon_wear",
            "estate_dues", "inheritance", "lifespan_ticks", "ability_requests_per_hour",
            "agent_metrics", "hazard_damage", "recipes", "craft_ticks", "capture_radius",
            "capture_ticks", "team_channel_size", "team_message_chars", "metrics_version")
NEW_WORLD = ("immigrants_fill_mix", "hazard_tiles_per_1000_tiles", "capture_points")
NEW_ABILITIES = ("tick_steps",)


def test_every_new_setting_has_the_legacy_value_of_the_old_rules() -> None:
    game = missing_settings("game", 1)
    assert {k: game[k] for k in NEW_GAME} == {
        "brain_version": 1, "carry_capacity": 0.0, "food_spoilage": 0.0,
        "ground_item_life_ticks": 0, "market_fee": 0.0, "gold_upkeep_per_hour": 0.0,
        "upkeep_free_gold": 0, "weapon_wear": 0.0, "estate_dues": 0.0, "inheritance": False,
        "lifespan_ticks": 0, "ability_requests_per_hour": 0.0, "agent_metrics": False,
        # The scenario mechanics are off unless set (no hazards, recipes or points): their
        # numbers keep their defaults.
        "hazard_damage": 1.0, "recipes": {}, "craft_ticks": 20, "capture_radius": 2,
        "capture_ticks": 30, "team_channel_size": 16, "team_message_chars": 80,
        # Metrics as they counted before (every pickup, hit and capture).
        "metrics_version": 1}
    assert missing_settings("world", 1)["immigrants_fill_mix"] is False
    new = Config().game
    assert new.brain_version == 2 and new.carry_capacity > 0 and new.market_fee > 0


def _saved_before(seed: int) -> tuple[bytes, World]:
    """A new world as the program before these rules made it, saved, and loaded again."""
    old_rules = Config().replace(
        game={k: missing_settings("game", 1)[k] for k in NEW_GAME},
        abilities={k: missing_settings("abilities", 1)[k] for k in NEW_ABILITIES},
        world={"immigrants_fill_mix": False})
    world = World.create(old_rules, seed=seed)
    state = json.loads(world.state_bytes())
    world.close()
    for key in NEW_GAME:
        del state["config"]["game"][key]
    for key in NEW_WORLD:
        del state["config"]["world"][key]
    for key in NEW_ABILITIES:
        del state["config"]["abilities"][key]
    saved = json.dumps(state, separators=(",", ":")).encode()
    return saved, World.from_state(json.loads(saved))


@pytest.mark.parametrize(("seed", "ticks", "hashes"), [
    (42, 3000, {0: "3e1ddde2a6859231bcf6e928e3c0a699", 1000: "3d424ba8fad4e978e877c02064e2cc67",
                3000: "a86d3e77ce8b5252fbd139f69bf403da"}),
    (4271, 8000, {0: "4d62db847ac3dceb97dd41ebe5eeb81f",
                  1000: "9584dd72f0ffbb4286c54ee49d383f1f",
                  8000: "f95573ce28c69e74a516920a7d35a4f9"}),
])
def test_a_world_saved_before_the_new_rules_runs_exactly_as_it_did(
        seed: int, ticks: int, hashes: dict[int, str]) -> None:
    saved, world = _saved_before(seed)
    try:
        assert world.state_bytes() == saved  # it keeps the keys (and so the hash) it had
        assert world.state_hash() == hashes[0]
        rules = world.rules
        assert (rules.brain_version, rules.carry_capacity, rules.market_fee,
                rules.lifespan_ticks, world.settings.immigrants_fill_mix) == (1, 0.0, 0.0, 0,
                                                                               False)
        seen = {}
        for tick in range(1, ticks + 1):
            if tick == 500:  # an operator's gift: over any capacity, were there one
                world.inbox.submit("give", {"target": world.agents()[0][0], "item": "sword",
                                            "qty": 1})
            world.step()
            if tick in hashes:
                seen[tick] = world.state_hash()
        assert seen == {t: h for t, h in hashes.items() if t}
        state = json.loads(world.state_bytes())
        assert "minds" not in state and "brains_cast" not in state.get("abilities", {})
        assert "metrics" not in state and world.metrics.is_empty()
        assert "actions_started" not in world.counters
    finally:
        world.close()


def test_old_brains_never_cast_even_with_a_runner_and_the_built_ins() -> None:
    _saved, world = _saved_before(7)
    runner = FakeRunner(returns())
    world.abilities.runner = runner
    for spec in load_builtins():
        world.abilities.install_builtin(spec)
    try:
        for _ in range(2000):
            world.step()
        assert runner.calls == []
        assert not world.abilities.brains_cast
    finally:
        world.close()


def test_a_new_world_keeps_its_new_rules_and_brain_memory_through_a_save() -> None:
    world = World.create(Config(), seed=5)
    world.abilities.runner = FakeRunner(returns())
    for spec in load_builtins():
        world.abilities.install_builtin(spec)
    assert world.abilities.brains_cast  # made with the sandbox: its brains cast
    try:
        for _ in range(3000):
            world.step()
        state = json.loads(world.state_bytes())
        assert state["abilities"]["brains_cast"] is True
        assert state["config"]["game"]["brain_version"] == 2
        again = World.from_state(state)
        again.abilities.runner = world.abilities.runner
        for spec in load_builtins():
            again.abilities.install_builtin(spec)
        assert again.state_hash() == world.state_hash()
        for _ in range(500):
            world.step()
            again.step()
        assert again.state_hash() == world.state_hash()
        again.close()
    finally:
        world.close()


# -- metrics counted before game.metrics_version ---------------------------------------------

METRICS_WORLD = {"size": [40, 40], "starting_agents": 10, "capture_points": 2}


def _saved_with_old_metrics(seed: int) -> World:
    """A new world with metrics on, saved as the program before ``game.metrics_version``
    saved it (no such key in its rules), and loaded again."""
    world = World.create(Config().replace(world=METRICS_WORLD), seed=seed)
    state = json.loads(world.state_bytes())
    world.close()
    state["config"]["game"].pop("metrics_version", None)
    for key in NEW_ABILITIES:  # added since, too
        state["config"]["abilities"].pop(key)
    return World.from_state(state)


def _metric_farming(world: World, tick: int, names: dict[str, int]) -> None:
    """Inputs that hit every rule the metrics version changed: a farmer that drops its
    berries and picks them up again, a red agent that strikes its teammate, and teams that
    go for two capture points."""
    if tick == 1:
        for name, team in (("Rua", "red"), ("Rob", "red"), ("Bea", "blue"), ("Bo", "blue")):
            world.inbox.submit("spawn", {"kind": "agent", "name": name, "team": team,
                                         "personality": "aggressive"})
        world.inbox.submit("spawn", {"kind": "agent", "name": "Farmer",
                                     "personality": "cautious"})
        return
    if tick == 2:
        names.update({n: world.population.find(n) or 0 for n in ("Rua", "Rob", "Farmer")})
        world.inbox.submit("give", {"target": names["Farmer"], "item": "berries", "qty": 5})
        world.inbox.submit("give", {"target": names["Farmer"], "item": "gold", "qty": 9})
        return
    farmer = names.get("Farmer", 0)
    if tick % 10 == 0 and world.alive(farmer):
        inv = world.store.get(farmer, c.Inventory)
        pos = world.store.get(farmer, c.Position)
        here = sorted(world.ground.items.at(pos.x, pos.y))
        if inv.count("berries"):
            action = {"name": "drop", "args": {"item": "berries", "qty": inv.count("berries")}}
        elif inv.gold:
            action = {"name": "drop", "args": {"item": "gold", "qty": inv.gold}}
        elif here:
            action = {"name": "pickup", "args": {"target": here[0]}}
        else:
            return
        world.inbox.submit("plan", {"agent": farmer, "actions": [action]})
    rua, rob = names.get("Rua", 0), names.get("Rob", 0)
    if tick % 200 == 0 and world.alive(rua) and world.alive(rob):
        world.inbox.submit("plan", {"agent": rua,
                                    "actions": [{"name": "attack", "args": {"target": rob}}]})


@pytest.mark.parametrize(("seed", "hashes"), [
    (11, {0: "3ff2c6fa98d0965b1385b5cdeef87fb1", 1000: "b6cb2eca42f710f81a937ba10d8938a0",
          3000: "c4774212d90ac038019d14d504ecd50f"}),
])
def test_a_world_saved_before_the_metrics_version_counts_as_it_did(
        seed: int, hashes: dict[int, str]) -> None:
    # The hashes and the farmer's figures were computed by the program before the setting
    # (commit 81e471e), where every pickup, hit and capture counted.
    world = _saved_with_old_metrics(seed)
    names: dict[str, int] = {}
    try:
        assert world.metrics.enabled
        seen = {0: world.state_hash()}
        for tick in range(1, 3001):
            _metric_farming(world, tick, names)
            world.step()
            if tick in hashes:
                seen[tick] = world.state_hash()
        assert seen == hashes
        farmer = world.metrics.of(names["Farmer"])
        assert (farmer["food_gathered"], farmer["gold_earned"]) == (404.0, 3996.0)
    finally:
        world.close()
