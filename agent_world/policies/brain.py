"""A policy as a brain: ``brain=policy:NAME`` agents decide through ``PolicyBrain``.

It is a ``Brain`` like any user's, on the same path off the tick (``agents.runner``'s
``UserBrains``: the same triggers, queue, deadline, fault counting and fallback), and its
decisions become ``plan`` inputs like theirs, so a replay needs no policy code. What it adds:
``decide`` hands the observation (``to_dict()``) and the agent's memory to the policy's
``decide(obs, memory)`` in a sandbox worker (``PolicyRunner``), and keeps the memory it
returns. A call that faults (see ``policies.runner``) raises ``BrainFault`` with its kind;
the agent falls back to its built-in brain for that decision and its memory stays as it was.

Memory lives with the brain object, one per agent, and is saved with the world at every
snapshot (``get_state``), so a resumed or forked world's policy agents remember what they
had (docs/policies.md, "Memory").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import orjson

from agent_world.contract.brains import Brain, BrainFault
from agent_world.contract.decision import Decision
from agent_world.contract.observation import Observation
from agent_world.policies.policy import Policy
from agent_world.policies.runner import PolicyOutcome, PolicyRunner, as_decision, policy_seed
from agent_world.sandbox.runtime import ResultError, memory_size

__all__ = ["PolicyBrain", "policy_brain", "policy_brains"]


class PolicyBrain(Brain):
    """The brain of one agent whose brain is ``policy:NAME``. ``runner`` is given by the
    brains' manager before the first decision."""

    policy: ClassVar[Policy]

    def __init__(self) -> None:
        self.agent = 0
        self.memory: dict[str, Any] = {}
        self.runner: PolicyRunner | None = None
        self.last: PolicyOutcome | None = None  # the last call (for /debug)

    def on_spawn(self, agent_id: int) -> None:
        self.agent = agent_id

    def decide(self, obs: Observation, actions: Mapping[str, Any]
               ) -> Decision | Sequence[Decision]:
        runner = self.runner
        if runner is None:
            raise BrainFault("exception", "no sandbox to run the policy in (a bug: the "
                                          "brains' manager gives one)")
        outcome = runner.decide(self.policy, obs.to_dict(), self.memory, agent=obs.me.id,
                                seed=policy_seed(obs.me.id, obs.tick))
        self.last = outcome
        # The steps go with the decision into the log (eval.diagnostics reads them there).
        self.trace(f"steps {outcome.steps}/{outcome.budget}")
        if not outcome.ok:  # a fault changes nothing: the memory stays as it was
            raise BrainFault(outcome.kind, outcome.reason)
        if outcome.memory is not None:
            self.memory = outcome.memory
        return as_decision(outcome.decision)

    def get_state(self) -> dict[str, Any] | None:
        """The agent's policy memory (nothing while it is empty)."""
        return {"memory": self.memory} if self.memory else None

    def set_state(self, state: Any) -> None:
        """The memory saved with the world, checked as a returned one is (JSON data within
        ``brains.policy_memory_bytes``); ValueError otherwise."""
        memory = state.get("memory") if isinstance(state, dict) else None
        if not isinstance(memory, dict):
            raise ValueError("a policy's saved state is {memory: {...}}")
        limit = self.runner.memory_bytes if self.runner is not None else 1_000_000
        try:
            memory_size(memory, limit)
        except ResultError as exc:
            raise ValueError(f"its saved memory is not one a policy may keep ({exc}; the "
                             "limit is brains.policy_memory_bytes)") from None
        self.memory = memory

    def describe(self) -> list[str]:
        """/debug's lines: the policy, its memory and its last call."""
        meta = self.policy.meta
        limit = self.runner.memory_bytes if self.runner is not None else 0
        size = len(orjson.dumps(self.memory))
        lines = [f"policy {meta.name} v{meta.version} ({self.policy.origin}): memory "
                 f"{size} of {limit} bytes"]
        last = self.last
        if last is not None:
            lines.append(f"last call: {last.line()} in {last.steps} of {last.budget} steps, "
                         f"{last.ms:.1f} ms")
        return lines


def policy_brain(policy: Policy) -> type[PolicyBrain]:
    """A brain class for ``policy`` (register it as ``policy.brain``, ``policy:NAME``)."""
    return type(f"Policy_{policy.name}", (PolicyBrain,), {
        "policy": policy, "__module__": __name__,
        "__doc__": f"The policy {policy.name} v{policy.meta.version}: "
                   f"{policy.meta.description}"})


def policy_brains(policies: Iterable[Policy]) -> dict[str, type[Brain]]:
    """Brain classes by brain name (``policy:NAME``)."""
    return {p.brain: policy_brain(p) for p in policies}
