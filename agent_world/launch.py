"""The program's entry point (``python main.py``, the ``agent-world`` script): it says in one
line where the program cannot run, before importing anything that needs what is missing.

Agent World runs on Linux, where it is built and tested. It needs ``fcntl`` (the save
folder's lock) and ``resource`` (the sandbox workers' limits), which Windows does not have;
macOS has both but is not tested.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

__all__ = ["main", "unsupported"]

NEEDED = {"fcntl": "the lock that keeps a world to one process",
          "resource": "the limits of the sandbox's worker processes"}


def unsupported() -> str | None:
    """Why this system cannot run the program (None: it can)."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    needs = "; ".join(f"{name}: {NEEDED[name]}" for name in missing)
    return (f"Agent World runs on Linux (and Unix systems like it); this system ({sys.platform}) "
            f"lacks the module{'s' if len(missing) > 1 else ''} it needs ({needs}). On Windows, "
            "run it inside WSL")


def main(argv: Sequence[str] | None = None) -> int:
    reason = unsupported()
    if reason is not None:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    from agent_world.cli import main as run  # noqa: PLC0415 - only where it can run

    return run(argv)
