"""Any scenario as a standard reinforcement-learning environment (``pip install -e '.[rl]'``):

    import agent_world.rl
    env = agent_world.rl.parallel_env("foraging", ticks=600)   # PettingZoo ParallelEnv
    one = agent_world.rl.gym_env("survival")                   # Gymnasium Env, one agent
    one = gymnasium.make("AgentWorld/survival-v0")            # the same, by its id

An optional extra: nothing else in the package imports it (docs/evaluation.md,
"Reinforcement learning", documents the observations, the actions and the options).
"""

from __future__ import annotations

from typing import Any

try:
    import gymnasium
    import pettingzoo  # noqa: F401
except ImportError as exc:  # the extra is not installed: say how to get it
    raise ImportError(f"agent_world.rl needs PettingZoo and Gymnasium ({exc.name} is "
                      "missing): pip install -e '.[rl]' (or pip install 'pettingzoo>=1.24' "
                      "'gymnasium>=1.0')") from exc

from agent_world.eval.scenario import Scenario, built_in_names
from agent_world.rl.env import AgentWorldEnv
from agent_world.rl.layout import LayoutError
from agent_world.rl.single import AgentWorldGymEnv

__all__ = ["AgentWorldEnv", "AgentWorldGymEnv", "LayoutError", "gym_env", "gym_id",
           "parallel_env"]


def parallel_env(scenario: str | Scenario, **options: Any) -> AgentWorldEnv:
    """A scenario (a built-in name, a YAML file's path or a ``Scenario``) as a PettingZoo
    ``ParallelEnv`` over its subjects; ``options`` as ``AgentWorldEnv`` takes them."""
    return AgentWorldEnv(scenario, **options)


def gym_env(scenario: str | Scenario, **options: Any) -> AgentWorldGymEnv:
    """A scenario as a Gymnasium ``Env`` playing one subject (``agent=NAME``, default the
    first); ``options`` as ``AgentWorldEnv`` takes them."""
    return AgentWorldGymEnv(scenario, **options)


def gym_id(scenario: str) -> str:
    """The Gymnasium id of a built-in scenario: ``AgentWorld/NAME-v0``."""
    return f"AgentWorld/{scenario}-v0"


# Each built-in scenario is registered with Gymnasium (gymnasium.make(gym_id(NAME), **options)),
# once, however often this module is imported.
for _name in built_in_names():
    if gym_id(_name) not in gymnasium.registry:
        gymnasium.register(gym_id(_name), entry_point="agent_world.rl:gym_env",
                           kwargs={"scenario": _name})
