"""The operator console: commands typed at a prompt beside the running world, or read from
stdin line by line when there is no terminal.

The console is an outer layer. It reads the world between ticks and changes it only through
the world's inbox, so every change it makes is an input: logged and replayed.

    commands.py    the command table, the dispatcher (Console) and /help
    parsing.py     command words -> typed argument records (the edge)
    control.py     /pause /resume /step /speed /save /echo /quit
    changes.py     /spawn /kill /give (submitted as inputs)
    abilities.py   /ability (asks the angel) and /abilities (list, disable, enable)
    views.py       /list /debug
    stats.py       /stats and its open list of sections
    recent.py      the ring buffer of recent events (a TickObserver)
    lookup.py      finding the entity an id or a name refers to
    completion.py  Tab completion from the live world
    status.py      the status line
    tty.py         the prompt_toolkit prompt
    pipe.py        the headless reader
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_world.console.commands import COMMANDS, Command, Console
from agent_world.console.parsing import CommandError
from agent_world.console.pipe import StdinKind, run_pipe, stdin_kind
from agent_world.console.status import status_text
from agent_world.console.tty import run_tty

if TYPE_CHECKING:
    from agent_world.app import Session

__all__ = [
    "COMMANDS",
    "HISTORY_FILE",
    "Command",
    "CommandError",
    "Console",
    "StdinKind",
    "run_console",
    "status_text",
    "stdin_kind",
]

HISTORY_FILE = "console_history"


async def run_console(session: Session, *, interactive: bool, exit_on_eof: bool = False,
                      json_replies: bool = False) -> None:
    """Serve the operator until /quit (which stops the world), the end of piped input, or
    cancellation. ``interactive``: a prompt on the terminal; otherwise commands from stdin,
    replies one JSON object per line with ``json_replies``."""
    console = Console(session)
    try:
        if interactive:
            console.notify = print
            console.interactive = True
            await run_tty(console, history_path=Path(session.config.paths.logs) / HISTORY_FILE)
        else:
            await run_pipe(console, exit_on_eof=exit_on_eof, json=json_replies)
    finally:
        console.close()
