"""The simulation core. It stands alone: nothing here imports the console, persistence,
LLM or sandbox layers (tests/test_architecture.py checks the import graph)."""

from agent_world.core.actions import ACTIONS, Action, ActionError, parse_action
from agent_world.core.world import World, WorldError

__all__ = ["ACTIONS", "Action", "ActionError", "World", "WorldError", "parse_action"]
