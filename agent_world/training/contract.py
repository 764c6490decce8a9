"""The policy contract as a generator is given it: the contract part of docs/policies.md,
shipped in the package (``agent_world/policies/contract.md``; a test keeps the two equal)."""

from __future__ import annotations

import functools
from importlib import resources

__all__ = ["contract_text"]


@functools.cache
def contract_text() -> str:
    return resources.files("agent_world.policies").joinpath("contract.md").read_text(
        encoding="utf-8")
