"""The liveliness report: who is alive, how wealth spreads, how trade and speech vary and
which abilities are used, per window of ticks, read from a save folder's event log alone.

``build_report`` reads and counts (``reader``, ``windows``, ``tally``, ``summary``);
``checks`` holds the bounds a lively world keeps; ``render`` writes text and JSON,
``plots`` PNG files (the optional ``plots`` extra); ``speed`` measures the reading rate.
The command is ``python main.py report`` (``agent_world/cli/report.py``).
"""

from agent_world.report.build import DEFAULT_WINDOW, MIN_WINDOW, build_report
from agent_world.report.figures import Report, Window, WorldInfo
from agent_world.report.reader import ReportError

__all__ = ["DEFAULT_WINDOW", "MIN_WINDOW", "Report", "ReportError", "Window", "WorldInfo",
           "build_report"]
