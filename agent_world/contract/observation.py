"""``Observation``: what one agent perceives at one tick, as frozen, typed, plain data.

It is built on the main thread (the only thread that reads the world) and handed to a brain
wherever that brain runs: a worker thread, a process, a remote client (``to_dict()`` is its
JSON form). The LLM prompt is rendered from it (``prompt_view``), so a user's brain and the
LLM see the same world. Lists are nearest first; distances are in tiles (Chebyshev: a
diagonal step is one tile).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from agent_world.core import components as c
from agent_world.core.teams import scene_view
from agent_world.core.world import World

__all__ = ["AttackedBy", "Heard", "Observation", "Offer", "Seen", "SeenAgent", "Self",
           "observe"]

RECENT_ATTACK_TICKS = 20  # an attack this recent is part of what the agent knows
PROMPT_SEEN = 5  # agents and offers a prompt lists
PROMPT_THINGS = 4  # items and objects a prompt lists
PROMPT_HEARD = 3
PROMPT_HEARD_TICKS = 600  # older speech is left out of a prompt


@dataclass(frozen=True, slots=True, kw_only=True)
class AttackedBy:
    """Who hit the agent last, within the last ``RECENT_ATTACK_TICKS`` ticks."""

    id: int
    name: str
    ticks_ago: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Self:
    """The agent itself."""

    id: int
    name: str
    personality: str
    x: int
    y: int
    health: float
    max_health: float
    hunger: float  # 0 fed .. 100 starving
    energy: float  # 0 exhausted .. 100 rested
    gold: int
    items: Mapping[str, int]  # carried goods by kind
    reputation: float  # -1 .. 1
    doing: str | None  # the action under way, e.g. "move_to(x=3, y=4)"
    plan: tuple[str, ...]  # the actions queued after it
    last_result: str | None  # how the last action ended, when it did not succeed
    attacked_by: AttackedBy | None
    cooldowns: Mapping[str, int]  # ability name -> ticks until it may be used again
    abilities: tuple[str, ...]  # abilities it may use (built-in and granted, not disabled)


@dataclass(frozen=True, slots=True, kw_only=True)
class SeenAgent:
    id: int
    name: str
    x: int
    y: int
    distance: int
    health_pct: int
    feeling: float | None  # this agent's relationship to it, -1 .. 1 (None: no feeling)


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """An item on the ground (``qty``) or an object (``stock``) in sight."""

    id: int
    kind: str
    x: int
    y: int
    distance: int
    qty: int = 0  # items
    stock: int = 0  # objects: what is left to harvest


@dataclass(frozen=True, slots=True, kw_only=True)
class Heard:
    tick: int
    speaker: int
    speaker_name: str
    text: str
    to_me: bool
    team: bool = False  # sent on the team channel (team_say), from anywhere on the map


@dataclass(frozen=True, slots=True, kw_only=True)
class Offer:
    """A trade offer made to this agent: accept or decline it by ``id``."""

    id: int
    sender: int
    sender_name: str
    gives: Mapping[str, int]  # what the agent would get
    wants: Mapping[str, int]  # what it would give
    expires_in: int  # ticks


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """What one agent perceives at ``tick``: the input of every brain."""

    tick: int
    me: Self
    agents: tuple[SeenAgent, ...]
    items: tuple[Seen, ...]
    objects: tuple[Seen, ...]
    heard: tuple[Heard, ...]  # oldest first
    offers: tuple[Offer, ...]
    prices: Mapping[str, float]  # market price in gold per kind
    memory: tuple[str, ...]  # what happened to it lately, oldest first
    # A scenario's own data: the agent's team and teammates, capture points and recipes
    # (``core.teams.scene_view``), and what the caller adds.
    custom: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (what ``python main.py schema`` describes)."""
        return asdict(self)

    def changes_since(self, previous: Observation) -> dict[str, Any]:
        """What changed for this agent since ``previous`` (its own earlier observation):
        ticks passed, needs, gold and goods (differences, rounded), and agents that came
        into sight or left it. Only what changed is listed."""
        me, was = self.me, previous.me
        out: dict[str, Any] = {"ticks": self.tick - previous.tick}
        for key in ("health", "hunger", "energy"):
            delta = round(getattr(me, key) - getattr(was, key))
            if delta:
                out[key] = delta
        if me.gold != was.gold:
            out["gold"] = me.gold - was.gold
        goods = {k: me.items.get(k, 0) - was.items.get(k, 0)
                 for k in sorted({*me.items, *was.items})}
        goods = {k: d for k, d in goods.items() if d}
        if goods:
            out["items"] = goods
        now = {a.id for a in self.agents}
        before = {a.id for a in previous.agents}
        if now - before:
            out["agents_new"] = sorted(now - before)
        if before - now:
            out["agents_gone"] = sorted(before - now)
        return out

    def prompt_view(self, previous: Observation | None = None) -> dict[str, Any]:
        """The compact form an LLM prompt holds: the tick, the nearest few of each list,
        rounded figures, prices of what matters here only, and (given the observation of
        its last decision) what changed since."""
        me = self.me
        you: dict[str, Any] = {
            "id": me.id, "name": me.name, "at": [me.x, me.y],
            "health_pct": round(100 * me.health / me.max_health),
            "energy": round(me.energy), "hunger": round(me.hunger),
            "gold": me.gold, "items": dict(me.items), "reputation": round(me.reputation, 2),
            "doing": me.doing or "nothing",
        }
        if me.plan:
            you["plan_left"] = list(me.plan)
        if me.last_result:
            you["last_result"] = me.last_result
        if me.attacked_by is not None:
            hit = me.attacked_by
            you["attacked_by"] = {"id": hit.id, "name": hit.name, "ticks_ago": hit.ticks_ago}
        if me.cooldowns:
            you["cooldowns"] = dict(me.cooldowns)
        view: dict[str, Any] = {"tick": self.tick, "you": you}
        if previous is not None:
            view["since_last_decision"] = self.changes_since(previous)
        agents = []
        for a in self.agents[:PROMPT_SEEN]:
            seen: dict[str, Any] = {"id": a.id, "name": a.name, "at": [a.x, a.y],
                                    "dist": a.distance, "health_pct": a.health_pct}
            if a.feeling:
                seen["feeling"] = round(a.feeling, 2)
            agents.append(seen)
        # Things are acted on by id (walking there is automatic): their distance is enough.
        items = [{"id": i.id, "kind": i.kind, "qty": i.qty, "dist": i.distance}
                 for i in self.items[:PROMPT_THINGS]]
        # Hazards go under "scenario" as tiles, nearest first; here they would crowd out the
        # rest.
        objects = [{"id": o.id, "kind": o.kind, "dist": o.distance, "stock": o.stock}
                   for o in self.objects if o.kind != "hazard"][:PROMPT_THINGS]
        heard = []
        recent = [h for h in self.heard if self.tick - h.tick <= PROMPT_HEARD_TICKS]
        for h in recent[-PROMPT_HEARD:]:
            said: dict[str, Any] = {"from": f"{h.speaker_name}#{h.speaker}", "text": h.text,
                                    "ticks_ago": self.tick - h.tick}
            if h.to_me:
                said["to_you"] = True
            if h.team:
                said["team"] = True
            heard.append(said)
        offers = [{"offer": o.id, "from": f"{o.sender_name}#{o.sender}",
                   "gives_you": dict(o.gives), "wants": dict(o.wants),
                   "expires_in": o.expires_in} for o in self.offers[:PROMPT_SEEN]]
        for key, rows in (("agents", agents), ("items", items), ("objects", objects),
                          ("heard", heard), ("offers_to_you", offers)):
            if rows:
                view[key] = rows
        kinds = {*me.items, *(i.kind for i in self.items[:PROMPT_THINGS]), "gold"}
        for o in self.offers[:PROMPT_SEEN]:
            kinds.update(o.gives, o.wants)
        view["prices"] = {k: round(v, 1) for k, v in self.prices.items() if k in kinds}
        scenario = dict(self.custom)
        hazards = [[o.x, o.y] for o in self.objects if o.kind == "hazard"]
        if hazards:
            scenario["hazards"] = hazards
        if scenario:
            view["scenario"] = scenario
        return view


