"""One agent of a scenario as a Gymnasium ``Env`` (``agent_world.rl.gym_env``): the parallel
env playing one subject, the scenario's other subjects on the ``others`` brain (built-in
by default), the other teams on their own brains.

``reset(seed=S)`` plays the world of seed ``S``; ``reset()`` without a seed plays the world
of a seed drawn from ``np_random`` (which the last seed started), so a seeded sequence of
resets is the same sequence of worlds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from agent_world.eval.scenario import Scenario
from agent_world.rl.env import MAX_SEED, AgentWorldEnv

__all__ = ["AgentWorldGymEnv"]


class AgentWorldGymEnv(gymnasium.Env[Any, Any]):
    """A scenario for one agent: ``agent`` (a subject's name, default the first subject);
    the other options are the parallel env's (``AgentWorldEnv``)."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012  (Gymnasium's form)

    def __init__(self, scenario: str | Scenario, *, agent: str | None = None,
                 **options: Any) -> None:
        if "agents" in options:
            raise TypeError("gym_env plays one agent: give agent=NAME (a subject's name), "
                            "not agents=")
        self.parallel = AgentWorldEnv(scenario, agents=1 if agent is None else [agent],
                                      **options)
        self.agent = self.parallel.possible_agents[0]
        self.observation_space: spaces.Space[Any] = self.parallel.observation_space(self.agent)
        self.action_space: spaces.Space[Any] = self.parallel.action_space(self.agent)

    @property
    def folder(self) -> Path | None:
        """The save folder of the latest episode."""
        return self.parallel.folder

    def state_hash(self) -> str:
        return self.parallel.state_hash()

    def action_label(self, action: int) -> str:
        return self.parallel.action_label(action)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        world_seed = seed if seed is not None else int(self.np_random.integers(MAX_SEED))
        observations, infos = self.parallel.reset(seed=world_seed)
        if self.agent not in observations:
            raise RuntimeError(f"{self.agent} did not enter the world of seed {world_seed} "
                               "(no free tile for it?); try another seed")
        return observations[self.agent], infos[self.agent]

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observations, rewards, terminations, truncations, infos = self.parallel.step(
            {self.agent: action})
        agent = self.agent
        return (observations[agent], rewards[agent], bool(terminations[agent]),
                bool(truncations[agent]), infos[agent])

    def close(self) -> None:
        self.parallel.close()
