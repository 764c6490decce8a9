"""What the thinking layer knows about each agent it serves between decisions (never world
state): whether it is thinking, what it last decided, its last error, and what it had seen,
so that events can trigger the next decision instead of every tick. ``source`` is the
``plan_source`` its plans carry: once the agent's plan is another's, its own has ended.

``triggers`` says why one agent should think now; ``pressed`` says, from a tick's events,
which agents may have pressing news (attacked, spoken to, offered a trade), so that the
pipeline looks at those and not at every agent it serves."""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.world import World
from agent_world.types import Event, LLMUsage

if TYPE_CHECKING:  # the agents package imports the LLM's, which imports this
    from agent_world.contract.observation import Observation

__all__ = ["EARSHOT_MARGIN", "FIGHT_GAP_TICKS", "NEAR_TILES", "NEVER_ASKED", "PRESSING",
           "REACTIVE", "STARVING", "Mind", "pressed", "triggers"]

STARVING = 80.0
NEAR_TILES = 3  # a newcomer this close is worth a thought; one further off is not
ENEMY = -0.3  # a feeling this low makes any newcomer worth a thought
REACTIVE = frozenset({"first thought", "attacked", "starving", "spoken to",
                      "offer received"})
"""Reasons an agent thinks at once, whatever its pace allows (the rest wait their turn)."""
PRESSING = REACTIVE - {"first thought"}
"""Reasons that go ahead of queued work and are kept until asked: news that goes stale."""
APPLY_GRACE_TICKS = 50  # a decision not seen applied by then is given up on
FIGHT_GAP_TICKS = 100
"""Hits by the same attacker closer together than this are one fight: only its first hit is
news worth an urgent decision (the agent's reflexes answer the rest, and its plan for the
fight stands). Measured at 2,000 LLM agents, 85% of urgent "attacked" asks were such
repeats (bench/RESULTS.md, issue 32)."""
NEVER_ASKED = -1_000_000
EARSHOT_MARGIN = 2  # tiles a listener may have moved in the tick it heard something
SPOKEN_AT = frozenset({ev.SAY, ev.SPOKEN})  # speech heard within hearing_radius of a tile


@dataclass
class Mind:
    agent: int
    status: str = "idle"  # idle | queued | thinking | applying | acting
    asked_tick: int = NEVER_ASKED
    reasons: tuple[str, ...] = ()
    rid: int = 0  # the latest request's id
    applied_rid: int = 0
    answered_tick: int = 0
    seen: frozenset[int] = frozenset()
    seen_list: list[int] = field(default_factory=list)
    attacked_seen: int = -1_000_000
    attacker_seen: int = -1  # who hit it at ``attacked_seen``
    heard_seen: int = -1_000_000
    offers_seen: frozenset[int] = frozenset()
    last_prompt_tokens: int = 0
    last_prompt: str = ""  # the per-decision part of the last prompt (/debug shows it)
    last_observation: Observation | None = None  # at the last prompt: what changed since
    last_decision: str = ""
    last_decision_tick: int = -1
    last_error: str = ""  # shown in the next prompt, so the model can correct itself
    last_error_tick: int = -1
    trim_next: bool = False  # the last prompt was too long for the model: send less
    decisions: int = 0
    errors: int = 0
    notes: list[str] = field(default_factory=list)
    interval: int = 0  # ticks between unprompted decisions for this agent (0: the brain's)
    next_ask_tick: int = 0  # the last decision's "ask me again at" (0: none)
    pending: tuple[str, ...] = ()  # reactive reasons seen while it could not ask
    pending_since: int = 0
    allowance: float = 3.0  # decisions it may ask for now unprompted (below 1: it waits)
    allowance_tick: int = -1  # when the allowance was last topped up (-1: never)
    last_usage: LLMUsage | None = None  # tokens of its last answered call


