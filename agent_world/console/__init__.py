"""The operator console: commands typed at a prompt beside the running world, or read from
stdin line by line when there is no terminal.

The console is an outer layer. It reads the world between ticks and changes it only through
the world's inbox, so every change it makes is an input: logged and replayed.

    commands.py    the command table, the dispatcher (Console) and /help
    parsing.py     command words -> typed argument records (the edge)
    control.py     /pause /resume /step /speed /save /quit
    changes.py     /spawn /kill /give (submitted as inputs)
    views.py       /list /debug
    stats.py       /stats and its open list of sections
    recent.py      the ring buffer of recent events (a TickObserver)
    lookup.py      finding the entity an id or a name refers to
    status.py      the status line
"""

from __future__ import annotations

from agent_world.console.commands import COMMANDS, Command, Console
from agent_world.console.parsing import CommandError
from agent_world.console.status import status_text

__all__ = ["COMMANDS", "Command", "CommandError", "Console", "status_text"]
