"""The recorded world as an instrument: what a save folder's log says its brains decided,
rebuilt with the exact observation each decision answered (``decisions``), and put to other
brains (``reask``). Everything here only reads a save folder; the core never imports it.

``python main.py reask saves/NAME --brain BRAIN`` is the command (docs/evaluation.md,
"Re-asking recorded decisions")."""

from agent_world.recorded.decisions import (
    Key,
    LoggedDecision,
    RecordedDecision,
    RecordError,
    Selection,
    SelectionError,
    recorded_decisions,
    replay_decisions,
    select_decisions,
)

__all__ = ["Key", "LoggedDecision", "RecordError", "RecordedDecision", "Selection",
           "SelectionError", "recorded_decisions", "replay_decisions", "select_decisions"]
