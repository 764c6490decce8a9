"""Brains in worker processes (``brains.processes``), for CPU-heavy brains.

A brain run on a thread shares the interpreter lock with the world: a brain that computes
for 50 ms takes those 50 ms from the ticks. In a process it takes nothing, and one that
hangs can be stopped: at the deadline its process is killed and a fresh one started (the
brains that lived in it start over, ``on_spawn`` again).

Each agent's brain lives in one process (chosen by the agent's id), so its state carries
from one decision to the next. A brain worker thread hands the process the observation and
the hooks due, and waits for the answer at most until the deadline; the answer comes back
as plain data (decisions as dicts, the trace) and is checked again here, since nothing from
the process is trusted. Each process is a fresh interpreter (``agent_world.userbrains.procchild``)
on two pipes of its own, never a fork of this threaded process.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

import orjson

__all__ = ["BrainProcesses", "Verdict"]

Verdict = tuple[str, Any, list[str], list[str]]
"""(kind, payload, trace, notes): ``ok`` with the decisions as dicts, or a fault kind
(``invalid``, ``exception``, ``timeout``) with its message; ``notes`` says why a saved state
given with the decision could not be restored (the brain then started afresh)."""

STOP_WAIT_S = 1.0


class _Slot:
    """One process and the lock that gives it to one worker thread at a time."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.requests: Connection | None = None
        self.answers: Connection | None = None
        self.agents: set[int] = set()  # whose brains live in it now
        self.ready = False  # it said so: its start-up is over
        self.restarts = 0

    def ensure(self) -> tuple[Connection, Connection]:
        if (self.process is None or self.process.poll() is not None
                or self.requests is None or self.answers is None):
            self.stop()
            child_reads, parent_writes = os.pipe()
            parent_reads, child_writes = os.pipe()
            path = orjson.dumps([p for p in sys.path if p]).decode()
            try:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "agent_world.userbrains.procchild", str(child_reads),
                     str(child_writes), self.spec, path],
                    pass_fds=(child_reads, child_writes), stdin=subprocess.DEVNULL,
                    stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else None,
                    close_fds=True)
            finally:
                os.close(child_reads)
                os.close(child_writes)
            self.requests = Connection(parent_writes, readable=False)
            self.answers = Connection(parent_reads, writable=False)
            self.agents.clear()
            self.ready = False
        return self.requests, self.answers

    def wait_ready(self, answers: Connection, deadline: float) -> bool:
        """Whether the process has started (its greeting read), waiting until ``deadline``.
        A process still starting is not stuck: it is left to finish."""
        if not self.ready and answers.poll(max(0.0, deadline - time.perf_counter())):
            self.ready = answers.recv() == ("ready",)
            if not self.ready:
                raise EOFError("the process greeted with something else than ready")
        return self.ready

    def stop(self, *, restart: bool = False) -> None:
        process, requests, answers = self.process, self.requests, self.answers
        self.process = self.requests = self.answers = None
        for conn in (requests, answers):
            if conn is not None:
                conn.close()
        if process is not None:
            try:
                process.wait(0 if restart else STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_WAIT_S)
            if restart:
                self.restarts += 1


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


