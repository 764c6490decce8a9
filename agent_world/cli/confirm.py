"""How a command that deletes (``worlds delete``, ``runs delete``) is confirmed."""

from __future__ import annotations

import sys
from collections.abc import Callable

from agent_world.persistence import SaveError

__all__ = ["confirmation"]


def _agreed(_question: str) -> bool:
    return True  # --yes


def _ask_terminal(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def confirmation(what: str, *, yes: bool,
                 ask: Callable[[str], bool] | None) -> Callable[[str], bool]:
    """What answers "delete ``what``?": yes with --yes, else ``ask`` (tests), else the
    terminal; SaveError without a terminal, saying to add --yes."""
    if yes:
        return _agreed
    if ask is not None:
        return ask
    if sys.stdin.isatty():
        return _ask_terminal
    raise SaveError(f"deleting {what} needs a confirmation: run it on a terminal, or add "
                    "--yes")