def triggers(world: World, mind: Mind, *, interval: int,
             source: str) -> tuple[list[str], bool]:
    """Why this agent should think now (empty: it need not) and whether it is urgent.
    Updates what the mind has seen, so each event triggers once."""
    store = world.store
    eid = mind.agent
    tick = world.tick
    reasons: list[str] = []
    urgent = False
    combat = store.get(eid, c.Combat)
    if combat.last_attacked > mind.attacked_seen:
        new_fight = (combat.last_attacker != mind.attacker_seen
                     or combat.last_attacked - mind.attacked_seen > FIGHT_GAP_TICKS)
        mind.attacked_seen = combat.last_attacked
        mind.attacker_seen = combat.last_attacker
        if new_fight and combat.last_attacked >= tick - 1:
            reasons.append("attacked")
            urgent = True
    needs = store.get(eid, c.Needs)
    if needs.hunger >= STARVING and mind.asked_tick < tick - interval // 3:
        reasons.append("starving")
        urgent = True
    perc = store.get(eid, c.Perception)
    if perc.agents != mind.seen_list:  # cheap when nothing changed, as on most ticks
        seen = frozenset(perc.agents)
        if mind.asked_tick > NEVER_ASKED and _someone_near(world, eid, seen - mind.seen):
            reasons.append("new agent seen")
        mind.seen = seen
        mind.seen_list = list(perc.agents)
    # Speech is appended in tick order: look further only when the newest line is new.
    latest = perc.heard[-1] if perc.heard else None
    heard = ([h for h in perc.heard if int(h.get("tick", 0)) > mind.heard_seen]
             if latest is not None and int(latest.get("tick", 0)) > mind.heard_seen else [])
    if heard:
        mind.heard_seen = max(int(h.get("tick", 0)) for h in heard)
        name = store.get(eid, c.Agent).name.lower()
        if any(h.get("to") == eid or name in str(h.get("text", "")).lower() for h in heard):
            reasons.append("spoken to")
    waiting = world.market.received(eid)
    if waiting or mind.offers_seen:
        offers = frozenset(offer["id"] for offer in waiting)
        if offers - mind.offers_seen:
            reasons.append("offer received")
        mind.offers_seen = offers
    intent = store.get(eid, c.Intent)
    hint = mind.next_ask_tick
    if mind.status == "acting" and intent.plan_source != source:
        mind.status = "idle"
        if tick >= hint:  # else it said it would be busy until then
            reasons.append("plan finished")
    if mind.asked_tick == NEVER_ASKED:
        reasons.append("first thought")
    elif hint:
        if tick >= hint:
            reasons.append("the time it asked for")
    elif tick - mind.asked_tick >= interval:
        reasons.append("interval")
    return reasons, urgent


def _someone_near(world: World, eid: int, newcomers: frozenset[int]) -> bool:
    """Whether a newly seen agent matters: close by, or one this agent feels badly about.
    (Agents walking past at the edge of sight are not worth a decision.)"""
    if not newcomers:
        return False
    store = world.store
    here = store.get(eid, c.Position)
    feelings = store.get(eid, c.Social).relationships
    for other in newcomers:
        pos = store.try_get(other, c.Position)
        if pos is None:
            continue
        if (max(abs(pos.x - here.x), abs(pos.y - here.y)) <= NEAR_TILES
                or feelings.get(other, 0.0) <= ENEMY):
            return True
    return False


def pressed(world: World, events: Iterable[Event], served: Container[int]) -> set[int]:
    """The agents of ``served`` to whom this tick's ``events`` may have brought pressing
    news: the target of an attack or of a trade offer, whoever a line of speech is said
    to or names (among those within earshot, or the team for a team message), and every
    agent within reach of an ability's cast (it may have struck, moved or told them
    something). A superset: ``triggers`` decides, from the agent's own components, whether
    it is news. Those the events do not name need no look for these reasons: what they
    heard names someone else, and an attack or an offer always names its target."""
    out: set[int] = set()
    store = world.store
    for event in events:
        kind = event.get("type")
        if kind in (ev.ATTACK, ev.TRADE_OFFER):
            target = _id(event.get("target"))
            if target is not None and target in served:
                out.add(target)
        elif kind in SPOKEN_AT or kind == ev.TEAM_SAY:
            to = _id(event.get("to"))
            if to is not None and to in served:
                out.add(to)
            text = str(event.get("text", "")).lower()
            for eid in _listeners(world, event):
                if eid in served and eid not in out:
                    agent = store.try_get(eid, c.Agent)
                    if agent is not None and agent.name.lower() in text:
                        out.add(eid)
        elif kind == ev.ABILITY:
            out.update(eid for eid in _reach(world, event) if eid in served)
    return out


def _id(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _position(world: World, value: object) -> c.Position | None:
    eid = _id(value)
    return None if eid is None else world.store.try_get(eid, c.Position)


def _listeners(world: World, event: Event) -> Iterable[int]:
    """Who may have heard a line of speech (a superset: listeners may have moved since)."""
    if event.get("type") == ev.TEAM_SAY:
        return world.population.teams.get(str(event.get("team")), ())
    if event.get("type") == ev.SPOKEN:
        x, y = event.get("x"), event.get("y")
    else:
        pos = _position(world, event.get("agent"))
        if pos is None:  # the speaker died in the tick it spoke: look at everyone
            return [eid for eid, _row in world.agents()]
        x, y = pos.x, pos.y
    if not isinstance(x, int) or not isinstance(y, int):
        return ()
    radius = world.rules.hearing_radius + EARSHOT_MARGIN
    return [eid for _d2, eid in world.agents_grid.near(x, y, radius)]


def _reach(world: World, event: Event) -> Iterable[int]:
    """Who an ability's cast may have touched: within its largest range of the caster
    (or earshot of its message), allowing for a move and pushes in the same cast."""
    pos = _position(world, event.get("agent"))
    if pos is None:  # the caster died in its cast: look at everyone
        return [eid for eid, _row in world.agents()]
    rules = world.ability_rules
    radius = (max(rules.max_range, world.rules.hearing_radius) + rules.max_move_tiles
              + rules.max_push_tiles + EARSHOT_MARGIN)
    return [eid for _d2, eid in world.agents_grid.near(pos.x, pos.y, radius)]
