"""The operator console: commands typed at a prompt beside the running world, or read from
stdin line by line when there is no terminal. The commands themselves are the command
surface (``agent_world.commands``), shared with the web API and remote clients; this
package is the terminal's side of it.

    tty.py         the prompt_toolkit prompt
    completion.py  Tab completion from the live world
    status.py      the status line
    pipe.py        the headless reader
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_world.commands import COMMANDS, Command, CommandError, Console
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