class BrainProcesses:
    """The processes of one registered brain (``spec`` is its ``module:Class``)."""

    def __init__(self, name: str, spec: str, count: int) -> None:
        self.name = name
        self.slots = [_Slot(spec) for _ in range(count)]
        for slot in self.slots:  # started now: an interpreter takes a while to come up
            with contextlib.suppress(OSError):
                slot.ensure()

    def holds(self, agent: int) -> bool:
        """Whether ``agent``'s brain lives in its process now (it was made there, and the
        process has not been replaced since)."""
        slot = self.slots[agent % len(self.slots)]
        return agent in slot.agents

    def decide(self, agent: int, obs: Any, hooks: tuple[Any, ...],
               deadline: float, *, saved: Any = None) -> Verdict:
        """The answer of ``agent``'s brain, by ``deadline`` (a ``perf_counter`` time).
        ``saved``: the state its brain is given back (``set_state``) if the process makes it
        now."""
        return self._call(agent, ("decide", agent, obs, hooks), deadline, saved)

    def interview(self, agent: int, question: str, obs: Any, deadline: float, *,
                  saved: Any = None) -> Verdict:
        """``agent``'s brain's answer to an interviewer (``("ok", text or None, [], notes)``),
        by ``deadline``; held like a decision (one call at a time in a process)."""
        return self._call(agent, ("interview", agent, question, obs), deadline, saved)

    def _call(self, agent: int, message: tuple[Any, ...], deadline: float,
              saved: Any) -> Verdict:
        slot = self.slots[agent % len(self.slots)]
        if not slot.lock.acquire(timeout=max(0.0, deadline - time.perf_counter())):
            return ("timeout", "its process was busy with another agent's decision until "
                               "the deadline", [], [])
        try:
            try:
                requests, answers = slot.ensure()
            except OSError as exc:
                return ("exception", f"its process could not be started ({exc})", [], [])
            try:
                if not slot.wait_ready(answers, deadline):
                    return ("timeout", "its process is still starting", [], [])
                requests.send((*message, None if agent in slot.agents else saved))
                slot.agents.add(agent)
                if answers.poll(max(0.0, deadline - time.perf_counter())):
                    verdict: Verdict = answers.recv()
                    return verdict
            except (EOFError, OSError) as exc:
                slot.stop(restart=True)
                return ("exception", f"its process died ({type(exc).__name__}); a new one "
                                     "is started", [], [])
            # Past the deadline: the process may be stuck for good. Kill it; the brains it
            # held start over in a new one.
            slot.stop(restart=True)
            return ("timeout", "past the deadline: its process was stopped and a new one "
                               "started (the brains in it start over)", [], [])
        finally:
            slot.lock.release()

    def get_state(self, agent: int, deadline: float) -> tuple[bytes | None, str] | None:
        """``agent``'s brain's ``get_state()`` as JSON from its process, between two of its
        calls: (the JSON or None when it keeps nothing, '' or why it failed). None when its
        brain does not live there now, or no answer came by ``deadline`` (its process busy
        or stuck: a stuck one is left to the deadline of the call it is stuck in)."""
        slot = self.slots[agent % len(self.slots)]
        if not slot.lock.acquire(timeout=max(0.0, deadline - time.perf_counter())):
            return None
        try:
            if agent not in slot.agents or slot.requests is None or slot.answers is None:
                return None
            try:
                slot.requests.send(("get_state", agent))
                if slot.answers.poll(max(0.0, deadline - time.perf_counter())):
                    _kind, data, error = slot.answers.recv()
                    return data, error
            except (EOFError, OSError):
                slot.stop(restart=True)
                return None
            # No answer in time: the process is stuck in the user's get_state. Like a
            # decision past its deadline, it is stopped; its brains start over.
            slot.stop(restart=True)
            return None
        finally:
            slot.lock.release()

    def death(self, agent: int) -> None:
        slot = self.slots[agent % len(self.slots)]
        with slot.lock:
            if agent in slot.agents and slot.requests is not None:
                slot.agents.discard(agent)
                with contextlib.suppress(OSError):
                    slot.requests.send(("death", agent))

    def tell(self, agent: int, hooks: tuple[Any, ...]) -> None:
        """Hooks for the agent's brain, if it lives in a process, with no decision after
        them; the process takes them before it sees its pipe close."""
        slot = self.slots[agent % len(self.slots)]
        with slot.lock:
            if agent in slot.agents and slot.requests is not None:
                with contextlib.suppress(OSError):
                    slot.requests.send(("tell", agent, hooks))

    @property
    def restarts(self) -> int:
        return sum(slot.restarts for slot in self.slots)

    def close(self) -> None:
        for slot in self.slots:
            with slot.lock:
                slot.stop()
