"""Splitting the log into windows of ticks and counting each one's events.

Windows are ``first + k * size`` .. ``first + (k + 1) * size - 1``; the last one ends at the
report's last tick. The log is streamed once: lines before ``first`` only teach who arrived
(so casters' personalities are known) and, for a census at ``first - 1``, where the
failed-action share starts; from ``first`` on each event goes to its window's tally.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from agent_world.core import events as ev
from agent_world.report.models import ModelFigures, ModelTally
from agent_world.report.reader import StartPoint
from agent_world.report.summary import Baseline
from agent_world.report.tally import HANDLERS, UNKNOWN, Record, Tally, census_point

__all__ = ["Collected", "collect"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Collected:
    tallies: tuple[Tally, ...]  # one per window, in order (empty: no line at or after first)
    personality_of: dict[int, str]
    baseline: Baseline | None  # where the failed-action share starts, if known
    lines: int  # lines read, of every kind, before and after ``first``
    events: int  # event lines from ``first`` on
    malformed: int  # event lines missing a field the report needs (skipped)
    last_tick: int  # the last tick read at or after ``first`` (-1: none)
    stopped_early: bool  # stopped at a line past ``last`` (the log goes on)
    models: tuple[ModelFigures, ...] = ()  # the LLM's model profiles, ``first`` on


class _Counts:
    def __init__(self) -> None:
        self.lines = 0


def _before(records: Iterable[Record], first: int, personality_of: dict[int, str],
            base: Baseline | None, counts: _Counts,
            models: ModelTally) -> tuple[Record | None, Baseline | None]:
    """Read up to the first line at or after ``first``; returns it and the baseline."""
    for rec in records:
        counts.lines += 1
        tick = rec["tick"]
        if tick >= first:
            return rec, base
        if rec.get("kind") != "event":
            continue
        kind = rec.get("type")
        models.learn(rec)
        if kind == ev.SPAWN and "agent" in rec:
            personality_of[rec["agent"]] = str(rec.get("personality", UNKNOWN))
        elif kind == ev.CENSUS and tick == first - 1 and "agents" in rec:
            point = census_point(rec, 0)
            base = Baseline(tick=tick, actions_started=point.actions_started, failed_so_far=0)
    return None, base


def _end(start: int, size: int, last: int | None) -> int:
    return start + size - 1 if last is None else min(start + size - 1, last)


def collect(records: Iterable[Record], *, first: int, last: int | None, size: int,
            start: StartPoint) -> Collected:
    """Count the events of ticks ``first``..``last`` (None: to the end of the log) in
    windows of ``size`` ticks. ``records`` begin after ``start``'s snapshot."""
    personality_of = dict(start.personality_of)
    base = None
    if start.tick == first - 1:
        base = Baseline(tick=start.tick,
                        actions_started=start.counters.get("actions_started", 0),
                        failed_so_far=0)
    counts = _Counts()
    stream = iter(records)
    models = ModelTally(start.brain_of)
    head, base = _before(stream, first, personality_of, base, counts, models)
    tallies: list[Tally] = []
    events = malformed = 0
    last_tick = -1
    stopped = False
    if head is not None:
        tally = Tally(first, _end(first, size, last), personality_of)
        tallies.append(tally)
        end = tally.end
        lines = counts.lines - 1  # the head is counted again below
        handlers = HANDLERS
        for rec in itertools.chain((head,), stream):
            lines += 1
            tick = rec["tick"]
            if tick > end:
                if last is not None and tick > last:
                    stopped = True
                    break
                while tick > end:  # windows without a line are windows too
                    tally = Tally(end + 1, _end(end + 1, size, last), personality_of)
                    tally.failed_so_far = tallies[-1].failed_so_far
                    tallies.append(tally)
                    end = tally.end
            last_tick = tick
            if rec.get("kind") != "event":
                if rec.get("kind") == "input":
                    models.add(rec)
                continue
            events += 1
            models.learn(rec)
            handler = handlers.get(rec.get("type", ""))
            if handler is not None:
                try:
                    handler(tally, rec)
                except (KeyError, TypeError, ValueError, AttributeError):
                    malformed += 1
        counts.lines = lines
    final = last if last is not None and stopped else last_tick
    if tallies and tallies[-1].end > final:
        tallies[-1].end = max(final, tallies[-1].start)
    return Collected(tallies=tuple(tallies), personality_of=personality_of, baseline=base,
                     lines=counts.lines, events=events, malformed=malformed,
                     last_tick=last_tick, stopped_early=stopped, models=models.figures())

