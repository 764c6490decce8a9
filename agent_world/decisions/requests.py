"""The request queue: urgent work first with a guaranteed share for routine work, first
come first served within each, coalescing (one entry per agent; a newer request replaces
the queued one and keeps its place in line) and at most one request per agent in flight;
and ``Outcome``, how a request ended. Any brain that thinks off the tick goes through it.

Attention when the model cannot keep up (issue 32). Requests wait in two lines: urgent
(the agent was attacked, is starving, was spoken to or offered a trade) and routine (the
interval, a plan that ended, a newcomer, its first thought). ``get`` takes from the urgent
line first, except that while routine work waits, at most ``ROUTINE_EVERY - 1`` urgent
requests in a row go before the oldest routine one. Urgent news goes stale: an urgent
request that waited in its line longer than ``fresh_s`` (the pipeline sets it to about one
answer's latency) moves to the routine line, at the turn it first entered the queue. So
the urgent line holds only fresh news, and when more urgent news comes than the model can
answer, what it answers first is what is still worth answering at once (``stale`` counts
the rest, which is answered in its turn). Within the urgent line, news of danger
(``DANGER``: attacked, starving) goes before the rest (spoken to, an offer) whenever urgent
news can go stale: when more urgent news comes than the model answers, it is talk and trade
that wait and go stale, not a fight or hunger (measured in bench/RESULTS.md, issue 32).
While nothing can go stale (``fresh_s`` infinite: no latency known yet) the urgent line is
served in the order it was entered, so no news waits behind a stream of danger for ever.
Counted in requests taken:

- urgent work gets at least ``(ROUTINE_EVERY - 1) / ROUTINE_EVERY`` of what the model can
  answer, however much routine work waits: an urgent request with ``q - 1`` urgent ones
  ahead of it is taken within ``q + ceil(q / (ROUTINE_EVERY - 1))`` gets (unless it goes
  stale first; news other than danger counts the danger that comes after it as ahead);
- no request starves: each agent has at most one request queued, and the lines are served
  in the order requests first entered the queue (a newcomer joins behind; a replacement
  keeps the replaced request's place; news made more urgent goes to the back of the line
  that goes first, and back to its first place in the routine line when stale), so at
  most ``N - 1`` requests are ever ahead of one, for ``N`` agents, and each routine request
  taken is preceded by at most ``ROUTINE_EVERY - 1`` urgent ones: every request is taken
  within ``N * ROUTINE_EVERY`` gets, after at most ``fresh_s`` in an urgent line. (With
  nothing going stale, a routine request with ``p - 1`` routine ones ahead of it is taken
  within ``p * ROUTINE_EVERY`` gets.)

In time: while work waits, each request in flight frees its place within its deadline
(``Job.deadline_s``, the pipeline gives it up then), so with ``K`` requests in flight at
once, no request waits longer than ``ceil(N * ROUTINE_EVERY / K)`` deadlines (plus a tick
per round, where the pipeline hands requests out after the tick). That is the worst case,
all answers as late as allowed; a queue that drains at ``r`` requests a second holds a
request about ``p / r`` seconds.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_world.types import LLMUsage

__all__ = ["DANGER", "NORMAL", "ROUTINE_EVERY", "URGENT", "Job", "Outcome", "RequestQueue"]

URGENT = 0
NORMAL = 1
ROUTINE_EVERY = 4
"""While routine requests wait, at least one request in this many taken is routine."""
DANGER = frozenset({"attacked", "starving"})
"""Urgent reasons that concern the agent's life. Within the urgent line they go first: when
more urgent news comes than the model answers, what waits (and goes stale) is talk and
trade, not a fight or hunger."""

# The queue's own lines, in the order they go first (a replacement never moves down):
# urgent news of danger, the rest of urgent news, routine work.
_DANGER, _NEWS, _ROUTINE = 0, 1, 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One decision to ask for, as plain data (built on the main thread)."""

    rid: int
    agent: int
    tick: int
    priority: int
    reasons: tuple[str, ...]
    payload: Any  # what the brain decides from: the LLM's prompt, a user brain's observation
    key: str = ""  # identifies identical requests (the LLM's response cache)
    deadline_s: float | None = None  # given up this long after it went out (None: never)


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """How one request ended, for the main thread's bookkeeping."""

    rid: int
    agent: int
    ok: bool
    decision: str = ""
    thought: str = ""
    error_kind: str = ""
    error: str = ""
    raw: str = ""
    usage: LLMUsage | None = None
    latency_s: float = 0.0
    cached: bool = False
    too_long: bool = False  # the server said the prompt is too long: trim the next one


