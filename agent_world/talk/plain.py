"""The plain answer: what an agent whose brain cannot speak for itself (a built-in brain, a
policy, a remote agent, a user's brain without an ``interview``) says to an interviewer,
made from its state alone: needs, goods, plan, likes and dislikes, what happened lately.

Deterministic: the same world and question give the same words. The question picks what
comes first (a question about food leads with its needs, one about gold with its goods);
with no topic recognised the agent says a little of everything.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.world import World

__all__ = ["TOPICS", "plain_answer"]

TOPICS: dict[str, tuple[str, ...]] = {
    "needs": ("hungry", "hunger", "food", "eat", "starving", "health", "hurt", "energy",
              "tired", "rest", "feel", "feeling", "well", "sick"),
    "goods": ("gold", "money", "rich", "poor", "carry", "own", "have", "goods", "trade",
              "price", "sell", "buy", "inventory", "wealth"),
    "plan": ("plan", "doing", "next", "going", "goal", "why", "want", "intend", "now"),
    "people": ("like", "friend", "friends", "trust", "hate", "enemy", "enemies", "dislike",
               "who", "people", "neighbours", "neighbors", "others"),
    "recent": ("happen", "happened", "recent", "recently", "lately", "remember", "seen",
               "today", "news", "story"),
}
_WORD = re.compile(r"[a-z]+")
MAX_RECENT = 3  # memory lines told
MAX_PEOPLE = 2  # liked and disliked agents named, each


def _level(value: float, words: tuple[str, str, str, str]) -> str:
    """One of four words for a 0-100 value (low to high)."""
    return words[min(3, int(max(0.0, min(100.0, value)) // 25))]


def _needs(world: World, eid: int) -> str:
    needs = world.store.get(eid, c.Needs)
    hunger = _level(needs.hunger, ("well fed", "a little hungry", "hungry", "starving"))
    energy = _level(needs.energy, ("exhausted", "tired", "rested enough", "well rested"))
    health = needs.health / needs.max_health * 100 if needs.max_health else 0
    hurt = _level(health, ("badly hurt", "hurt", "a little bruised", "healthy"))
    return (f"I am {hunger} (hunger {needs.hunger:.0f}/100), {energy} (energy "
            f"{needs.energy:.0f}/100) and {hurt} (health {needs.health:.0f}/"
            f"{needs.max_health:.0f}).")


def _goods(world: World, eid: int) -> str:
    inv = world.store.get(eid, c.Inventory)
    goods = [f"{n} {kind}" for kind, n in sorted(inv.items.items()) if n > 0]
    carried = ", ".join(goods) if goods else "nothing"
    return f"I carry {carried}, and {inv.gold} gold."


def _doing(action: Action) -> str:
    args = ", ".join(f"{k}={v}" for k, v in sorted(action.args.items()))
    return f"{action.name.replace('_', ' ')}" + (f" ({args})" if args else "")


def _plan(world: World, eid: int) -> str:
    intent = world.store.get(eid, c.Intent)
    now = (f"Right now I {_doing(intent.action)}" if intent.action is not None
           else "Right now I am deciding what to do")
    later = (f"; then I mean to {', then '.join(_doing(a) for a in intent.plan[:3])}"
             if intent.plan else "")
    return now + later + "."


def _people(world: World, eid: int) -> str:
    social = world.store.get(eid, c.Social)
    ranked = sorted(social.relationships.items(), key=lambda kv: (-kv[1], kv[0]))
    liked = [world.label(o) for o, v in ranked if v >= 0.2 and world.is_agent(o)][:MAX_PEOPLE]
    disliked = [world.label(o) for o, v in reversed(ranked)
                if v <= -0.2 and world.is_agent(o)][:MAX_PEOPLE]
    parts = []
    if liked:
        parts.append(f"I like {' and '.join(liked)}")
    if disliked:
        parts.append(f"I don't trust {' and '.join(disliked)}")
    if not parts:
        return "I have no strong feelings about anyone here yet."
    return "; ".join(parts) + "."


def _recent(world: World, eid: int) -> str:
    memory = world.store.get(eid, c.Memory)
    lines = [str(m.get("text", "")) for m in memory.recent[-MAX_RECENT:] if m.get("text")]
    if not lines:
        return "Nothing much has happened to me lately."
    return "Lately: " + "; ".join(lines) + "."


_PARTS: dict[str, Callable[[World, int], str]] = {
    "needs": _needs, "goods": _goods, "plan": _plan, "people": _people, "recent": _recent}


def plain_answer(world: World, eid: int, question: str) -> str:
    """Agent ``eid``'s answer to ``question`` from its state (a living agent)."""
    agent = world.store.get(eid, c.Agent)
    words = set(_WORD.findall(question.lower()))
    asked = [topic for topic, keys in TOPICS.items() if words.intersection(keys)]
    order = asked or list(_PARTS)
    team = world.store.try_get(eid, c.Team)
    intro = (f"I am {agent.name}, {agent.personality} by nature"
             + (f" of team {team.name}" if team is not None else "") + ".")
    return " ".join([intro, *(_PARTS[topic](world, eid) for topic in order)])
