"""The command surface: one table of operator commands (``/pause``, ``/spawn``, ``/stats``,
...), parsed and run the same way whoever sends them: the console (``agent_world.console``,
the terminal's prompt or piped stdin), the web API (``POST /api/commands``) and remote
clients. It reads the world between ticks and changes it only through the world's inbox, so
every change it makes is an input: logged and replayed. It imports no terminal UI.

    dispatch.py    the command table, the dispatcher (Console) and /help
    parsing.py     command words -> typed argument records (the edge)
    control.py     /pause /resume /step /speed /save /echo /quit
    changes.py     /spawn /kill /give (submitted as inputs)
    talk.py        /ask /survey /surveys (interviews, answered off the tick)
    abilities.py   /ability (asks the angel) and /abilities (list, disable, enable)
    views.py       /list /debug
    scores.py      /metrics /top
    stats.py       /stats and its open list of sections
    recent.py      the ring buffer of recent events (a TickObserver)
    lookup.py      finding the entity an id or a name refers to
"""

from agent_world.commands.dispatch import COMMANDS, Command, Console
from agent_world.commands.parsing import CommandError

__all__ = ["COMMANDS", "Command", "CommandError", "Console"]
