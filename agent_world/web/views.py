"""The world as JSON: the bodies of the read-only API endpoints.

Plain functions of the session (main thread, between ticks); the HTTP layer only parses
parameters and wraps these in responses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_world import __version__
from agent_world.commands import stats as console_stats
from agent_world.commands.recent import involves
from agent_world.core import components as c
from agent_world.core.components import NO_ONE
from agent_world.core.teams import team_of
from agent_world.core.terrain import TILE_NAMES
from agent_world.web.feed import FIELDS, BBox, with_lines

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console
    from agent_world.core.world import World
    from agent_world.web.server import WebServer

__all__ = ["SORT_KEYS", "agent_detail", "agent_rows", "entities", "readable", "state",
           "stats", "terrain"]

SORT_KEYS = ("id", "name", "gold", "kills", "age", "health", "wealth")
DETAIL_EVENTS = 20


def state(server: WebServer) -> dict[str, Any]:
    session = server.session
    loop, world = session.loop, session.world
    figures = loop.stats()
    llm = session.llm
    return {
        "version": __version__,
        "world": server.world_name,
        "seed": world.seed,
        "tick": world.tick,
        "running": not loop.paused and not loop.stopped,
        "paused": loop.paused,
        "held_by": list(loop.holders),
        "speed_hz": loop.tick_rate,
        "agents_alive": len(world.agents()),
        "map": {"width": world.terrain.width, "height": world.terrain.height},
        "hearing_radius": world.rules.hearing_radius,
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
                     "carried": sum(inv.items.values()), "team": team_of(world, eid)})
    if sort in ("id", "name"):
        rows.sort(key=lambda r: r[sort])
    else:
        rows.sort(key=lambda r: (-r[sort], r["id"]))
    return {"tick": tick, "count": len(rows), "sort": sort, "agents": rows[:limit]}


# What memory lines are made of: labels ('Una#125') and goods written as Python dicts
# ("{'herb': 1, 'gold': 2}"), as the world remembers them (the text is saved state: it is
# rewritten for reading here, never in the world).
_LABEL = re.compile(r"([A-Za-z][\w'-]*)#(\d+)")
_GOODS = re.compile(r"\{('[^'{}]*': -?\d+(?:, '[^'{}]*': -?\d+)*)?\}")
_GOOD = re.compile(r"'([^'{}]*)': (-?\d+)")


def _goods_words(match: re.Match[str]) -> str:
    parts = [f"{q} {k}" for k, q in _GOOD.findall(match.group(0))]
    if not parts:
        return "nothing"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def readable(text: str, dead: Callable[[int], bool]) -> str:
    """A memory line for people: goods as words, agents by name, the dead marked.
    ``"Noor#12 offers {'herb': 1} for {'gold': 2} (offer 4)"`` reads ``"Noor (dead) offers
    1 herb for 2 gold (offer 4)"`` once agent 12 is gone."""
    text = _GOODS.sub(_goods_words, text)
    return _LABEL.sub(lambda m: m.group(1) + (" (dead)" if dead(int(m.group(2))) else ""),
                      text)


def _dead(world: World) -> Callable[[int], bool]:
    """Whether an id is of an agent no longer alive (an item or object is not dead)."""
    def dead(eid: int) -> bool:
        if eid not in world.store:
            return True
        return world.store.try_get(eid, c.Agent) is not None and not world.alive(eid)
    return dead


def _names_of_the_gone(server: WebServer, ids: list[int]) -> dict[int, str]:
    """Names of agents no longer in the world: the metrics' rows keep them, and the death
    lines in memory name the rest."""
    rows = server.session.world.metrics.rows
    found = {eid: str(rows[eid]["name"]) for eid in ids if eid in rows}
    missing = set(ids) - found.keys()
    if missing:
        for line in server.feed.ring:
            who = line.get("agent")
            if who in missing and isinstance(line.get("name"), str):
                found[who] = line["name"]
    return found


def _relationships(server: WebServer, social: c.Social) -> list[dict[str, Any]]:
    world = server.session.world
    ranked = sorted(social.relationships.items(), key=lambda kv: (-kv[1], kv[0]))
    gone = _names_of_the_gone(server, [o for o, _v in ranked if not world.alive(o)])
    out = []
    for other, value in ranked:
        alive = world.alive(other)
        name = world.name_of(other) if alive else gone.get(other)
        out.append({"id": other, "name": name, "alive": alive, "value": round(value, 3)})
    return out


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
        "brain": agent.brain, "team": team_of(world, eid), "x": pos.x, "y": pos.y,
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
        "played_by": _played_by(world, eid),
        "combat": {"next_attack": combat.next_attack,
                   "defending_until": combat.defending_until,
                   "last_attacker": (None if combat.last_attacker == NO_ONE
                                     else combat.last_attacker),
                   "last_attacked": combat.last_attacked},
        "reputation": round(social.reputation, 3),
        "relationships": _relationships(server, social),
        "sees": {"agents": perception.agents[:20], "items": perception.items[:20],
                 "objects": perception.objects[:20]},
        "heard": perception.heard,
        "memory": [{**m, "line": readable(str(m.get("text", "")), _dead(world))}
                   for m in memory.recent[-20:]],
    }
    # Its brain's state as /debug shows it: the LLM's, a user's brain's or a remote client's.
    detail["llm"] = [line for part in session.thinking_parts()
                     for line in part.describe_entity(eid)]
    events = [e for e in reversed(server.feed.ring) if involves(e, eid)][:DETAIL_EVENTS]
    detail["recent_events"] = with_lines(events[::-1])
    return detail


def _played_by(world: World, eid: int) -> dict[str, Any] | None:
    """Who plays the agent and since when (None: its own brain decides)."""
    seat = world.players.seats.get(eid)
    return None if seat is None else {"player": seat.player, "since": seat.since}


def stats(console: Console) -> dict[str, Any]:
    """The figures of /stats, section by section, as data."""
    return {title: dict(figures) for title, figures in console_stats.sections(console)}
