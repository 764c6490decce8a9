"""Evaluation: scenarios, episodes and brain-against-brain comparisons over many seeds.

``python main.py eval SCENARIO --brains builtin,NAME --seeds 1-20`` runs an episode per
brain and seed (in worker processes), scores each by the scenario's weights of the agents'
metrics and writes JSON, CSV and a markdown table with each brain's mean and 95%
confidence interval (docs/evaluation.md). ``python main.py fork-eval`` forks a saved world
into branches per brain for some of its agents and compares them the same way
(``forks``)."""

from agent_world.eval.episode import Episode, run_episode
from agent_world.eval.scenario import Scenario, ScenarioError, built_in_names, load_scenario

__all__ = ["Episode", "Scenario", "ScenarioError", "built_in_names", "load_scenario",
           "run_episode"]
