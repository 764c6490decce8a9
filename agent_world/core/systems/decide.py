"""Deciding: agents take the next action of their plan, or their brain chooses one.

Plans come from outside (an LLM decision or the console, as inputs). Agents with no plan
use the built-in brain of their personality. Every chosen action passes ``begin``, which
applies the same checks whoever chose it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.systems.acting import fail, give_up_on, start

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["begin", "decide_system"]


def begin(world: World, eid: int, row: AgentRow, action: Action) -> bool:
    """Start ``action`` if it makes sense right now; otherwise fail it with the reason.

    Every action begun is counted (``actions_started``; not by the first rules), so that
    the share of failed actions can be read off the census counters."""
    intent = row.intent
    if world.ruleset.counts_actions_started:
        world.count("actions_started")
    target = action.args.get("target")
    if target is not None:
        tpos = world.store.try_get(target, c.Position)
        if tpos is None:
            start(world, intent, action)
            fail(world, eid, intent, f"#{target} does not exist")
            return False
        pos = row.pos
        sight = world.rules.vision_radius + 2
        if max(abs(tpos.x - pos.x), abs(tpos.y - pos.y)) > sight:
            start(world, intent, action)
            fail(world, eid, intent, f"{world.label(target)} is out of sight")
            give_up_on(world, eid, target)
            return False
        if target == eid:
            start(world, intent, action)
            fail(world, eid, intent, f"cannot {action.name} yourself")
            return False
    start(world, intent, action)
    return True


def decide_system(world: World) -> None:
    tick = world.tick
    interval = world.rules.think_interval_ticks
    decide = world.ruleset.decide
    doing: defaultdict[str, list[tuple[int, AgentRow]]] = defaultdict(list)
    columns = world.agent_columns()
    calm = tick - 1  # attacked at or after it: decide now
    played = world.players.seats  # their brains are paused: only their players' orders
    for pair, intent, combat in zip(columns.rows, columns.intents, columns.combats,
                                    strict=True):
        action = intent.action
        # Most agents have nothing to decide: an action within its deadline, not attacked,
        # and following a plan or not yet due to reconsider.
        if (action is not None and tick <= intent.deadline and combat.last_attacked < calm
                and (intent.plan_source or tick < intent.next_think)):
            doing[action.name].append(pair)
            continue
        eid, row = pair
        if action is not None and tick > intent.deadline:
            fail(world, eid, intent, "timed out")
            action = None
        if played and eid in played:
            if action is None and intent.plan:
                begin(world, eid, row, intent.plan.pop(0))
            if intent.action is not None:
                doing[intent.action.name].append(pair)
            continue
        attacked = combat.last_attacked >= calm
        following = False
        if intent.plan_source and not attacked:
            if action is None:
                if intent.plan:
                    begin(world, eid, row, intent.plan.pop(0))
                else:
                    intent.plan_source = ""
            following = bool(intent.plan_source)
        if not following and (action is None or tick >= intent.next_think or attacked):
            if intent.plan_source:  # attacked while following a plan: instinct takes over
                world.remember(eid, "plan interrupted: attacked")
                intent.plan.clear()
                intent.plan_source = ""
            choice = decide(world, eid, row)
            if choice is None or choice == action:
                intent.next_think = tick + interval
            else:
                begin(world, eid, row, choice)
        action = intent.action
        if action is not None:
            doing[action.name].append(pair)
    world.schedule.decided(world, doing)
