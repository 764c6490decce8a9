"""The interactive console: a prompt_toolkit prompt beside the running world.

``prompt_async`` runs on the same event loop as the tick loop, so the world keeps ticking
while the operator types, and ``patch_stdout`` makes every line printed meanwhile (replies,
the world log's echo, notices) appear above the prompt instead of through it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout

from agent_world.console.completion import WorldCompleter
from agent_world.console.status import status_text

if TYPE_CHECKING:
    from agent_world.commands.dispatch import Console

__all__ = ["PROMPT", "REFRESH_S", "open_history", "run_tty"]

PROMPT = "world> "
REFRESH_S = 0.5  # the status line is redrawn this often


def open_history(path: Path) -> History:
    """History kept in ``path`` across runs; in memory (and said so) if it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        print(f"console: cannot keep history in {path} ({exc}); this run's history is "
              "kept in memory only", file=sys.stderr)
        return InMemoryHistory()
    return FileHistory(str(path))


def _ctrl_c_bindings() -> KeyBindings:
    """Ctrl-C as shells have it: on a half-typed line it clears the line; on an empty line
    it stops the world (the prompt raises KeyboardInterrupt)."""
    bindings = KeyBindings()

    @bindings.add("c-c")
    def _(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return bindings


async def run_tty(console: Console, *, history_path: Path) -> None:
    """Prompt until /quit, Ctrl-C on an empty line or Ctrl-D (each stops the world), or
    until cancelled (the world stopped some other way)."""
    session = console.session
    prompt: PromptSession[str] = PromptSession(
        history=open_history(history_path),
        completer=WorldCompleter(session, console.commands),
        complete_while_typing=False,
        bottom_toolbar=lambda: status_text(session),
        refresh_interval=REFRESH_S,
        key_bindings=_ctrl_c_bindings(),
    )
    world_log = session.world_log
    with patch_stdout():
        # The world log resolved its echo stream at start-up; point it at the patched one
        # while the prompt is up, so its lines land above the prompt too.
        echo = world_log.echo
        if echo is not None:
            world_log.echo = sys.stdout
        try:
            while not session.loop.stopped:
                try:
                    # handle_sigint=False: a SIGINT from outside stays with the command line's
                    # handler (prompt_toolkit would remove it when the prompt returns); Ctrl-C
                    # typed at the prompt arrives as a key and raises KeyboardInterrupt here.
                    line = await prompt.prompt_async(PROMPT, handle_sigint=False,
                                                     set_exception_handler=False)
                except (KeyboardInterrupt, EOFError):
                    print(f"stopping at tick {session.world.tick}")
                    session.loop.stop()
                    return
                for reply in await console.execute(line):
                    print(reply)
                if console.quit_requested:
                    return
        finally:
            if echo is not None:
                world_log.echo = echo
