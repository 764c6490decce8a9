"""PNG plots of a report, one file per subject, drawn with matplotlib (the optional
``plots`` extra: ``pip install -e '.[plots]'``). The text and JSON reports never need it.

Census figures are drawn at each census tick; window figures at the middle of each window.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.report.checks import RICHEST_SHARE_MAX, SPEECH_DISTINCT_MIN
from agent_world.report.figures import Report
from agent_world.report.reader import ReportError

__all__ = ["PLOTS", "load_pyplot", "write_plots"]

_SIZE = (9.0, 4.5)  # inches
_DPI = 100


def load_pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend; ReportError when it is missing."""
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        return importlib.import_module("matplotlib.pyplot")
    except ImportError:
        raise ReportError("--png needs matplotlib, which is not installed: "
                          "pip install -e '.[plots]'") from None


def _nan(value: float | None) -> float:
    """A gap in a line where there is no value."""
    return float("nan") if value is None else value


def _middles(report: Report) -> list[float]:
    return [(w.start + w.end) / 2 for w in report.windows]


def _population(report: Report, ax: Any) -> None:
    ticks = [c.tick for c in report.census]
    names = sorted({p for c in report.census for p in c.by_personality})
    for name in names:
        ax.plot(ticks, [c.by_personality.get(name, 0) for c in report.census], label=name)
    ax.plot(ticks, [c.agents for c in report.census], "k--", label="all agents")
    ax.set(title="Population by personality (census)", xlabel="tick", ylabel="agents")


def _wealth(report: Report, ax: Any) -> None:
    ticks = [c.tick for c in report.census]
    ax.plot(ticks, [c.gold_gini for c in report.census], label="gold Gini")
    ax.plot(ticks, [c.wealth_gini for c in report.census], label="wealth Gini")
    ax.plot(ticks, [c.richest_gold_share for c in report.census],
            label="richest agent's share of gold")
    ax.axhline(RICHEST_SHARE_MAX, color="grey", linestyle=":", label="share bound")
    ax.set(title="Wealth (census)", xlabel="tick", ylim=(0, 1))


def _trade(report: Report, ax: Any) -> None:
    x = _middles(report)
    ax.plot(x, [w.trade.offers for w in report.windows], "o-", label="offers")
    ax.plot(x, [w.trade.accepted for w in report.windows], "o-", label="accepted")
    ax.plot(x, [w.trade.undone for w in report.windows], "o-", label="undone")
    ax.set(title=f"Trade per window of {report.window:,} ticks", xlabel="tick",
           ylabel="count")


def _speech(report: Report, ax: Any) -> None:
    x = _middles(report)
    ax.plot(x, [_nan(w.speech.distinct_share) for w in report.windows], "o-",
            label="distinct lines / lines")
    ax.axhline(SPEECH_DISTINCT_MIN, color="grey", linestyle=":", label="bound")
    ax.set(title=f"Speech per window of {report.window:,} ticks", xlabel="tick",
           ylim=(0, 1))


def _casts(report: Report, ax: Any) -> None:
    x = _middles(report)
    names = sorted({p for w in report.windows for p in w.abilities.by_personality})
    for name in names:
        ax.plot(x, [w.abilities.by_personality.get(name, 0) for w in report.windows], "o-",
                label=name)
    ax.set(title=f"Ability casts by personality per window of {report.window:,} ticks",
           xlabel="tick", ylabel="casts")


def _prices(report: Report, ax: Any) -> None:
    ticks = [c.tick for c in report.census]
    items = sorted({k for c in report.census for k in c.prices})
    for item in items:
        ax.plot(ticks, [_nan(c.prices.get(item)) for c in report.census], label=item)
    ax.set(title="Prices (census)", xlabel="tick", ylabel="gold", yscale="log")


PLOTS: dict[str, Callable[[Report, Any], None]] = {
    "population.png": _population,
    "wealth.png": _wealth,
    "trade.png": _trade,
    "speech.png": _speech,
    "casts.png": _casts,
    "prices.png": _prices,
}


def write_plots(report: Report, folder: Path, pyplot: Any) -> list[Path]:
    """Draw every plot of ``PLOTS`` into ``folder`` (made if missing); returns the files.
    OSError when the folder cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in PLOTS.items():
        fig, ax = pyplot.subplots(figsize=_SIZE)
        try:
            draw(report, ax)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="best", fontsize="small")
            ax.grid(True, alpha=0.3)
            fig.tight_layout()
            fig.savefig(folder / name, dpi=_DPI)
        finally:
            pyplot.close(fig)
        written.append(folder / name)
    return written
