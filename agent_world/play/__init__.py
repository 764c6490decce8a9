"""Playing an agent and talking to agents, from the console, the web API or the viewer.

The world keeps who plays which agent (``core/players.py``: world state, changed only by
``play``, ``release``, ``act`` and ``speak`` inputs, so replay is exact). This package keeps
what is not world state: which connection holds each seat and when its player last gave an
order, so that a closed browser or an idle player gives the agent back to its brain.

    desk.py    PlayDesk: the session's seats, the idle timeout, disconnects (a TickObserver)

The commands (``/play``, ``/release``, ``/act``, ``/talk``) are in the command surface
(``agent_world/commands/play.py``); the web API's routes for them in ``web/api.py``.
"""

from agent_world.play.desk import Hold, PlayDesk

__all__ = ["Hold", "PlayDesk"]
