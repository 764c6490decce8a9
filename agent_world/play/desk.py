"""The session's side of playing agents: who holds each seat from where, and since when
they last gave an order. None of it is world state: the world knows only who plays which
agent (``world.players``); the desk decides, by the wall clock and by connections, when to
give an agent back, and says so with a ``release`` input like anyone else.

A seat is held from the moment a ``play`` input is submitted (so the player's next order,
sent before the next tick, is taken), and dropped once the world no longer shows the agent
played by that player (released, refused, dead). A seat the world has but the desk does not
(a world resumed while someone played) is held by nobody and times out like any other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from agent_world.core.world import World
from agent_world.types import TickReport

__all__ = ["SOURCE", "Hold", "PlayDesk"]

SOURCE = "play"
"""The source of the ``release`` inputs the desk submits itself (idle, disconnected)."""


@dataclass(slots=True)
class Hold:
    """One seat: ``player`` plays the agent; ``client`` is the viewer's feed connection
    whose closing gives it back (None: none); ``last`` the desk clock's time of the
    player's last order; ``sent`` the world tick its play input was submitted after."""

    player: str
    client: int | None
    last: float
    sent: int
    releasing: bool = False


class PlayDesk:
    """Lives at ``session.play``; a TickObserver on the session's loop (main thread)."""

    def __init__(self, world: Callable[[], World], *, idle_s: float,
                 clock: Callable[[], float] = time.monotonic,
                 note: Callable[[str], None] = lambda _text: None) -> None:
        self._world = world
        self.idle_s = idle_s
        self.clock = clock
        self.note = note
        self.holds: dict[int, Hold] = {}
        self.released_idle = 0
        self.released_disconnected = 0

    @property
    def world(self) -> World:
        return self._world()

    # -- asked by the commands ----------------------------------------------------------------

    def player_of(self, agent: int) -> str | None:
        """Who plays ``agent`` as far as anyone can tell now: a seat taken but not yet
        applied counts, one being given back does not."""
        hold = self.holds.get(agent)
        if hold is not None:
            return None if hold.releasing else hold.player
        return self.world.players.player_of(agent)

    def since(self, agent: int) -> int | None:
        seat = self.world.players.seats.get(agent)
        return seat.since if seat is not None else None

    def agent_of(self, player: str) -> int | None:
        """The agent ``player`` plays (the lowest id if several), or None."""
        mine = sorted(a for a in {*self.holds, *self.world.players.seats}
                      if self.player_of(a) == player)
        return mine[0] if mine else None

    def took(self, agent: int, player: str, client: int | None) -> None:
        """``player``'s play input for ``agent`` was submitted (or they play it already:
        ``client`` becomes the connection that holds it)."""
        hold = self.holds.get(agent)
        if hold is not None and hold.player == player and not hold.releasing:
            hold.last = self.clock()
            if client is not None:
                hold.client = client
            return
        self.holds[agent] = Hold(player, client, self.clock(), self.world.tick)

    def acted(self, agent: int) -> None:
        """The player gave an order: the idle timeout starts again."""
        hold = self.holds.get(agent)
        if hold is not None:
            hold.last = self.clock()

    def releasing(self, agent: int) -> None:
        """A release input for ``agent`` was submitted."""
        hold = self.holds.get(agent)
        if hold is not None:
            hold.releasing = True

    # -- connections and time -----------------------------------------------------------------

    def disconnected(self, client: int) -> list[int]:
        """The feed connection ``client`` closed: the agents it held go back to their
        brains (the agents, ascending)."""
        gone = sorted(a for a, h in self.holds.items()
                      if h.client == client and not h.releasing)
        for agent in gone:
            self._release(agent, "disconnected")
            self.released_disconnected += 1
        return gone

    def on_tick(self, report: TickReport) -> None:
        world = self.world
        if world.replaying:  # a recording plays what it recorded: nobody's seats here
            return
        seats = world.players.seats
        now = self.clock()
        for agent, hold in list(self.holds.items()):
            seat = seats.get(agent)
            if report.tick > hold.sent and (seat is None or seat.player != hold.player):
                del self.holds[agent]  # released, refused, or dead
        for agent, seat in seats.items():
            if agent not in self.holds:  # played before this session began (a resume)
                self.holds[agent] = Hold(seat.player, None, now, report.tick)
        for agent, hold in list(self.holds.items()):
            if not hold.releasing and now - hold.last > self.idle_s:
                self._release(agent, f"no order for {self.idle_s:g} s (web.play_idle_s)")
                self.released_idle += 1

    def _release(self, agent: int, reason: str) -> None:
        hold = self.holds[agent]
        hold.releasing = True
        world = self.world
        world.inbox.submit("release", {"agent": agent, "player": hold.player,
                                       "reason": reason}, source=SOURCE)
        self.note(f"play: {world.label(agent)} goes back to its brain ({hold.player}: "
                  f"{reason})")

    def stats(self) -> dict[str, int]:
        """For /stats."""
        return {"played": len(self.world.players.seats), "seats held": len(self.holds),
                "released idle": self.released_idle,
                "released on disconnect": self.released_disconnected}
