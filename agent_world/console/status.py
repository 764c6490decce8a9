"""The status line under the prompt: the world's pulse, refreshed twice a second."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_world.app import Session

__all__ = ["status_text"]


def status_text(session: Session) -> str:
    """``tick 1234 | running | 10 Hz | 18 agents | p99 2.31 ms`` (plus, when the session has
    an LLM, its ``status_line()``: agents thinking and requests in flight, or that agents
    are on built-in brains because the breaker is open or the budget spent; and the angel's
    open requests while it writes)."""
    loop = session.loop
    stats = loop.stats()
    state = "PAUSED" if loop.paused else "running"
    if loop.holders:
        state = f"WAITING for the {', '.join(loop.holders)}"
    parts = [
        f"tick {session.world.tick}",
        state,
        f"{loop.tick_rate:g} Hz",
        f"{len(session.world.agents())} agents",
        f"p99 {stats.p99_ms:.2f} ms",
    ]
    llm = getattr(session, "llm", None)
    if llm is not None:
        line = getattr(llm, "status_line", None)
        parts.append(line() if callable(line) else f"LLM {getattr(llm, 'in_flight', '?')} "
                     "in flight")
    angel = getattr(session, "angel", None)
    if angel is not None and angel.pending():
        parts.append(f"angel writing ({angel.pending()})")
    return " | ".join(parts)
