"""Starting and finishing actions: the bookkeeping every system shares."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.actions import Action
from agent_world.core.minds import UNREACHABLE_TICKS

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["chebyshev", "fail", "finish", "give_up_on", "reach", "start", "target_position"]

# Actions whose reach is a game setting rather than a fixed number of tiles.
_TRADE_REACH = frozenset({"give", "trade_offer"})


def chebyshev(ax: int, ay: int, bx: int, by: int) -> int:
    return max(abs(ax - bx), abs(ay - by))


def reach(world: World, action: Action) -> int:
    """Tiles (Chebyshev) within which ``action`` takes effect."""
    if action.name in _TRADE_REACH:
        return world.rules.trade_range
    if action.name == "use_ability":
        return world.abilities.range_of(action.args["ability"])
    return action.spec.reach


TIMEOUT_MARGIN = 10  # ticks an action with its own duration may overrun it


def start(world: World, intent: c.Intent, action: Action) -> None:
    intent.action = action
    intent.since = world.tick
    if action.name == "request_ability":  # the abilities system ends it on its own timeout
        intent.deadline = world.tick + world.ability_rules.request_timeout_ticks + TIMEOUT_MARGIN
    else:
        lasts = world.rules.craft_ticks if action.name == "craft" else action.args.get("ticks", 0)
        intent.deadline = world.tick + max(world.rules.action_timeout_ticks,
                                           lasts + TIMEOUT_MARGIN)
    intent.path = []
    intent.goal = -1
    intent.next_think = world.tick + world.rules.think_interval_ticks


def finish(intent: c.Intent, result: str = "ok") -> None:
    intent.action = None
    intent.last_result = result
    intent.path = []
    intent.goal = -1


def fail(world: World, eid: int, intent: c.Intent, reason: str) -> None:
    """End the current action as failed; the agent remembers why (and so can an LLM)."""
    action = intent.action
    finish(intent, f"failed: {reason}")
    world.emit(ev.ACTION_FAILED, agent=eid, name=world.name_of(eid),
               action=str(action), reason=reason)
    world.remember(eid, f"{action} failed: {reason}")


def target_position(world: World, target: int) -> c.Position | None:
    return world.store.try_get(target, c.Position)


def give_up_on(world: World, eid: int, target: int) -> None:
    """An action on ``target`` failed in a way that would fail again (no path, nothing left,
    caught stealing): the agent's brain leaves it alone for a while (not by the first
    rules)."""
    if world.ruleset.avoids_unreachable:
        world.minds.avoid(eid, target, world.tick + UNREACHABLE_TICKS)
