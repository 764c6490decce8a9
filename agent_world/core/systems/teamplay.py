"""Team play: capture points taken and held, and the ``team_say`` action (``core.teams``
describes the rules and keeps the state)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.actions import Action
from agent_world.core.systems.acting import fail, finish
from agent_world.core.teams import team_of

if TYPE_CHECKING:
    from agent_world.core.world import AgentRow, World

__all__ = ["capture_system", "team_say"]

def capture_system(world: World) -> None:
    """Advance every capture point: who is there, who takes it, who scores."""
    if not world.ground.capture_points:
        return
    book, rules, store = world.teams, world.rules, world.store
    for point in sorted(world.ground.capture_points):
        pos = store.get(point, c.Position)
        present: dict[str, list[int]] = {}
        for _d2, eid in world.agents_grid.near(pos.x, pos.y, rules.capture_radius):
            member = store.try_get(eid, c.Team)
            if member is not None:
                present.setdefault(member.name, []).append(eid)
        state = book.points.setdefault(point, {"owner": "", "claimant": "", "progress": 0})
        claiming = next(iter(present)) if len(present) == 1 else ""
        if claiming and claiming != state["owner"]:
            if state["claimant"] != claiming:
                state["claimant"], state["progress"] = claiming, 0
            state["progress"] += 1
            if state["progress"] >= rules.capture_ticks:
                _taken(world, point, state, claiming, sorted(present[claiming]))
        elif len(present) <= 1 and state["progress"]:
            # Left empty, or held by its owner alone: a claim runs down (contested: it waits).
            state["progress"] -= 1
            if not state["progress"]:
                state["claimant"] = ""
        if state["owner"]:
            book.held[state["owner"]] = book.held.get(state["owner"], 0) + 1


def _taken(world: World, point: int, state: dict[str, Any], team: str,
           members: list[int]) -> None:
    before = state["owner"]
    state["owner"], state["claimant"], state["progress"] = team, "", 0
    pos = world.store.get(point, c.Position)
    world.count("captures")
    for eid in members:
        world.remember(eid, f"we ({team}) took the point at ({pos.x}, {pos.y})")
    world.emit(ev.CAPTURE, point=point, team=team, previous=before, agents=members,
               x=pos.x, y=pos.y)


def team_say(world: World, eid: int, row: AgentRow, action: Action) -> None:
    """The ``team_say`` action: one message to every living teammate, wherever they are."""
    intent = row.intent
    team = team_of(world, eid)
    text: str = action.args["text"]
    if not team:
        fail(world, eid, intent, "not in a team: team_say needs one (spawn with team=NAME)")
        return
    limit = world.rules.team_message_chars
    if len(text) > limit:
        fail(world, eid, intent, f"a team message holds at most {limit} characters, "
             f"not {len(text)}")
        return
    store = world.store
    heard_by = [m for m in world.population.teams.get(team, ()) if m != eid]
    heard_by.sort()
    name = world.name_of(eid)
    entry = {"tick": world.tick, "from": eid, "name": name, "text": text, "team": True}
    for listener in heard_by:
        heard = store.get(listener, c.Perception).heard
        heard.append(entry)
        if len(heard) > c.HEARD_SIZE:
            del heard[0]
    channel = world.teams.channel.setdefault(team, [])
    channel.append({"tick": world.tick, "from": eid, "name": name, "text": text,
                    "heard_by": heard_by})
    if len(channel) > world.rules.team_channel_size:
        del channel[:len(channel) - world.rules.team_channel_size]
    row.social.last_spoke = world.tick
    world.count("team_messages")
    world.emit(ev.TEAM_SAY, agent=eid, name=name, team=team, text=text,
               heard_by=len(heard_by))
    finish(intent)
