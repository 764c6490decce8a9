"""The brain classes a user subclasses: ``SimpleBrain`` (tier 1) and ``Brain`` (tier 2).

One instance per agent, made on a worker thread the first time the agent decides; every
method runs on a worker thread, never inside a tick, one call at a time per agent. A brain
that raises, hangs past ``brains.deadline_ms`` or answers something that is not a valid
decision leaves its agent on the built-in brain for that decision; the fault is counted
and shown (``/stats``, ``/debug``, the world log).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_world.agents.decision import Decision, DecisionError
from agent_world.agents.observation import Observation
from agent_world.core.items import ITEMS

__all__ = ["Brain", "SimpleBrain", "sensible_args"]


class Brain:
    """Tier 2: answer a ``Decision`` or a short plan of them from an ``Observation``.

    ``actions`` maps every action's name to its JSON Schema (``python main.py schema
    --part actions``). The hooks are called before the next ``decide``, in order."""

    def decide(self, obs: Observation, actions: Mapping[str, Any]
               ) -> Decision | Sequence[Decision]:
        raise NotImplementedError

    def on_spawn(self, agent_id: int) -> None:
        """The agent this brain thinks for; called once, before its first decision."""

    def on_result(self, action: str, outcome: str) -> None:
        """How the agent's last decided action ended: ``ok`` or why it failed."""

    def on_event(self, event: Mapping[str, Any]) -> None:
        """An event that names the agent (an attack on it, speech to it, a trade ...)."""

    def on_death(self) -> None:
        """The agent died; no ``decide`` follows."""


class SimpleBrain(Brain):
    """Tier 1: name an action; the world picks sensible arguments (``sensible_args``)."""

    def decide_action(self, ctx: Observation) -> str:
        raise NotImplementedError

    def decide(self, obs: Observation, actions: Mapping[str, Any]) -> Decision:
        name = self.decide_action(obs)
        if not isinstance(name, str):
            raise DecisionError(f"a SimpleBrain answers an action's name, got "
                                f"{type(name).__name__}")
        return Decision(name, sensible_args(name, obs))


def _nearest_food(obs: Observation) -> int | None:
    return next((i.id for i in obs.items if ITEMS[i.kind].category == "food"), None)


def sensible_args(action: str, obs: Observation) -> dict[str, Any]:
    """Arguments for ``action`` from what the agent perceives: the nearest food for
    ``pickup`` (else the nearest item), the nearest harvestable object for ``use``, the
    nearest agent for ``attack``, ``follow`` and ``flee``, the first offer for
    ``trade_accept`` and ``trade_decline``, the nearest food or item for ``move_to``.
    DecisionError when there is nothing to act on; ``{}`` for actions that need none."""
    nearest_agent = obs.agents[0].id if obs.agents else None
    if action in ("attack", "follow", "flee"):
        target = nearest_agent
    elif action == "pickup":
        target = _nearest_food(obs) or (obs.items[0].id if obs.items else None)
    elif action == "use":
        target = next((o.id for o in obs.objects if o.stock > 0 or o.kind == "shelter"),
                      None)
    elif action == "move_to":
        target = _nearest_food(obs) or (obs.items[0].id if obs.items else None) or (
            obs.objects[0].id if obs.objects else None)
    elif action in ("trade_accept", "trade_decline"):
        if not obs.offers:
            raise DecisionError(f"{action}: no offer was made to this agent")
        return {"offer": obs.offers[0].id}
    elif action in ("idle", "wander", "rest", "defend", "eat"):
        return {}
    else:
        raise DecisionError(f"{action}: a SimpleBrain cannot pick its arguments; answer "
                            "a Decision from a Brain")
    if target is None:
        raise DecisionError(f"{action}: nothing in sight to {action.replace('_', ' ')}")
    return {"target": target}
