"""The sandbox: where ability code (and policies, agents' brains as code: docs/policies.md)
runs, in layers, failing closed.

1. ``gate``: source size and AST depth (without recursion), then an AST allowlist.
2. ``compiler``: RestrictedPython's transformer with its guards, then
3. the step budget and size guards, injected by rewriting the tree (``runtime`` holds them).
4. ``worker`` processes with memory and CPU limits and no open files; ``pool`` starts,
   kills and replaces them; ``runner`` batches a tick's calls, postpones past the tick's
   steps and kills past the wall-clock backstop.
5. ``runtime.export_result`` and ``core.effects`` check what comes back.

``host.Sandbox`` is what the program uses; ``check.AbilityChecker`` dry-runs a source.
Policies pass the same layers under their own ``gate.Contract`` and run through
``SandboxRunner.decide`` (``agent_world.policies``).
An outer layer: it depends on the core, never the reverse.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_world.sandbox.check import AbilityChecker, CheckReport
    from agent_world.sandbox.gate import GateError
    from agent_world.sandbox.host import Sandbox, load_builtins
    from agent_world.sandbox.runner import SandboxRunner

__all__ = ["AbilityChecker", "CheckReport", "GateError", "Sandbox", "SandboxRunner",
           "load_builtins"]

_HOMES = {"AbilityChecker": "check", "CheckReport": "check", "GateError": "gate",
          "Sandbox": "host", "load_builtins": "host", "SandboxRunner": "runner"}


def __getattr__(name: str) -> Any:
    # Loaded on first use: a worker process imports this package too, and must start fast
    # without the host-side modules (and the core) they pull in.
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'agent_world.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(f"agent_world.sandbox.{home}"), name)
