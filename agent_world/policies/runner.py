"""Policies' calls in the sandbox: ``decide(obs, memory)`` for brain worker threads.

A ``PolicyRunner`` owns one ``SandboxRunner`` (the sandbox abilities run in: the same worker
processes with their memory, CPU and file limits, the same protocol), started on first use,
and lets one thread call through it at a time (a call is a round trip of about a
millisecond). Each call has the step budget (``brains.policy_steps``), an allocation budget,
the memory limit (``brains.policy_memory_bytes``) and a wall-clock timeout, past which its
worker is killed and replaced by the spare.

What comes back is a ``PolicyOutcome``: the checked decision and the new memory, or the
fault, by kind:

- ``limit``: the step or allocation budget, or a size guard (deterministic);
- ``invalid``: ``decide`` returned something that is not a decision (or an action or
  arguments the action set refuses), or memory that is not JSON data or too big
  (deterministic);
- ``exception``: the code raised (or recursed too deep);
- ``timeout``: past the wall-clock timeout (its worker was killed);
- ``killed``: the worker's memory limit, or a worker that died.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent_world.config import SandboxConfig
from agent_world.contract.decision import Decision, DecisionError, as_plan
from agent_world.policies.policy import Policy
from agent_world.sandbox.pool import WorkerDied
from agent_world.sandbox.runner import SandboxRunner
from agent_world.sandbox.runtime import ResultError, export_decision, memory_size
from agent_world.types import ABILITY_KILLED, ABILITY_OK, AbilityResult, PolicyCall

__all__ = ["ALLOC_BUDGET", "FAULT_KINDS", "PolicyOutcome", "PolicyRunner", "as_decision",
           "decision_timeout_s", "fault_kind", "policy_seed"]

ALLOC_BUDGET = 1_000_000  # characters and list items one call may create
START_TIMEOUT_S = 15.0  # how long the first call waits for the workers to start
FAULT_KINDS = ("limit", "invalid", "exception", "timeout", "killed")
MASK63 = (1 << 63) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyOutcome:
    """One call's result. ``ok``: ``decision`` holds ``action``, ``args`` and maybe
    ``reasoning``, and ``memory`` the memory to keep (None: unchanged). Otherwise ``kind``
    (one of ``FAULT_KINDS``) and ``reason`` say what went wrong. ``steps`` were used of
    ``budget``; ``ms`` is wall time and ``cpu_ms`` the worker's CPU time (statistics and the
    checker's verdict on slow policies only)."""

    ok: bool
    kind: str = ""
    reason: str = ""
    decision: Mapping[str, Any] = field(default_factory=dict)
    memory: dict[str, Any] | None = None
    memory_bytes: int = 0
    steps: int = 0
    budget: int = 0
    ms: float = 0.0
    cpu_ms: float = 0.0

    def line(self) -> str:
        """``kind: reason``, or the decision as ``action(key=value, ...)``."""
        if not self.ok:
            return f"{self.kind}: {self.reason}"
        args = ", ".join(f"{k}={v}" for k, v in dict(self.decision.get("args", {})).items())
        return f"{self.decision.get('action')}({args})"


def fault_kind(result: AbilityResult) -> tuple[str, str]:
    """The fault kind of a call that did not return a decision (see the module's doc) and
    its reason, without the prefix that repeats the kind."""
    reason = result.reason
    if result.status == ABILITY_KILLED:
        kind = "timeout" if ("wall-clock" in reason or "ready in time" in reason) else "killed"
        return kind, reason
    for prefix, kind in (("limit:", "limit"), ("bad result:", "invalid")):
        if reason.startswith(prefix):
            return kind, reason.removeprefix(prefix).strip()
    return "exception", reason


def _in_policy_words(reason: str, alloc: int) -> str:
    # The sandbox's runtime words a few messages for abilities (they are part of abilities'
    # recorded state, so they stay as they are); here they are about a policy.
    return (reason.replace("is not available to abilities", "is not available to policies")
            .replace("(abilities.alloc_budget)",
                     f"({alloc} characters and list items per policy call)"))


def as_decision(decision: Mapping[str, Any]) -> Decision:
    """A checked decision (``PolicyOutcome.decision``) as a ``Decision``."""
    reasoning = decision.get("reasoning")
    return Decision(str(decision["action"]), dict(decision.get("args") or {}),
                    reasoning if isinstance(reasoning, str) else None)


