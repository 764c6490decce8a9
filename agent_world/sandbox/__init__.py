"""The sandbox: where ability code runs, in layers, failing closed.

1. ``gate``: source size and AST depth (without recursion), then an AST allowlist.
2. ``compiler``: RestrictedPython's transformer with its guards, then
3. the step budget and size guards, injected by rewriting the tree (``runtime`` holds them).
4. ``worker`` processes with memory and CPU limits and no open files; ``pool`` starts,
   kills and replaces them; ``runner`` batches a tick's calls and kills on wall-clock time.
5. ``runtime.export_result`` and ``core.effects`` check what comes back.

``host.Sandbox`` is what the program uses; ``check.AbilityChecker`` dry-runs a source.
An outer layer: it depends on the core, never the reverse.
"""

from agent_world.sandbox.check import AbilityChecker, CheckReport
from agent_world.sandbox.gate import GateError
from agent_world.sandbox.host import Sandbox, load_builtins
from agent_world.sandbox.runner import SandboxRunner

__all__ = ["AbilityChecker", "CheckReport", "GateError", "Sandbox", "SandboxRunner",
           "load_builtins"]