def _distance(pos: c.Position, other: c.Position) -> int:
    return max(abs(pos.x - other.x), abs(pos.y - other.y))


def observe(world: World, eid: int, custom: Mapping[str, Any] | None = None) -> Observation:
    """The observation of living agent ``eid`` now (main thread only)."""
    store = world.store
    row = world.agent_row(eid)
    if row is None:
        raise ValueError(f"{eid} is not an agent")
    agent, pos, needs, inv, intent, combat, perc, social, memory = row[:9]
    tick = world.tick

    attacked_by = None
    if tick - combat.last_attacked <= RECENT_ATTACK_TICKS and combat.last_attacker:
        attacked_by = AttackedBy(id=combat.last_attacker,
                                 name=world.name_of(combat.last_attacker),
                                 ticks_ago=tick - combat.last_attacked)
    book = world.abilities
    ready_at = book.cooldowns.get(eid, {})
    me = Self(
        id=eid, name=agent.name, personality=agent.personality, x=pos.x, y=pos.y,
        health=needs.health, max_health=needs.max_health, hunger=needs.hunger,
        energy=needs.energy, gold=inv.gold, items=dict(inv.items),
        reputation=social.reputation,
        doing=str(intent.action) if intent.action else None,
        plan=tuple(str(a) for a in intent.plan),
        last_result=intent.last_result if intent.last_result not in ("", "ok") else None,
        attacked_by=attacked_by,
        cooldowns={name: at - tick for name, at in sorted(ready_at.items()) if at > tick},
        abilities=tuple(name for name in (*book.builtins, *book.generated)
                        if name not in book.disabled),
    )

    agents = []
    for other in perc.agents:
        opos = store.try_get(other, c.Position)
        oneeds = store.try_get(other, c.Needs)
        if opos is None or oneeds is None:
            continue
        feeling = social.relationships.get(other)
        agents.append(SeenAgent(
            id=other, name=world.name_of(other), x=opos.x, y=opos.y,
            distance=_distance(pos, opos),
            health_pct=round(100 * oneeds.health / oneeds.max_health),
            feeling=feeling if feeling else None))
    items = []
    for iid in perc.items:
        item = store.try_get(iid, c.Item)
        ipos = store.try_get(iid, c.Position)
        if item is not None and ipos is not None:
            items.append(Seen(id=iid, kind=item.kind, x=ipos.x, y=ipos.y,
                              distance=_distance(pos, ipos), qty=item.qty))
    objects = []
    for oid in perc.objects:
        obj = store.try_get(oid, c.StaticObject)
        opos = store.try_get(oid, c.Position)
        if obj is not None and opos is not None:
            objects.append(Seen(id=oid, kind=obj.kind, x=opos.x, y=opos.y,
                                distance=_distance(pos, opos), stock=obj.stock))
    heard = tuple(
        Heard(tick=int(said.get("tick", tick)), speaker=int(said.get("from", 0)),
              speaker_name=str(said.get("name", "")), text=str(said.get("text", "")),
              to_me=said.get("to") == eid, team=bool(said.get("team")))
        for said in perc.heard)
    offers = []
    for offer in world.market.received(eid):
        oid = offer["id"]
        offers.append(Offer(id=oid, sender=offer["from"], sender_name=world.name_of(offer["from"]),
                            gives=dict(offer["give"]), wants=dict(offer["want"]),
                            expires_in=offer["expires"] - tick))
    return Observation(
        tick=tick, me=me, agents=tuple(agents), items=tuple(items), objects=tuple(objects),
        heard=heard, offers=tuple(offers), prices=dict(world.market.prices),
        memory=tuple(m["text"] for m in memory.recent),
        custom={**scene_view(world, eid, pos), **(custom or {})})
