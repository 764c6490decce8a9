"""The AbilityRunner the world uses: one tick's calls in as few worker round trips as possible.

All calls of a tick go to the current worker in one request; results stream back one frame
per call. The step budget decides about code that finishes, and only it: the same code on
the same inputs takes the same steps on every machine. The host waits for each result up to
``sandbox.call_timeout_ms`` of wall-clock time, a backstop (with the worker's CPU limit) for
code that runs away in C or a worker that hangs, set far beyond what any code within its
step budget takes on a busy machine. A call past it has its worker killed (SIGKILL) and is
reported ``killed``; the remaining calls go, in a second request, to the spare worker, which
is already running. The worker stops starting calls once the tick's calls have taken
``tick_steps`` steps and reports the rest ``postponed``: a rule of the world, not of the
machine.

Replaying, nothing is postponed and calls get ``replay_slack`` times the timeout: the log
decides what was stopped or postponed, not this machine's speed.

``decide`` runs one policy call (an agent's brain written as sandboxed code,
docs/policies.md) on the same workers and protocol, for a brain's worker thread: no tick
budget, a wall-clock timeout of the caller's choosing.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agent_world.config import SandboxConfig
from agent_world.sandbox.pool import Worker, WorkerDied, WorkerPool
from agent_world.sandbox.protocol import TimedOut
from agent_world.types import (
    ABILITY_KILLED,
    ABILITY_OK,
    ABILITY_POSTPONED,
    ABILITY_STATUSES,
    TICK_STEPS_SPENT,
    AbilityCall,
    AbilityResult,
    PolicyCall,
)

__all__ = ["SandboxRunner", "percentile"]

HISTORY = 1000
WORKER_WAIT_S = 30.0  # the longest a batch waits for a worker to start (after kills)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _result(frame: Any, ms: float) -> AbilityResult:
    """A result frame as an AbilityResult; WorkerDied if it is not one (a worker that sends
    anything else is not trusted again)."""
    if not isinstance(frame, dict) or frame.get("status") not in ABILITY_STATUSES:
        raise WorkerDied("the worker sent a malformed result")
    reason = frame.get("reason", "")
    steps = frame.get("steps", 0)
    cpu_ms = frame.get("cpu_ms", 0.0)
    if type(reason) is not str or type(steps) is not int or type(cpu_ms) not in (int, float):
        raise WorkerDied("the worker sent a malformed result")
    return AbilityResult(status=frame["status"], effects=frame.get("effects"),
                         reason=reason[:300], steps=steps, ms=ms, cpu_ms=float(cpu_ms))


class SandboxRunner:
    """Runs ability calls in worker processes. One thread uses a runner at a time."""

    def __init__(self, cfg: SandboxConfig, *, spare: int | None = None,
                 wait: bool = True) -> None:
        """Starts the workers at once; with ``wait`` also waits until they are up (else the
        first batch, or ``warm``, does)."""
        self.cfg = cfg
        self.pool = WorkerPool(cfg.memory_mb, cfg.spare_workers if spare is None else spare)
        if wait:
            try:
                self.pool.wait_ready()
            except WorkerDied:
                self.pool.close()
                raise
        self._lock = threading.Lock()
        self.batches = 0  # run() calls that had calls
        self.round_trips = 0
        self.calls = 0
        self.kills = 0
        self.postponed = 0
        self.errors = 0
        self._ms_total = 0.0  # wall time of every batch, for the mean per call
        self.tick_ms: deque[float] = deque(maxlen=HISTORY)
        self.call_ms: deque[float] = deque(maxlen=HISTORY)
        self.trips_per_batch: deque[int] = deque(maxlen=HISTORY)

    def run(self, calls: Sequence[AbilityCall], *, replaying: bool, steps: int,
            alloc: int, tick_steps: int = 0) -> list[AbilityResult]:
        started = time.monotonic()
        timeout = self.cfg.call_timeout_ms / 1000 * (self.cfg.replay_slack if replaying else 1)
        steps_left = 0 if replaying else tick_steps  # 0: no limit
        results: list[AbilityResult] = []
        trips = 0
        while len(results) < len(calls):
            # A worker still starting (after kills in quick succession) is waited for, live
            # as in a replay: postponing its calls would make the world depend on the time
            # a process takes to start.
            worker = self.pool.current(started + max(WORKER_WAIT_S, timeout))
            if worker is None:
                results.extend(AbilityResult(status=ABILITY_KILLED,
                                             reason="no sandbox worker was ready in time")
                               for _ in calls[len(results):])
                break
            trips += 1
            done = len(results)
            self._batch(worker, calls[done:], results, timeout=timeout, tick_steps=steps_left,
                        steps=steps, alloc=alloc)
            if steps_left and len(results) < len(calls):
                # The spare goes on with what the tick's calls left of its steps.
                steps_left -= sum(r.steps for r in results[done:])
                if steps_left <= 0:
                    results.extend(AbilityResult(status=ABILITY_POSTPONED,
                                                 reason=TICK_STEPS_SPENT)
                                   for _ in calls[len(results):])
        elapsed = (time.monotonic() - started) * 1000
        with self._lock:
            self.batches += 1
            self.round_trips += trips
            self.calls += len(calls)
            self._ms_total += elapsed
            self.tick_ms.append(elapsed)
            self.trips_per_batch.append(trips)
            for r in results:
                if r.status == ABILITY_KILLED:
                    self.kills += 1
                elif r.status == ABILITY_POSTPONED:
                    self.postponed += 1
                elif r.status != ABILITY_OK:
                    self.errors += 1
                if r.status != ABILITY_POSTPONED:
                    self.call_ms.append(r.ms)
        return results

    def decide(self, call: PolicyCall, *, steps: int, alloc: int, memory_bytes: int,
               timeout_s: float) -> AbilityResult:
        """Run one policy call, ``decide(obs, memory)``; the result's ``effects`` is the
        decision the worker checked (``runtime.export_decision``), its ``ms`` the whole
        round trip. Killed past ``timeout_s`` of wall-clock time (waiting for a worker to
        be ready included); never postponed. Never raises for anything the code does."""
        started = time.monotonic()
        deadline = started + timeout_s
        out: list[AbilityResult] = []
        trips = 0
        while not out and time.monotonic() < deadline:
            worker = self.pool.current(deadline)
            if worker is None:
                break
            trips += 1
            self._batch(worker, [call], out, timeout=max(0.0, deadline - time.monotonic()),
                        tick_steps=0, steps=steps, alloc=alloc, kind="policy",
                        extra={"memory_bytes": memory_bytes})
        elapsed = (time.monotonic() - started) * 1000
        result = replace(out[0], ms=elapsed) if out else AbilityResult(
            status=ABILITY_KILLED, reason="no sandbox worker was ready in time", ms=elapsed)
        with self._lock:
            self.batches += 1
            self.round_trips += trips
            self.calls += 1
            self._ms_total += elapsed
            self.tick_ms.append(elapsed)
            self.trips_per_batch.append(trips)
            if result.status == ABILITY_KILLED:
                self.kills += 1
            elif result.status != ABILITY_OK:
                self.errors += 1
            self.call_ms.append(result.ms)
        return result

    def _batch(self, worker: Worker, calls: Sequence[AbilityCall | PolicyCall],
               out: list[AbilityResult], *, timeout: float, tick_steps: int,
               steps: int, alloc: int, kind: str = "ability",
               extra: dict[str, Any] | None = None) -> None:
        """Send ``calls`` (of ``kind`` code) to ``worker`` and append results to ``out``
        until all are in or the worker had to go (the caller then goes on with the spare)."""
        # A worker caches compiled code by kind and digest; so does ``known``.
        prefix = "" if kind == "ability" else f"{kind}:"
        sources = {c.digest: c.source for c in calls if prefix + c.digest not in worker.known}
        request = {"op": "run", "steps": steps, "alloc": alloc,
                   "cpu_s": self.cfg.cpu_seconds, "tick_steps": tick_steps,
                   "sources": sources,
                   "calls": [{"digest": c.digest, "ctx": c.ctx} for c in calls]}
        if kind != "ability":
            request["kind"] = kind
        request.update(extra or {})
        try:
            worker.send(request)
        except WorkerDied:
            self.pool.discard(worker)
            return
        worker.known.update(prefix + digest for digest in sources)
        for _call in calls:
            began = time.monotonic()
            try:
                frame = worker.recv(began + timeout)
                result = _result(frame, (time.monotonic() - began) * 1000)
            except TimedOut:
                self.pool.discard(worker)
                out.append(AbilityResult(
                    status=ABILITY_KILLED, ms=(time.monotonic() - began) * 1000,
                    reason=f"ran longer than {timeout * 1000:g} ms of wall-clock time"))
                return
            except WorkerDied as exc:
                self.pool.discard(worker)
                out.append(AbilityResult(status=ABILITY_KILLED,
                                         ms=(time.monotonic() - began) * 1000,
                                         reason=f"the worker process died: {exc}"))
                return
            out.append(result)
            if result.status == ABILITY_KILLED:  # the worker ends itself after this
                self.pool.discard(worker)
                return
        try:
            done = worker.recv(time.monotonic() + timeout)
            if not isinstance(done, dict) or done.get("op") != "done":
                raise WorkerDied("the worker did not end its batch")
        except (TimedOut, WorkerDied):
            self.pool.discard(worker)

    def warm(self, timeout: float = 15.0) -> None:
        """Wait until every worker of the pool has started (after start-up or kills)."""
        self.pool.wait_ready(timeout)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            ticks = list(self.tick_ms)
            calls = list(self.call_ms)
            trips = list(self.trips_per_batch)
            return {
                "batches": self.batches,
                "calls": self.calls,
                "round_trips": self.round_trips,
                "kills": self.kills,
                "postponed": self.postponed,
                "errors": self.errors,
                "workers_started": self.pool.started,
                "workers_replaced": self.pool.replaced,
                "ms_per_tick": {"p50": round(percentile(ticks, 0.5), 3),
                                "p99": round(percentile(ticks, 0.99), 3),
                                "max": round(max(ticks, default=0.0), 3)},
                # Waiting for each result after the previous one (streamed results that
                # were already in the pipe cost ~0); the mean is the batch time per call.
                "ms_per_call": {"p50": round(percentile(calls, 0.5), 3),
                                "p99": round(percentile(calls, 0.99), 3),
                                "mean": round(self._ms_total / self.calls, 3)
                                if self.calls else 0.0},
                "round_trips_per_tick": round(sum(trips) / len(trips), 3) if trips else 0.0,
            }

    def close(self) -> None:
        self.pool.close()