def decision_timeout_s(deadline_ms: float) -> float:
    """How long a world lets a policy's call run: 80% of its brain's deadline, so that a
    worker thread is never stuck in one past the deadline."""
    return 0.8 * deadline_ms / 1000


def policy_seed(agent: int, tick: int) -> int:
    """The seed of a call's random numbers: the same agent at the same tick draws the same."""
    return (agent * 0x9E3779B97F4A7C15 + tick * 0xBF58476D1CE4E5B9) & MASK63


class PolicyRunner:
    """Runs policy calls in sandbox workers; safe to use from several threads."""

    def __init__(self, sandbox: SandboxConfig, *, steps: int, memory_bytes: int,
                 timeout_s: float, alloc: int = ALLOC_BUDGET) -> None:
        self.cfg = sandbox
        self.steps = steps
        self.memory_bytes = memory_bytes
        self.timeout_s = timeout_s
        self.alloc = alloc
        self._lock = threading.Lock()
        self._runner: SandboxRunner | None = None
        self._start_error = ""
        self._attempted = False  # start() ran (read without the lock: a flag set once)
        self._closed = False

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the workers and wait until they are up (once; later calls return at
        once). A failure to start is kept: every call then fails as ``killed``."""
        if self._attempted:
            return
        with self._lock:
            if self._attempted or self._closed:
                return
            self._attempted = True
            try:
                self._runner = SandboxRunner(self.cfg, spare=1, wait=False)
                self._runner.warm(timeout)
            except (WorkerDied, OSError) as exc:
                self._start_error = f"the sandbox's workers did not start ({exc})"

    @property
    def started(self) -> bool:
        return self._runner is not None

    def decide(self, policy: Policy, obs: Mapping[str, Any], memory: Mapping[str, Any], *,
               seed: int, agent: int = 0, timeout_s: float | None = None) -> PolicyOutcome:
        """``policy``'s decision for one observation (``Observation.to_dict()``) and the
        agent's memory; never raises for anything the policy does."""
        self.start()
        timeout = self.timeout_s if timeout_s is None else timeout_s
        call = PolicyCall(agent=agent, policy=policy.name, digest=policy.digest,
                          source=policy.source,
                          ctx={"obs": obs, "memory": memory, "seed": seed})
        began = time.monotonic()
        if not self._lock.acquire(timeout=timeout):
            return PolicyOutcome(ok=False, kind="timeout", budget=self.steps,
                                 reason=f"no sandbox worker was free within "
                                        f"{timeout * 1000:g} ms")
        try:
            runner = self._runner
            if runner is None:
                return PolicyOutcome(ok=False, kind="killed", budget=self.steps,
                                     reason=self._start_error or "the sandbox is closed")
            left = max(0.001, timeout - (time.monotonic() - began))
            result = runner.decide(call, steps=self.steps, alloc=self.alloc,
                                   memory_bytes=self.memory_bytes, timeout_s=left)
        finally:
            self._lock.release()
        return self._outcome(result)

    def _outcome(self, result: AbilityResult) -> PolicyOutcome:
        fault = PolicyOutcome(ok=False, steps=result.steps, budget=self.steps, ms=result.ms,
                              cpu_ms=result.cpu_ms)
        if result.status != ABILITY_OK:
            kind, reason = fault_kind(result)
            return replace(fault, kind=kind, reason=_in_policy_words(reason, self.alloc))
        try:  # nothing from a worker is trusted: checked again here
            decision = export_decision(result.effects, self.memory_bytes)
            memory = decision.pop("memory", None)
            size = memory_size(memory, self.memory_bytes) if memory is not None else 0
        except ResultError as exc:
            return replace(fault, kind="invalid", reason=str(exc))
        try:  # against the action set, as every brain's answer is
            as_plan(as_decision(decision), max_actions=1)
        except DecisionError as exc:
            return replace(fault, kind="invalid", reason=str(exc))
        return replace(fault, ok=True, decision=decision, memory=memory, memory_bytes=size)

    def stats(self) -> dict[str, Any]:
        runner = self._runner
        if runner is None:
            return {"started": False}
        figures = runner.stats()
        return {"started": True, "calls": figures["calls"], "kills": figures["kills"],
                "errors": figures["errors"], "ms_per_call": figures["ms_per_call"],
                "workers_replaced": figures["workers_replaced"]}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()
