"""A fresh default world visibly lives: within a few minutes of world time its 20 built-in
agents forage, eat, trade, talk, fight and die."""

from __future__ import annotations

import pytest

from agent_world.config import Config
from agent_world.core.world import World

FIVE_MINUTES = 3000  # ticks at the default 10 Hz


@pytest.mark.parametrize("seed", [42, 7, 2026])
def test_a_fresh_world_of_20_agents_lives_within_five_minutes(seed: int) -> None:
    config = Config()
    assert config.world.starting_agents == 20 and not config.llm.enabled
    world = World.create(config, seed=seed)
    first: dict[str, int] = {}
    try:
        for _ in range(FIVE_MINUTES):
            for event in world.step().events:
                first.setdefault(event["type"], world.tick)
    finally:
        world.close()
    behaviours = {
        "foraging": ("pickup", "harvest"),
        "eating": ("eat",),
        "trading": ("trade",),
        "talking": ("say",),
        "fighting": ("attack",),
        "dying": ("death",),
    }
    missing = [name for name, kinds in behaviours.items() if not any(k in first for k in kinds)]
    assert not missing, f"seed {seed}: no {', '.join(missing)} in five minutes ({first})"
