"""The request queue: priority (urgent first, then oldest), coalescing (one entry per agent;
a newer observation replaces the queued one) and at most one request per agent in flight;
and ``Outcome``, how a request ended. Any brain that thinks off the tick goes through it."""

from __future__ import annotations

import dataclasses
import heapq
import threading
from dataclasses import dataclass
from typing import Any

from agent_world.types import LLMUsage

__all__ = ["NORMAL", "URGENT", "Job", "Outcome", "RequestQueue"]

URGENT = 0
NORMAL = 1


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


class RequestQueue:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queued: dict[int, Job] = {}
        self._heap: list[tuple[int, int, int]] = []  # (priority, rid, agent)
        self._flying: dict[int, Job] = {}
        self._closed = False
        self._unwoken = 0

    def put(self, job: Job, *, wake: bool = True) -> str:
        """'queued', 'replaced' (a queued job of the agent was superseded) or 'busy' (the
        agent's request is in flight: nothing queued). ``wake=False`` leaves the workers
        asleep until ``wake()``: the main thread queues during a tick and wakes them after
        it, so no worker takes the GIL while the tick runs."""
        with self._cond:
            if job.agent in self._flying:
                return "busy"
            old = self._queued.get(job.agent)
            if old is not None and old.priority < job.priority:
                job = dataclasses.replace(job, priority=old.priority)
            self._queued[job.agent] = job
            heapq.heappush(self._heap, (job.priority, job.rid, job.agent))
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
                while self._heap:
                    _p, rid, agent = heapq.heappop(self._heap)
                    job = self._queued.get(agent)
                    if job is not None and job.rid == rid:  # else a superseded entry
                        del self._queued[agent]
                        self._flying[agent] = job
                        return job
                if self._closed or not self._cond.wait(timeout):
                    return None

    def done(self, agent: int) -> None:
        with self._cond:
            self._flying.pop(agent, None)

    def cancel(self, agent: int) -> None:
        with self._cond:
            self._queued.pop(agent, None)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._queued.clear()
            self._heap.clear()
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

    @property
    def in_flight(self) -> int:
        with self._cond:
            return len(self._flying)
