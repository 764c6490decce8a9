"""Making a report from a save folder: read, count, summarise, and say what was left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_world.persistence import SaveFolder
from agent_world.persistence.eventlog import LogReader, final_tick
from agent_world.persistence.snapshots import state_file_tick
from agent_world.report.figures import Report, Window, WorldInfo
from agent_world.report.reader import ReportError, open_save, start_point, world_info
from agent_world.report.summary import Baseline, summarise
from agent_world.report.tally import Tally, merge
from agent_world.report.windows import Collected, collect

__all__ = ["DEFAULT_WINDOW", "MIN_WINDOW", "build_report"]

DEFAULT_WINDOW = 10_000  # ticks per window: 1,000 s of world time at 10 Hz, 10 censuses
MIN_WINDOW = 100  # shorter windows hold too few events to say anything


def _check_range(info: WorldInfo, first: int, last: int | None, path: Path) -> None:
    if last is not None and first > last:
        raise ReportError(f"--from {first} is after --to {last}; give --from <= --to")
    if first < info.first_tick:
        raise ReportError(f"--from {first} is before the log of {path} begins (tick "
                          f"{info.first_tick}, its first snapshot); give --from >= "
                          f"{info.first_tick} or leave it out")


def _damage_note(reader: LogReader, folder_end: int, last: int | None) -> str | None:
    """One line for a damaged gzip file that ended the readable log early."""
    stopped = reader.stopped_at
    if stopped is None:
        return None
    said = next((p for p in reader.problems if p.startswith(stopped.name)),
                f"{stopped.name} is damaged")
    what = said.split(" (", 1)[0]
    lost_to = folder_end if last is None else min(last, folder_end)
    if lost_to > reader.last_tick:
        return f"{what}; ticks {reader.last_tick + 1}..{lost_to} are not in the report"
    return f"{what}; the ticks after it are not in the report"


def _log_notes(reader: LogReader, folder_end: int, last: int | None) -> list[str]:
    """What the reader met: damage (one line), torn or unreadable lines, merged files."""
    notes = []
    damage = _damage_note(reader, folder_end, last)
    if damage is not None:
        notes.append(damage)
    stopped = reader.stopped_at.name if reader.stopped_at is not None else None
    for problem in reader.problems:
        if stopped is not None and (problem.startswith(stopped) or "later event-log" in problem):
            continue  # said in the damage note
        notes.append(problem)
    notes.extend(reader.notes)
    return notes


def _folder_end(reader: LogReader, folder: SaveFolder) -> int:
    """The last tick the folder says the world reached (for what damage left out)."""
    claimed = folder.read_meta().get("last_tick")
    return max(reader.last_tick, final_tick(folder), state_file_tick(folder) or -1,
               claimed if isinstance(claimed, int) else -1)


def _past_the_end(path: Path, first: int, given: bool, end: int,
                  damage: str | None) -> ReportError:
    if not given and damage is None:
        return ReportError(f"the log of {path} holds no tick after its first snapshot "
                           "yet; run the world first")
    why = f" ({damage})" if damage is not None else ""
    return ReportError(f"--from {first} is past the end of the readable log of {path} (its "
                       f"last tick is {end}{why}); give --from <= {end}")


def _summaries(collected: Collected) -> tuple[tuple[Window, ...], Window]:
    """Every window's figures and the total's, each failed-action share starting at the
    census before it (or the window's own first census, failing that)."""
    base = collected.baseline
    windows = []
    for tally in collected.tallies:
        windows.append(summarise(tally, base or _own_base(tally)))
        if tally.census:
            last = tally.census[-1]
            base = Baseline(tick=last.tick, actions_started=last.actions_started,
                            failed_so_far=last.failed_so_far)
    total: Tally = merge(list(collected.tallies), collected.personality_of)
    return tuple(windows), summarise(total, collected.baseline or _own_base(total))


def _own_base(tally: Tally) -> Baseline | None:
    if len(tally.census) < 2:
        return None
    first = tally.census[0]
    return Baseline(tick=first.tick, actions_started=first.actions_started,
                    failed_so_far=first.failed_so_far)


def build_report(path: Path, *, first: int | None = None, last: int | None = None,
                 window: int = DEFAULT_WINDOW) -> Report:
    """The liveliness report of the save folder at ``path`` for ticks ``first``..``last``
    (default: the whole log) in windows of ``window`` ticks. Reads only. ReportError for
    bad input (no such folder, not a save, a range outside the log, a log without events).
    """
    if window < MIN_WINDOW:
        raise ReportError(f"--window {window} is too short; give at least {MIN_WINDOW} ticks")
    folder = open_save(path)
    notes: list[str] = []
    cache: dict[Path, dict[str, Any] | None] = {}
    info = world_info(folder, notes, cache)
    given = first is not None
    first = info.first_tick + 1 if first is None else first
    _check_range(info, first, last, path)
    start = start_point(folder, first, notes, cache)
    reader = LogReader(folder, from_tick=max(0, start.tick + 1))
    collected = collect(reader, first=first, last=last, size=window, start=start)
    damaged = reader.stopped_at is not None
    folder_end = _folder_end(reader, folder) if damaged else -1
    notes.extend(_log_notes(reader, folder_end, last))
    if not collected.tallies:
        raise _past_the_end(path, first, given, reader.last_tick,
                            _damage_note(reader, folder_end, last))
    if collected.events == 0 and info.events == "none":
        raise ReportError(f"the log of {path} holds no events: its world runs with "
                          "persistence.events: none, which logs only inputs and state "
                          "hashes; set persistence.events: all to report on the ticks to "
                          "come")
    if last is not None and not collected.stopped_early and not damaged \
            and collected.last_tick < last:
        raise ReportError(f"--to {last} is past the end of the log of {path} (its last "
                          f"tick is {collected.last_tick}); give --to <= "
                          f"{collected.last_tick} or leave it out")
    if info.events == "none":
        notes.append("the latest run logged no events (persistence.events: none): its ticks "
                     "count as quiet in the report")
    if collected.malformed:
        notes.append(f"skipped {collected.malformed} event line(s) missing a field the "
                     "report needs")
    windows, total = _summaries(collected)
    census = tuple(c for t in collected.tallies for c in t.census)
    return Report(world=info, first=first, last=windows[-1].end, window=window,
                  lines=collected.lines, windows=windows, total=total, census=census,
                  notes=tuple(notes), models=collected.models)
