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

from agent_world.config import Config, legacy_values
from agent_world.core.world import World
from agent_world.sandbox.host import load_builtins

NEW_GAME = ("brain_version", "carry_capacity", "food_spoilage", "ground_item_life_ticks",
            "market_fee", "gold_upkeep_per_hour", "upkeep_free_gold", "weapon_wear",
            "estate_dues", "inheritance", "lifespan_ticks", "ability_requests_per_hour",
            "agent_metrics", "hazard_damage", "recipes", "craft_ticks", "capture_radius",
            "capture_ticks", "team_channel_size", "team_message_chars")
NEW_WORLD = ("immigrants_fill_mix", "hazard_tiles_per_1000_tiles", "capture_points")
NEW_ABILITIES = ("tick_steps",)


def test_every_new_setting_has_the_legacy_value_of_the_old_rules() -> None:
    game = legacy_values("game")
    assert {k: game[k] for k in NEW_GAME} == {
        "brain_version": 1, "carry_capacity": 0.0, "food_spoilage": 0.0,
        "ground_item_life_ticks": 0, "market_fee": 0.0, "gold_upkeep_per_hour": 0.0,
        "upkeep_free_gold": 0, "weapon_wear": 0.0, "estate_dues": 0.0, "inheritance": False,
        "lifespan_ticks": 0, "ability_requests_per_hour": 0.0, "agent_metrics": False,
        # The scenario mechanics are off unless set (no hazards, recipes or points): their
        # numbers keep their defaults.
        "hazard_damage": 1.0, "recipes": {}, "craft_ticks": 20, "capture_radius": 2,
        "capture_ticks": 30, "team_channel_size": 16, "team_message_chars": 80}
    assert legacy_values("world")["immigrants_fill_mix"] is False
    new = Config().game
    assert new.brain_version == 2 and new.carry_capacity > 0 and new.market_fee > 0


def _saved_before(seed: int) -> tuple[bytes, World]:
    """A new world as the program before these rules made it, saved, and loaded again."""
    old_rules = Config().replace(
        game={k: legacy_values("game")[k] for k in NEW_GAME},
        abilities={k: legacy_values("abilities")[k] for k in NEW_ABILITIES},
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
