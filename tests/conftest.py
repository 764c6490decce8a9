"""Shared fixtures: small configs, worlds built from them, and the built-in brains' choices."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_world.config import Config
from agent_world.core.actions import Action
from agent_world.core.rules import compat
from agent_world.core.world import World

# A generated web token is kept in a file of the runtime folder (docs/api.md, "Security"):
# the worlds the tests start, in-process or as programs, keep theirs in a scratch folder,
# never in the home folder of whoever runs the tests.
os.environ.setdefault("AGENT_WORLD_RUNTIME_DIR", tempfile.mkdtemp(prefix="aw-runtime-"))


def small_config(**world: Any) -> Config:
    """A 32x32 world with few agents; keyword arguments override world settings."""
    settings: dict[str, Any] = {"size": [32, 32], "starting_agents": 8}
    settings.update(world)
    return Config().replace(world=settings)


@pytest.fixture
def make_world() -> Iterator[Callable[..., World]]:
    """Build worlds (``make_world(seed=..., **world_settings)``) closed after the test."""
    made: list[World] = []

    def build(seed: int = 1, **world: Any) -> World:
        w = World.create(small_config(**world), seed=seed)
        made.append(w)
        return w

    yield build
    for w in made:
        w.close()


@pytest.fixture
def decisions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str, Action | None]]:
    """Every (agent id, personality, choice) the built-in brain makes, in order."""
    made: list[tuple[int, str, Action | None]] = []

    def spying(real: Callable[..., Action | None]) -> Callable[..., Action | None]:
        def spy(world, eid, row):
            choice = real(world, eid, row)
            made.append((eid, row[0].personality, choice))
            return choice
        return spy

    # Every rules version's brains: a world takes its Ruleset when it is made, after this.
    for version, rules in list(compat.RULESETS.items()):
        monkeypatch.setitem(compat.RULESETS, version,
                            dataclasses.replace(rules, decide=spying(rules.decide)))
    return made
