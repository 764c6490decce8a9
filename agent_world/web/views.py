"""The world as JSON: the bodies of the read-only API endpoints.

Plain functions of the session (main thread, between ticks); the HTTP layer only parses
parameters and wraps these in responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_world import __version__
from agent_world.commands import stats as console_stats
from agent_world.commands.recent import involves
from agent_world.core import components as c
from agent_world.core.components import NO_ONE
from agent_world.core.terrain import TILE_NAMES
from agent_world.web.feed import FIELDS, BBox

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console
    from agent_world.web.server import WebServer

__all__ = ["SORT_KEYS", "agent_detail", "agent_rows", "entities", "state", "stats",
           "terrain"]

SORT_KEYS = ("id", "name", "gold", "kills", "age", "health", "wealth")
DETAIL_EVENTS = 20


def state(server: WebServer) -> dict[str, Any]:
    session = server.session
    loop, world = session.loop, session.world
    figures = loop.stats()
    llm = session.llm
    return {
        "version": __version__,
        "world": session.config.world.name,
        "seed": world.seed,
        "tick": world.tick,
        "running": not loop.paused and not loop.stopped,
        "paused": loop.paused,
        "held_by": list(loop.holders),
        "speed_hz": loop.tick_rate,
        "agents_alive": len(world.agents()),
        "map": {"width": world.terrain.width, "height": world.terrain.height},
        "tick_ms": {"p50": round(figures.p50_ms, 3), "p99": round(figures.p99_ms, 3)},
        "overruns": figures.overruns,
        "skipped": {"ticks": figures.skipped, "lost_s": round(figures.lost_ms / 1000, 3)},
        "llm": llm.status_line() if llm is not None else "not configured",
        "read_only": server.read_only,
        "replay": server.replay_info(),
    }


def terrain(server: WebServer) -> dict[str, Any]:
    packed = server.session.world.terrain.get_state()
    return {"width": packed["width"], "height": packed["height"],
            "encoding": "zlib+base64", "tiles": packed["tiles"],
            "legend": {str(k): v for k, v in TILE_NAMES.items()}}


def entities(server: WebServer, kinds: tuple[str, ...], bbox: BBox | None,
             limit: int) -> dict[str, Any]:
    feed = server.feed
    out: dict[str, Any] = {"tick": server.session.world.tick, "truncated": False}
    out["fields"] = {k: FIELDS[k] for k in kinds}
    for kind in kinds:
        records = feed.records(kind, bbox)
        if len(records) > limit:
            records = records[:limit]
            out["truncated"] = True
        out[kind] = records
    return out


def _wealth(prices: dict[str, float], inv: c.Inventory) -> float:
    return inv.gold + sum(prices.get(k, 0.0) * q for k, q in inv.items.items())


def agent_rows(server: WebServer, *, sort: str, limit: int,
               personality: str | None) -> dict[str, Any]:
    """The scoreboard: agents ranked by ``sort`` (largest first, ``id`` and ``name``
    ascending)."""
    world = server.session.world
    tick = world.tick
    rows: list[dict[str, Any]] = []
    for eid, row in world.agents():
        agent, pos, needs, inv = row.agent, row.pos, row.needs, row.inv
        if personality is not None and agent.personality != personality:
            continue
        rows.append({"id": eid, "name": agent.name, "personality": agent.personality,
                     "brain": agent.brain, "x": pos.x, "y": pos.y,
                     "health": round(needs.health, 2), "gold": inv.gold,
                     "wealth": round(_wealth(world.market.prices, inv), 2), "kills": agent.kills,
                     "age": tick - agent.born,
                     "carried": sum(inv.items.values())})
    if sort in ("id", "name"):
        rows.sort(key=lambda r: r[sort])
    else:
        rows.sort(key=lambda r: (-r[sort], r["id"]))
    return {"tick": tick, "count": len(rows), "sort": sort, "agents": rows[:limit]}


def agent_detail(server: WebServer, eid: int) -> dict[str, Any] | None:
    """What /debug shows of an agent, as data; None if ``eid`` is no living agent."""
    session = server.session
    world = session.world
    row = world.agent_row(eid)
    if row is None:
        return None
    agent, pos, needs, inv, intent, combat, perception, social, memory = row[:9]
    tick = world.tick
    thinking = eid in server.feed.thinking()
    detail: dict[str, Any] = {
        "id": eid, "name": agent.name, "personality": agent.personality,
        "brain": agent.brain, "x": pos.x, "y": pos.y,
        "tile": world.describe_tile(pos.x, pos.y), "born": agent.born,
        "age": tick - agent.born, "kills": agent.kills, "tick": tick,
        "needs": {"health": round(needs.health, 2), "max_health": needs.max_health,
                  "hunger": round(needs.hunger, 2), "energy": round(needs.energy, 2)},
        "inventory": {"gold": inv.gold, "items": dict(sorted(inv.items.items()))},
        "action": intent.action, "action_since": intent.since,
        "last_result": intent.last_result, "plan": intent.plan,
        "plan_source": intent.plan_source, "next_think": intent.next_think,
        "walking": {"steps": len(intent.path),
                    "to": ([intent.path[0] % world.terrain.width,
                            intent.path[0] // world.terrain.width] if intent.path else None)},
        "thinking": thinking,
        "combat": {"next_attack": combat.next_attack,
                   "defending_until": combat.defending_until,
                   "last_attacker": (None if combat.last_attacker == NO_ONE
                                     else combat.last_attacker),
                   "last_attacked": combat.last_attacked},
        "reputation": round(social.reputation, 3),
        "relationships": [{"id": other, "name": world.name_of(other)
                           if other in world.store else None,
                           "value": round(v, 3)}
                          for other, v in sorted(social.relationships.items(),
                                                 key=lambda kv: (-kv[1], kv[0]))],
        "sees": {"agents": perception.agents[:20], "items": perception.items[:20],
                 "objects": perception.objects[:20]},
        "heard": perception.heard,
        "memory": memory.recent[-20:],
    }
    # Its brain's state as /debug shows it: the LLM's, a user's brain's or a remote client's.
    detail["llm"] = [line for part in session.thinking_parts()
                     for line in part.describe_entity(eid)]
    events = [e for e in reversed(server.feed.ring) if involves(e, eid)][:DETAIL_EVENTS]
    detail["recent_events"] = events[::-1]
    return detail


def stats(console: Console) -> dict[str, Any]:
    """The figures of /stats, section by section, as data."""
    return {title: dict(figures) for title, figures in console_stats.sections(console)}
