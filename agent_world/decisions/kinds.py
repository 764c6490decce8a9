"""The kinds of brain that decide off the tick, registered once.

A kind is an answerer (``answerer.py``) and a line in ``KINDS``: the session starts, in
this order, each kind the world uses, gives it a ``Pipeline`` and runs that after every
tick; /stats, /debug, the status line and the web server find it as ``session.<name>``.
The pipeline, the session and the console know no kind by name. A kind that starts later
(remote agents start when the web server serves ``/agents``) is attached the same way,
``Session.attach_kind``, by what starts it.

This is the one module of ``decisions/`` that imports the kinds: nothing imports it but
the session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent_world.config import Config
from agent_world.contract.brains import Brain
from agent_world.core.world import World
from agent_world.decisions.answerer import Answerer
from agent_world.llm.answerer import LLMAgents
from agent_world.llm.embeddings import Embedder
from agent_world.llm.gates import Gates
from agent_world.llm.providers import build_agents
from agent_world.llm.redact import Redactor
from agent_world.llm.transport import Transport
from agent_world.types import Clock
from agent_world.userbrains.answerer import UserBrains

__all__ = ["KINDS", "Kind", "KindContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class KindContext:
    """What a kind is made from: the session's world and parts, and the test seams."""

    config: Config
    world: World
    report: Callable[[str], None]
    redactor: Redactor
    llm_gates: Gates | None = None
    llm_transport: Transport | None = None  # the session's, shared with the angel
    llm_clock: Clock | None = None
    prompt_log: Path | None = None
    brains: Mapping[str, type[Brain]] | None = None  # registered brains, loaded
    llm_models: Mapping[str, LLMAgents] | None = None  # the other model profiles' agents
    embedder: Embedder | None = None  # minds.embeddings: memory by meaning for brains


Make = Callable[[KindContext, Mapping[str, Answerer]], Answerer | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Kind:
    """``name``: the session attribute the kind is found as; ``make``: its answerer for
    this world (None: the world does not use it), given the kinds started before it."""

    name: str
    make: Make


def _llm(ctx: KindContext, _started: Mapping[str, Answerer]) -> LLMAgents | None:
    """LLM agents, when a provider is configured (without one they use built-in brains)."""
    if not ctx.config.llm.enabled:
        return None
    return build_agents(ctx.config.llm, ctx.world, settings=ctx.config.decisions.of("llm"),
                        clock=ctx.llm_clock, report=ctx.report,
                        redactor=ctx.redactor, gates=ctx.llm_gates,
                        transport=ctx.llm_transport, prompt_log=ctx.prompt_log)


def _brains(ctx: KindContext, started: Mapping[str, Answerer]) -> UserBrains | None:
    """Users' brains and policies, when any is registered; they call the LLM's kind."""
    if not ctx.brains:
        return None
    started_llm = started.get("llm")
    llm = started_llm.for_brains() if isinstance(started_llm, LLMAgents) else None
    models = {name: model.for_brains() for name, model in (ctx.llm_models or {}).items()}
    for brain_llm in (llm, *models.values()):
        if brain_llm is not None:
            brain_llm.embedder = ctx.embedder
    return UserBrains(ctx.config.brains, ctx.world, ctx.brains,
                      settings=ctx.config.decisions.of("brains"),
                      capture_wait_s=ctx.config.minds.capture_wait_s,
                      llm=llm, llm_models=models)


KINDS: tuple[Kind, ...] = (
    Kind(name="llm", make=_llm),
    Kind(name="brains", make=_brains),
)
"""The kinds a session starts itself, in order (a kind may use one before it)."""
