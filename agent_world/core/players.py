"""People who play agents: who plays which agent, and the inputs that take, give back and
steer one, and that let a person speak in the world.

A played agent acts only on its player's orders (``act`` inputs): its own brain is paused,
built in (the decide system leaves it alone, even when it is attacked) or not (a ``plan``
from any other source is refused, and the decision pipelines ask nothing for it). Every
order is an ``Action`` begun through the same checks as any brain's, so a player can do
exactly what a brain can. One player per agent: a ``play`` input for an agent someone else
plays is refused with that player's name.

World state (``World.players``): saved, hashed, replayed, under the state key ``players``,
present only while someone plays, so worlds nobody plays hash as before.

Operator speech (``speak``) comes from a person, not an agent: it is heard by the agents
within hearing of a tile, as speech from ``name`` (``from`` 0, which is no entity), and
an agent it is addressed to counts it as spoken to.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.actions import MAX_TEXT, Action, ActionError, one_line
from agent_world.core.components import NO_ONE
from agent_world.core.systems.acting import finish

if TYPE_CHECKING:
    from agent_world.core.world import World

__all__ = ["PLAYER", "PLAYER_NAME", "PlayRefused", "Players", "Seat", "act_input",
           "check_player", "check_speech", "play_input", "release_input", "speak_input"]

PLAYER = "player"
"""The ``plan_source`` of a played agent's orders."""
PLAYER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_'-]{0,23}")
"""A player's name: 1-24 letters, digits, _ ' or -, starting with a letter."""


class PlayRefused(ValueError):
    """A play input that cannot be applied now (the input layer rejects it with this)."""


@dataclass(slots=True)
class Seat:
    player: str
    since: int


class Players:
    """Lives at ``world.players``: agent id -> the seat of the person who plays it."""

    def __init__(self) -> None:
        self.seats: dict[int, Seat] = {}

    def is_empty(self) -> bool:
        return not self.seats

    def player_of(self, agent: int) -> str | None:
        seat = self.seats.get(agent)
        return seat.player if seat is not None else None

    def played_by(self, player: str) -> list[int]:
        """The agents ``player`` plays, ascending."""
        return sorted(a for a, s in self.seats.items() if s.player == player)

    def get_state(self) -> dict[str, Any]:
        return {"seats": [[agent, s.player, s.since] for agent, s in sorted(self.seats.items())]}

    def set_state(self, state: Mapping[str, Any] | None) -> None:
        self.seats = {int(agent): Seat(str(player), int(since))
                      for agent, player, since in (state or {}).get("seats", [])}


def check_player(name: object) -> str:
    """``name`` if it is a usable player's name, else PlayRefused saying what one is."""
    if not isinstance(name, str) or not PLAYER_NAME.fullmatch(name):
        raise PlayRefused(f"player {name!r:.40} is not a usable name: 1-24 letters, digits, "
                          "_ ' or -, starting with a letter")
    return name


def check_speech(text: object) -> str:
    """Words a person says, as a say action takes them; PlayRefused if they cannot be."""
    if not isinstance(text, str):
        raise PlayRefused(f"text must be text, got {text!r:.40}")
    said = one_line(text)
    if not said or len(said) > MAX_TEXT:
        raise PlayRefused(f"text must be 1 to {MAX_TEXT} characters, got {len(said)}")
    return said


def _living(world: World, data: Mapping[str, Any]) -> int:
    eid = data.get("agent")
    if not isinstance(eid, int) or isinstance(eid, bool) or not world.is_agent(eid):
        raise PlayRefused(f"agent {eid!r} is not a living agent")
    return eid


def _busy(world: World, eid: int, seat: Seat) -> str:
    return (f"{world.label(eid)} is played by {seat.player} (since tick {seat.since}); "
            "one player per agent: wait until they release it")


