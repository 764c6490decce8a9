"""The sandbox as the rest of the program sees it: built-in abilities and the world's runner.

``Sandbox(config)`` starts the worker processes the world's calls run in; ``install(world)``
attaches its runner to a world and installs the built-in abilities. Every path that builds a
world to run (a new or resumed world, a replay, a fork, a scratch world for a dry run) calls
``install``, so they all run exactly the same code.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from agent_world.config import Config
from agent_world.core.abilities import AbilitySpec, source_digest
from agent_world.core.world import World
from agent_world.sandbox.compiler import compile_ability
from agent_world.sandbox.gate import GateError
from agent_world.sandbox.runner import SandboxRunner

__all__ = ["Sandbox", "load_builtins"]


def load_builtins() -> list[AbilitySpec]:
    """The built-in abilities (``agent_world/abilities/*.py``), gated and compiled like any
    other source; a built-in that fails is a bug in the program and stops start-up."""
    specs = []
    folder = resources.files("agent_world").joinpath("abilities")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".py"):
            continue
        source = entry.read_text(encoding="utf-8")
        try:
            meta, _code = compile_ability(source)
        except GateError as exc:
            raise RuntimeError(f"built-in ability {entry.name} is refused: {exc}") from None
        specs.append(AbilitySpec(meta=meta, source=source, digest=source_digest(source),
                                 builtin=True, origin="builtin"))
    return specs


class Sandbox:
    """Worker processes for one world, plus the built-in abilities."""

    def __init__(self, config: Config, *, wait: bool = True) -> None:
        """Starts the worker processes; ``wait=False`` lets them come up while the caller
        does other work (opening a save), and ``ready()`` waits for them later."""
        self.config = config
        self.runner = SandboxRunner(config.sandbox, wait=False)
        try:
            self.builtins = load_builtins()
            if wait:
                self.ready()
        except BaseException:
            self.runner.close()
            raise

    def ready(self, timeout: float = 15.0) -> None:
        """Wait until the workers have started (WorkerDied if one cannot)."""
        self.runner.warm(timeout)

    def install(self, world: World) -> None:
        """Attach the runner to ``world`` and make the built-in abilities known to it."""
        world.abilities.runner = self.runner
        for spec in self.builtins:
            world.abilities.install_builtin(spec)

    def stats(self) -> dict[str, Any]:
        return self.runner.stats()

    def close(self) -> None:
        self.runner.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
