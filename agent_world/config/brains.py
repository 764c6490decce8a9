"""The ``brains`` section: users' brains and policies, registered by name."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from agent_world.config.base import ConfigError, setting

__all__ = ["BRAIN_CLASS", "BRAIN_NAME", "LLM_BRAIN", "PROFILE_NAME", "BrainsConfig",
           "llm_brain", "llm_profile_of", "model_for_brain", "unknown_model"]

# policy:NAME: docs/policies.md; llm:NAME: the LLM's model profile NAME (llm.models)
BRAIN_NAME = re.compile(r"(policy:)?[a-z][a-z0-9_]{1,31}|llm:[a-z][a-z0-9_]{0,31}")
PROFILE_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
LLM_BRAIN = "llm"


def llm_profile_of(brain: str) -> str | None:
    """The model profile an agent with ``brain`` thinks with: ``""`` for ``llm`` (the
    default profile, the ``llm`` section itself), ``NAME`` for ``llm:NAME``, None when
    ``brain`` is not an LLM brain. The one place a brain name is read as a model."""
    if brain == LLM_BRAIN:
        return ""
    if brain.startswith("llm:"):
        name = brain[4:]
        return name if PROFILE_NAME.fullmatch(name) else None
    return None


def unknown_model(profile: str, models: Collection[str]) -> str:
    """The one line for a model profile that is not configured, naming the known ones."""
    return (f"unknown model {profile!r} (models: {', '.join(['default', *models])}); "
            "define it under llm.models in the configuration")


def model_for_brain(model_for: Mapping[str, Mapping[str, str]], personality: str,
                    team: str | None) -> str:
    """The brain an agent spawned with plain ``llm`` gets under ``model_for``
    (``llm.model_for``): its team's profile, else its personality's, else ``llm``."""
    chosen = (model_for.get("team", {}).get(team or "")
              or model_for.get("personality", {}).get(personality) or "")
    return llm_brain(chosen)


def llm_brain(profile: str) -> str:
    """The brain name of model profile ``profile`` ('' the default): ``llm`` or ``llm:NAME``."""
    return f"llm:{profile}" if profile else LLM_BRAIN
BRAIN_CLASS = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrainsConfig:
    """Your own brains (docs/agents.md): registered by name, they run off the tick on worker
    threads, each decision within a deadline, falling back to the built-in brain. A name
    may also be given directly in this section: brains: {forager: "my_agents.forager:Forager"}."""

    registered: dict[str, str] = setting(
        {}, "brains by name: NAME: \"module:Class\" (a SimpleBrain or Brain subclass), used "
        "with /spawn agent NAME brain=NAME",
    )
    path: str = setting(
        "", "a folder to import brain modules from (as --brains-path DIR); '' for none",
    )
    mix: dict[str, float] = setting(
        {}, "share of a new world's starting agents given to each registered brain, e.g. "
        "{forager: 0.5} (the rest are built-in, or LLM agents per llm.agents)", low=0, high=1,
    )
    processes: dict[str, int] = setting(
        {}, "brains that run in worker processes instead of threads, with how many processes "
        "each, e.g. {planner: 2}: for CPU-heavy brains (they leave the world's core free, and "
        "one that overruns its deadline is stopped and its process restarted)", low=1,
        high=64,
    )
    policies: str = setting(
        "policies", "a folder of your policy files (brains written as sandboxed code, "
        "docs/policies.md), used as brain=policy:NAME beside the built-in examples; a "
        "folder that does not exist holds none",
    )
    policy_steps: int = setting(
        20_000, "steps one policy decision may take (loop turns, function calls, items "
        "iterated); past it the decision fails and the agent uses its built-in brain",
        low=100, high=10_000_000,
    )
    policy_memory_bytes: int = setting(
        4096, "size of the memory a policy keeps per agent, in bytes of JSON; a decision "
        "returning more fails", low=64, high=1_000_000,
    )

    def __post_init__(self) -> None:
        for name, target in self.registered.items():
            if (not BRAIN_NAME.fullmatch(name) or ":" in name
                    or name in ("builtin", "llm", "remote")):
                raise ConfigError(
                    f"brains.{name}: a brain's name is 2-32 of a-z, 0-9 and _, starting with "
                    "a letter, and not builtin, llm or remote")
            if not BRAIN_CLASS.fullmatch(target):
                raise ConfigError(
                    f"brains.{name} = {target!r}: expected \"module:Class\", e.g. "
                    "\"my_agents.forager:Forager\"")
        # A policy (policy:NAME) may be mixed in; whether it exists is known only once the
        # policies are loaded (agents.registry). Policies run in sandbox processes already.
        mixed = {name for name in self.mix if name.startswith("policy:")
                 and BRAIN_NAME.fullmatch(name)}
        for part in ("mix", "processes"):
            unknown = sorted(set(getattr(self, part)) - set(self.registered)
                             - (mixed if part == "mix" else set()))
            if unknown:
                if unknown[0].startswith("policy:") and part == "processes":
                    raise ConfigError(f"brains.processes: {unknown[0]!r} is a policy, which "
                                      "runs in the sandbox's worker processes already; "
                                      "leave it out")
                raise ConfigError(f"brains.{part}: {unknown[0]!r} is not a registered brain; "
                                  "register it first: brains: {NAME: \"module:Class\"}")
        if sum(self.mix.values()) > 1 + 1e-9:
            raise ConfigError(f"brains.mix: the shares add up to {sum(self.mix.values()):g}; "
                              "they may add up to 1 at most (the rest are built-in)")


