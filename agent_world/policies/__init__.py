"""Policies: agents' brains written as sandboxed code (docs/policies.md is the contract).

A policy is a source file with literal metadata (``NAME``, ``DESCRIPTION``, ``VERSION``,
``PARENT``), literal ``UPPER_CASE`` constants, helper functions and::

    def decide(obs, memory):
        return {"action": "eat", "args": {}, "memory": memory}

It passes the same layers as abilities (the sandbox's gate under the policy contract,
RestrictedPython, the step budget, worker processes with limits) and is a brain like any
other: ``brain=policy:NAME``. The API a program (a trainer, a generator) uses:

- ``load_policy(source)`` -> ``Policy`` (``PolicyError`` with one line per problem);
  ``read_policy(path)``, ``example_policies()``, ``available_policies(folder)``;
- ``PolicyChecker(config).check(source)`` -> ``PolicyReport``: the verdict, one line per
  problem, and the dry runs with the steps each took of the budget (``max_steps``,
  ``mean_steps``, ``step_budget``); ``sample_observations(config)`` makes the observations
  once, to check many sources on the same ones (``check(source, samples=...)``);
- ``policy_brain(policy)`` -> a ``Brain`` class to register as ``policy.brain``
  (``policy:NAME``); ``load_brains`` registers every available policy so;
- ``PolicyRunner(...).decide(policy, obs, memory, seed=...)`` -> ``PolicyOutcome``: one
  call in the sandbox, outside any world.

The examples in ``examples/`` are data, not modules of the package: nothing imports them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_world.policies.brain import PolicyBrain, policy_brain, policy_brains
    from agent_world.policies.check import (
        DryRun,
        PolicyChecker,
        PolicyReport,
        Sample,
        sample_observations,
    )
    from agent_world.policies.library import (
        available_policies,
        example_policies,
        folder_policies,
        read_policy,
    )
    from agent_world.policies.policy import Policy, PolicyError, PolicyMeta, load_policy
    from agent_world.policies.runner import PolicyOutcome, PolicyRunner

__all__ = ["DryRun", "Policy", "PolicyBrain", "PolicyChecker", "PolicyError", "PolicyMeta",
           "PolicyOutcome", "PolicyReport", "PolicyRunner", "Sample", "available_policies",
           "example_policies", "folder_policies", "load_policy", "policy_brain",
           "policy_brains", "read_policy", "sample_observations"]

_HOMES = {"PolicyBrain": "brain", "policy_brain": "brain", "policy_brains": "brain",
          "DryRun": "check", "PolicyChecker": "check", "PolicyReport": "check",
          "Sample": "check", "sample_observations": "check",
          "available_policies": "library", "example_policies": "library",
          "folder_policies": "library", "read_policy": "library", "Policy": "policy",
          "PolicyError": "policy", "PolicyMeta": "policy", "load_policy": "policy",
          "PolicyOutcome": "runner", "PolicyRunner": "runner"}


def __getattr__(name: str) -> Any:
    # Loaded on first use: the registry imports one module of the package, not all of them.
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'agent_world.policies' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agent_world.policies.{home}"), name)