@dataclass(slots=True)
class _Place:
    """Where an agent's queued request stands: its line, its turn in it and since when, and
    its turn and time when it first entered the queue (a routine request's are the same)."""

    line: int  # _DANGER, _NEWS or _ROUTINE
    turn: int
    since: float
    first: int
    first_since: float


class RequestQueue:
    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        """``now``: the clock waits are measured on (``entered``, ``fresh_s``)."""
        self._now = now
        self.fresh_s = math.inf  # urgent news older than this (``now``'s seconds) is stale
        self.stale = 0  # urgent requests moved to the routine line, in all
        self.stale_danger = 0  # of those, news of danger
        self._cond = threading.Condition()
        self._queued: dict[int, Job] = {}
        self._places: dict[int, _Place] = {}
        self._lines: tuple[list[tuple[int, int]], ...] = ([], [], [])  # by line
        self._turns = 0
        self._urgent_run = 0  # urgent requests taken since the last routine one
        self._flying: dict[int, Job] = {}
        self._flying_since: dict[int, tuple[int, float]] = {}  # agent -> (line, queued at)
        self._closed = False
        self._unwoken = 0

    def put(self, job: Job, *, wake: bool = True) -> str:
        """'queued', 'replaced' (a queued job of the agent was superseded: the new one takes
        its place in line, or a place at the back of a line that goes before it: urgent
        news replacing routine work, news of danger replacing other news) or 'busy' (the
        agent's request is in flight: nothing queued). A replacement is never less urgent
        than what it replaces. ``wake=False`` leaves
        the workers asleep until ``wake()``: the main thread queues during a tick and wakes
        them after it, so no worker takes the GIL while the tick runs."""
        with self._cond:
            agent = job.agent
            if agent in self._flying:
                return "busy"
            old = self._queued.get(agent)
            if old is not None and old.priority < job.priority:
                job = dataclasses.replace(job, priority=old.priority)
            self._queued[agent] = job
            line = _line_of(job)
            place = self._places.get(agent)
            if place is None:
                self._turns += 1
                now = self._now()
                self._places[agent] = _Place(line, self._turns, now, self._turns, now)
                heapq.heappush(self._lines[line], (self._turns, agent))
            elif line < place.line:
                # News made more pressing: the back of the line that goes first.
                self._turns += 1
                place.line, place.turn, place.since = line, self._turns, self._now()
                heapq.heappush(self._lines[line], (self._turns, agent))
            if wake:
                self._cond.notify()
            else:
                self._unwoken += 1
            return "queued" if old is None else "replaced"

    def wake(self) -> None:
        """Wake a worker for each job queued with ``wake=False``."""
        with self._cond:
            if self._unwoken:
                self._cond.notify(self._unwoken)
                self._unwoken = 0

    def get(self, timeout: float | None = None) -> Job | None:
        """The next job (now in flight), or None when closed or after ``timeout``."""
        with self._cond:
            while True:
                job = self._take()
                if job is not None:
                    return job
                if self._closed or not self._cond.wait(timeout):
                    return None

    def _head(self, line: int) -> int | None:
        """The agent first in ``line`` (stale entries dropped), or None."""
        heap = self._lines[line]
        while heap:
            turn, agent = heap[0]
            place = self._places.get(agent)
            if place is not None and place.line == line and place.turn == turn:
                return agent
            heapq.heappop(heap)
        return None

    def _go_stale(self) -> None:
        """Urgent requests that waited in their line longer than ``fresh_s`` join the
        routine line, at the turn they first entered the queue (their news is old: it has
        no claim to go first any more, but it keeps its age). Each urgent line is in the
        order its requests entered it, so the stale ones are at its head."""
        if self.fresh_s == math.inf:
            return
        oldest = self._now() - self.fresh_s
        for urgent in (_DANGER, _NEWS):
            while (agent := self._head(urgent)) is not None:
                place = self._places[agent]
                if place.since >= oldest:
                    break
                heapq.heappop(self._lines[urgent])
                place.line, place.turn, place.since = _ROUTINE, place.first, place.first_since
                heapq.heappush(self._lines[_ROUTINE], (place.first, agent))
                self._queued[agent] = dataclasses.replace(self._queued[agent],
                                                          priority=NORMAL)
                self.stale += 1
                self.stale_danger += urgent == _DANGER

    def _take(self) -> Job | None:
        self._go_stale()
        danger, news = self._head(_DANGER), self._head(_NEWS)
        urgent: int | None
        if danger is not None and news is not None and self.fresh_s == math.inf:
            # Nothing goes stale: the urgent lines are one, in order, so no news waits
            # behind a stream of danger for ever.
            older = self._places[danger].turn < self._places[news].turn
            urgent, line = (danger, _DANGER) if older else (news, _NEWS)
        elif danger is not None:
            urgent, line = danger, _DANGER
        else:
            urgent, line = news, _NEWS
        routine = self._head(_ROUTINE)
        if urgent is not None and (routine is None
                                   or self._urgent_run < ROUTINE_EVERY - 1):
            agent = urgent
            self._urgent_run += 1
        elif routine is not None:
            agent, line = routine, _ROUTINE
            self._urgent_run = 0
        else:
            return None
        heapq.heappop(self._lines[line])
        place = self._places.pop(agent)
        job = self._queued.pop(agent)
        self._flying[agent] = job
        self._flying_since[agent] = (NORMAL if line == _ROUTINE else URGENT, place.since)
        return job

    def entered(self, agent: int) -> tuple[int, float]:
        """The line (URGENT or NORMAL) agent ``agent``'s request in flight was taken from,
        and when it entered that line (``now``'s time; a routine request: the queue)."""
        with self._cond:
            return self._flying_since.get(agent, (NORMAL, self._now()))

    def done(self, agent: int) -> None:
        with self._cond:
            self._flying.pop(agent, None)
            self._flying_since.pop(agent, None)

    def cancel(self, agent: int) -> bool:
        """Take agent ``agent``'s queued request out, unsent (True if there was one)."""
        with self._cond:
            if self._queued.pop(agent, None) is None:
                return False
            self._places.pop(agent, None)
            return True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._queued.clear()
            self._places.clear()
            for heap in self._lines:
                heap.clear()
            self._cond.notify_all()

    def state_of(self, agent: int) -> str | None:
        with self._cond:
            if agent in self._flying:
                return "in flight"
            if agent in self._queued:
                return "queued"
            return None

    def urgent_waiting(self) -> int:
        """Urgent requests queued, not yet taken (interviews wait while there are any)."""
        with self._cond:
            return sum(1 for job in self._queued.values() if job.priority == URGENT)

    def agents(self) -> frozenset[int]:
        """The agents with a request queued or in flight."""
        with self._cond:
            return frozenset(self._queued).union(self._flying)

    @property
    def depth(self) -> int:
        with self._cond:
            return len(self._queued)

    def depths(self) -> tuple[int, int]:
        """Requests queued now: (urgent, routine)."""
        with self._cond:
            routine = sum(1 for place in self._places.values() if place.line == _ROUTINE)
            return len(self._places) - routine, routine

    @property
    def in_flight(self) -> int:
        with self._cond:
            return len(self._flying)


def _line_of(job: Job) -> int:
    if job.priority != URGENT:
        return _ROUTINE
    return _DANGER if DANGER.intersection(job.reasons) else _NEWS
