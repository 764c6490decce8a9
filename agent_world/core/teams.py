"""Teams: capture points held over time and a team channel, for the team_capture scenario.

An agent joins a team when it is spawned (``team=NAME``; a ``Team`` component). Capture
points are objects (``capture_point``). A team takes a point by being the only team within
``game.capture_radius`` of it for ``game.capture_ticks`` ticks in a row (another team
arriving stops the count; leaving it empty lets it run down), and from then on scores one
point-tick every tick it owns it (``held``). ``team_say`` sends a short message to every
living teammate wherever they are: it arrives with their heard speech, and the channel keeps
who said what, when, and who heard it (the last ``game.team_channel_size`` per team).

All of it is world state (``World.teams``): saved, hashed, replayed. A world without teams
or points keeps none and hashes as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["TEAM_NAME", "TeamBook", "scene_view", "team_of"]

TEAM_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}")


class TeamBook:
    """Capture points' owners and progress, point-ticks held per team, and each team's
    channel."""

    def __init__(self) -> None:
        # point id -> {"owner": team or "", "claimant": team or "", "progress": ticks}
        self.points: dict[int, dict[str, Any]] = {}
        self.held: dict[str, int] = {}
        self.channel: dict[str, list[dict[str, Any]]] = {}

    def owner(self, point: int) -> str:
        state = self.points.get(point)
        return str(state["owner"]) if state else ""

    def is_empty(self) -> bool:
        return not (self.points or self.held or self.channel)

    def get_state(self) -> dict[str, Any]:
        return {"points": {str(p): s for p, s in sorted(self.points.items())},
                "held": dict(sorted(self.held.items())),
                "channel": dict(sorted(self.channel.items()))}

    def set_state(self, state: Mapping[str, Any] | None) -> None:
        state = state or {}
        self.points = {int(p): dict(s) for p, s in state.get("points", {}).items()}
        self.held = {str(t): int(n) for t, n in state.get("held", {}).items()}
        self.channel = {str(t): [dict(m) for m in msgs]
                        for t, msgs in state.get("channel", {}).items()}


def team_of(world: World, eid: int) -> str:
    """The agent's team, or "" for none."""
    team = world.store.try_get(eid, c.Team)
    return team.name if team is not None else ""


def scene_view(world: World, eid: int, pos: c.Position) -> dict[str, Any]:
    """What an agent knows of the scenario mechanics beyond what it sees: its team and
    teammates, the capture points and the recipes (hazards are objects in sight). Empty in
    a world without them."""
    view: dict[str, Any] = {}
    team = team_of(world, eid)
    if team:
        view["team"] = team
        view["teammates"] = sorted(m for m in world.population.teams.get(team, ()) if m != eid)
    store = world.store
    if world.ground.capture_points:
        points = []
        for point in sorted(world.ground.capture_points):
            ppos = store.get(point, c.Position)
            state = world.teams.points.get(point, {})
            points.append({"id": point, "x": ppos.x, "y": ppos.y,
                           "distance": max(abs(ppos.x - pos.x), abs(ppos.y - pos.y)),
                           "owner": state.get("owner", ""),
                           "claimant": state.get("claimant", ""),
                           "progress": state.get("progress", 0)})
        points.sort(key=lambda p: (p["distance"], p["id"]))
        view["capture_points"] = points
        view["capture_ticks"] = world.rules.capture_ticks
    if world.recipes:
        view["recipes"] = {out: dict(inputs) for out, inputs in world.recipes.items()}
    return view
