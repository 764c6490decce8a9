"""Registered brains: ``brains: {forager: "my_agents.forager:Forager"}`` imported at start-up,
and policies (``policy:NAME``, docs/policies.md): the built-in examples and the files of
``brains.policies``.

Importing runs the user's module, once, before the world opens; a brain that cannot be
imported (no such module, no such class, not a ``Brain``, an exception at import) stops
start-up with one line naming it, and so does a policy file that is not a usable policy.
Policies' code is not imported: it is checked here and runs in the sandbox's workers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Collection, Mapping
from pathlib import Path

from agent_world.config import BrainsConfig, ConfigError, llm_profile_of, unknown_model
from agent_world.contract.brains import Brain
from agent_world.contract.llmbrain import LLMBrain
from agent_world.core.world import World
from agent_world.policies.brain import policy_brains
from agent_world.policies.library import available_policies
from agent_world.policies.policy import PolicyError

__all__ = ["BrainError", "brain_refusal", "load_brains", "unknown_model", "unregistered"]


class BrainError(ConfigError):
    """A registered brain that cannot be used; the message names it and why."""


def load_brains(cfg: BrainsConfig, *, path: str | Path | None = None,
                llm: bool = True, models: Collection[str] = ()) -> Mapping[str, type[Brain]]:
    """The registered brain classes by name, and every available policy's as
    ``policy:NAME``. ``path`` (``--brains-path``) and ``brains.path`` are put first on the
    import path; ``llm`` says whether the world has an LLM (an ``LLMBrain`` needs one);
    ``models``: its model profiles' names (``llm.models``), which an ``LLMBrain`` may name."""
    for folder in (cfg.path, path):
        if folder:
            where = Path(folder).resolve()
            if not where.is_dir():
                raise BrainError(f"brains path {folder} is not a folder; give the folder "
                                 "that holds your brain modules")
            if str(where) not in sys.path:
                sys.path.insert(0, str(where))
    loaded: dict[str, type[Brain]] = {}
    for name, target in cfg.registered.items():
        module_name, _, class_name = target.partition(":")
        label = f"brains.{name} = {target!r}"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # the user's module: anything can go wrong in it
            raise BrainError(f"{label}: cannot import {module_name} ({type(exc).__name__}: "
                             f"{exc}); check the module name and --brains-path") from None
        cls = getattr(module, class_name, None)
        if cls is None:
            raise BrainError(f"{label}: {module_name} has no {class_name}")
        if not (isinstance(cls, type) and issubclass(cls, Brain)):
            raise BrainError(f"{label}: {class_name} is not a Brain or SimpleBrain subclass "
                             "(from agent_world.agents import Brain)")
        if issubclass(cls, LLMBrain) and name in cfg.processes:
            raise BrainError(f"{label}: {class_name} is an LLMBrain, which waits on the "
                             "network, not the CPU: leave it out of brains.processes")
        if issubclass(cls, LLMBrain) and not llm:
            raise BrainError(f"{label}: {class_name} is an LLMBrain, which needs an LLM, and "
                             "llm.provider is none; configure one (llm.provider, llm.model) "
                             "or register another brain")
        model = getattr(cls, "model", "") if issubclass(cls, LLMBrain) else ""
        if model and model not in models:
            raise BrainError(f"{label}: {class_name}.model is {model!r}, not a model profile "
                             f"(models: {', '.join(['default', *models])}); define it "
                             "under llm.models or leave model '' for the default")
        loaded[name] = cls
    try:
        policies = policy_brains(available_policies(cfg.policies).values())
    except PolicyError as exc:
        raise BrainError(f"brains.policies: {exc.problems[0]}"
                         + (f" (and {len(exc.problems) - 1} more problems)"
                            if len(exc.problems) > 1 else "")
                         + "; python main.py policy check FILE says what is wrong") from None
    unknown = sorted(name for name in cfg.mix if name.startswith("policy:")
                     and name not in policies)
    if unknown:
        raise BrainError(f"brains.mix: no policy named {unknown[0].removeprefix('policy:')!r} "
                         f"(policies: {', '.join(sorted(policies)) or 'none'}); its file goes "
                         f"in brains.policies ({cfg.policies or 'none set'})")
    loaded.update(policies)
    return loaded


def brain_refusal(brain: str, registered: Mapping[str, object], *, llm: bool,
                  models: Collection[str] = ()) -> str | None:
    """Why an episode's agents cannot play ``brain`` (None: they can): ``llm`` or
    ``llm:NAME`` with no LLM configured or no such model profile (``models``: the names of
    ``llm.models``), or a name that is neither built in nor in ``registered``
    (``load_brains``)."""
    profile = llm_profile_of(brain)
    if profile is not None and not llm:
        return (f"{brain} needs an LLM; set llm.provider in the configuration (--config "
                "FILE)")
    if profile:
        return None if profile in models else unknown_model(profile, models)
    if profile is None and brain != "builtin" and brain not in registered:
        known = ", ".join(["builtin", "llm", *(f"llm:{m}" for m in models), *registered])
        return (f"unknown brain {brain!r} (known: {known}); register yours in the "
                "configuration: brains: {NAME: \"module:Class\"}")
    return None


def unregistered(world: World, registered: Mapping[str, object],
                 models: Collection[str] = ()) -> dict[str, int]:
    """Agents whose brain is neither built in nor registered now (a world resumed without
    its brains, or without the model profile ``llm:NAME`` names: ``models``), counted by
    brain: they think with their built-in brains."""
    counts: dict[str, int] = {}
    for _eid, row in world.agents():
        brain = row.agent.brain
        profile = llm_profile_of(brain)
        if (profile not in ("", *models) if profile is not None
                else brain not in ("builtin", "remote") and brain not in registered):
            counts[brain] = counts.get(brain, 0) + 1
    return dict(sorted(counts.items()))