def play_input(world: World, data: Mapping[str, Any]) -> None:
    """``play``: ``player`` takes ``agent``; what it was doing stops and its brain pauses."""
    eid = _living(world, data)
    player = check_player(data.get("player"))
    seat = world.players.seats.get(eid)
    if seat is not None:
        if seat.player == player:
            return  # played by this player already: nothing changes
        raise PlayRefused(_busy(world, eid, seat))
    world.players.seats[eid] = Seat(player, world.tick)
    intent = world.store.get(eid, c.Intent)
    if intent.action is not None:
        finish(intent, f"taken over by {player}")
    intent.plan.clear()
    intent.plan_source = PLAYER
    world.emit(ev.PLAYED, agent=eid, name=world.name_of(eid), player=player)


def release_input(world: World, data: Mapping[str, Any]) -> None:
    """``release``: ``player`` gives ``agent`` back to its brain (``force``: whoever plays
    it); ``reason`` says why (released, disconnected, idle ...)."""
    eid = _living(world, data)
    player = check_player(data.get("player"))
    seat = world.players.seats.get(eid)
    if seat is None:
        raise PlayRefused(f"{world.label(eid)} is not played by anyone")
    if seat.player != player and data.get("force") is not True:
        raise PlayRefused(_busy(world, eid, seat))
    del world.players.seats[eid]
    intent = world.store.get(eid, c.Intent)
    if intent.action is not None:
        finish(intent, "given back to its brain")
    intent.plan.clear()
    intent.plan_source = ""
    intent.next_think = world.tick  # its brain decides at once
    reason = data.get("reason")
    world.emit(ev.RELEASED, agent=eid, name=world.name_of(eid), player=seat.player,
               reason=reason if isinstance(reason, str) else "released")


def act_input(world: World, data: Mapping[str, Any]) -> None:
    """``act``: the agent's player orders ``action``; it replaces what the agent does and is
    begun at this tick's decide, through the same checks as any brain's choice."""
    eid = _living(world, data)
    player = check_player(data.get("player"))
    seat = world.players.seats.get(eid)
    if seat is None:
        raise PlayRefused(f"{world.label(eid)} is not played by anyone; play it first")
    if seat.player != player:
        raise PlayRefused(_busy(world, eid, seat))
    raw = data.get("action")
    try:
        action = Action.from_dict(raw if isinstance(raw, Mapping) else {})
    except ActionError as exc:
        raise PlayRefused(f"invalid action: {exc}") from None
    intent = world.store.get(eid, c.Intent)
    if intent.action is not None:
        finish(intent, "replaced by its player's order")
    intent.plan = [action]
    intent.plan_source = PLAYER


def speak_input(world: World, data: Mapping[str, Any]) -> None:
    """``speak``: a person (``name``) says ``text`` at tile (``x``, ``y``), to agent ``to``
    when given: heard like speech by the agents within hearing of the tile."""
    name = check_player(data.get("name"))
    text = check_speech(data.get("text"))
    x, y = data.get("x"), data.get("y")
    if not (isinstance(x, int) and isinstance(y, int) and not isinstance(x, bool)
            and not isinstance(y, bool) and world.terrain.in_bounds(x, y)):
        raise PlayRefused(f"({x!r}, {y!r}) is not a tile of the map")
    to = data.get("to")
    if to is not None and (not isinstance(to, int) or isinstance(to, bool)
                           or not world.is_agent(to)):
        raise PlayRefused(f"to {to!r} is not a living agent")
    entry: dict[str, Any] = {"tick": world.tick, "from": NO_ONE, "name": name, "text": text,
                             "person": True}
    if to is not None:
        entry["to"] = to
    store = world.store
    heard_by = [e for _d2, e in world.agents_grid.near(x, y, world.rules.hearing_radius)]
    for listener in heard_by:
        heard = store.get(listener, c.Perception).heard
        heard.append(dict(entry))
        if len(heard) > c.HEARD_SIZE:
            del heard[0]
    event: dict[str, Any] = {"speaker": name, "text": text, "x": x, "y": y,
                             "heard_by": len(heard_by)}
    if to is not None:
        event["to"] = to
        event["to_name"] = world.name_of(to)
    world.emit(ev.SPOKEN, **event)
