"""The brains a recorded decision can be put to again, each in two steps.

``prepare`` runs at the decision's asked tick, on the replayed world as the pipeline saw it
(it may read the world, never change it: the replay checks every logged state hash after);
``answer`` runs afterwards, from what ``prepare`` kept, and gives a ``NewDecision``. Only
the built-in brain needs the world itself; users' brains and the LLM decide from the
observation alone, as they do in a running world.

- ``builtin``: the world's built-in brain of its rules version (``ruleset.decide``) for the
  agent now. It draws on the world's RNG, whose state is put back after: the answer is the
  one the built-in brain would give at that moment, and the world is left as it was.
- a registered brain or a policy (the names ``eval --brains`` takes): one instance per
  agent, made on the agent's first decision re-asked (``on_spawn``), then ``decide`` on the
  observation. Events and results since its last decision (``on_event``, ``on_result``)
  are not replayed to it, nor is ``reflect`` called: a brain that keeps state between
  decisions sees less than it did live. No deadline applies.
- ``llm``: the prompt the LLM agents' answerer makes (``PromptBuilder``: the world's rules
  and abilities at that tick, the agent's personality, the observation's prompt view),
  sent through the configured provider and gates (``ProviderTextModel``: retries, budget,
  breaker, cost), with ``--model`` in place of ``llm.model``. The prompt's memory is left
  empty and it has no "since your last decision" part: those live in the LLM agents'
  memory, which is not world state (a replay does not rebuild it). One call at a time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_world.config import Config
from agent_world.contract.answer import decide_from_text
from agent_world.contract.brains import Brain, take_trace
from agent_world.contract.decision import DecisionError, as_plan
from agent_world.contract.llmbrain import LLMBrain
from agent_world.contract.observation import Observation
from agent_world.contract.schema import action_schemas
from agent_world.core.actions import Action
from agent_world.core.inputs import MAX_PLAN
from agent_world.core.world import World
from agent_world.llm.gates import Gates
from agent_world.llm.prompts import PromptBuilder, WorldFacts
from agent_world.llm.providers import provider_factory
from agent_world.llm.redact import Redactor
from agent_world.llm.textmodel import ProviderTextModel
from agent_world.policies.brain import PolicyBrain
from agent_world.policies.runner import PolicyRunner, decision_timeout_s
from agent_world.recorded.decisions import Key
from agent_world.types import LLMRequest, MonotonicClock, ProviderError

__all__ = ["Asker", "BuiltinAsker", "LLMAsker", "ModelRefused", "NewDecision", "UserAsker"]

REFUSED_STATUS = (400, 404)  # an endpoint's answer to a model it does not serve


class ModelRefused(Exception):
    """The endpoint refuses the model (or the key): no decision can be re-asked with it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewDecision:
    """A brain's answer to a recorded decision. ``valid``: its actions passed the action
    set's checks (else ``error`` says why and ``actions`` is empty); ``extra``: what the
    brain adds (an LLM's ``model``, ``usage``, ``raw`` answer and ``prompt``, a user
    brain's ``trace``, the built-in brain's ``carry_on``); ``latency_s``: the wall time of
    the answer (a measurement, kept out of the decision records)."""

    brain: str
    valid: bool
    actions: tuple[Mapping[str, Any], ...] = ()
    thought: str = ""
    error: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The record's ``new`` part (no latency: the same question gives the same bytes)."""
        return {"brain": self.brain, "valid": self.valid, "actions": list(self.actions),
                "thought": self.thought, **({"error": self.error} if self.error else {}),
                **self.extra}


class Asker(Protocol):
    name: str

    def prepare(self, world: World, key: Key, seen: Observation) -> object:
        """At the asked tick: what ``answer`` needs (the world must not change)."""

    def answer(self, prepared: object) -> NewDecision:
        """The brain's decision from what ``prepare`` kept."""

    def close(self) -> None:
        """Release what the brain holds (processes, connections)."""


def _actions(actions: tuple[Action, ...]) -> tuple[dict[str, Any], ...]:
    return tuple(a.to_dict() for a in actions)


class BuiltinAsker:
    """The world's built-in brain, asked at the very tick (see the module's docstring)."""

    name = "builtin"

    def prepare(self, world: World, key: Key, seen: Observation) -> object:
        began = time.perf_counter()
        row = world.agent_row(key.agent)
        assert row is not None  # observe() accepted the agent
        rng = world.rng.getstate()
        try:
            choice = world.ruleset.decide(world, key.agent, row)
        finally:
            world.rng.setstate(rng)
        latency = time.perf_counter() - began
        if choice is not None:
            return NewDecision(brain=self.name, valid=True, actions=(choice.to_dict(),),
                               latency_s=latency)
        # None: carry on with what it does now (or stand idle if it does nothing).
        current = row.intent.action
        doing = current.to_dict() if current is not None else {"name": "idle", "args": {}}
        return NewDecision(brain=self.name, valid=True, actions=(doing,),
                           extra={"carry_on": True}, latency_s=latency)

    def answer(self, prepared: object) -> NewDecision:
        assert isinstance(prepared, NewDecision)
        return prepared

    def close(self) -> None:
        pass


class UserAsker:
    """A registered brain or a policy: one instance per agent, ``decide`` on the
    observation."""

    def __init__(self, name: str, cls: type[Brain], config: Config) -> None:
        if issubclass(cls, LLMBrain):
            raise ModelRefused(f"brain {name!r} is an LLMBrain, which calls the LLM itself; "
                               "re-asking it is not supported yet: re-ask --brain llm instead")
        self.name = name
        self.cls = cls
        self.brains: dict[int, Brain] = {}
        self.actions = action_schemas()
        self.runner: PolicyRunner | None = None
        if issubclass(cls, PolicyBrain):
            cfg = config.brains
            self.runner = PolicyRunner(
                config.sandbox, steps=cfg.policy_steps, memory_bytes=cfg.policy_memory_bytes,
                timeout_s=decision_timeout_s(config.decisions.of("brains").deadline_ms))

    def prepare(self, world: World, key: Key, seen: Observation) -> object:
        return key.agent, seen

    def answer(self, prepared: object) -> NewDecision:
        assert isinstance(prepared, tuple)
        agent: int = prepared[0]
        seen: Observation = prepared[1]
        began = time.perf_counter()
        brain = self.brains.get(agent)
        try:
            if brain is None:
                brain = self.brains[agent] = self.cls()
                if isinstance(brain, PolicyBrain):
                    assert self.runner is not None
                    self.runner.start()
                    brain.runner = self.runner
                brain.on_spawn(agent)
            actions, reasoning = as_plan(brain.decide(seen, self.actions),
                                         max_actions=MAX_PLAN)
        except DecisionError as exc:
            return self._fault("invalid", str(exc), brain, began)
        except Exception as exc:  # the user's code: anything can go wrong in it
            return self._fault(type(exc).__name__, str(exc)[:200], brain, began)
        trace = take_trace(brain)
        return NewDecision(brain=self.name, valid=True, actions=_actions(actions),
                           thought=reasoning, extra={"trace": trace} if trace else {},
                           latency_s=time.perf_counter() - began)

    def _fault(self, kind: str, error: str, brain: Brain | None,
               began: float) -> NewDecision:
        trace = take_trace(brain) if brain is not None else []
        return NewDecision(brain=self.name, valid=False, error=f"{kind}: {error}",
                           extra={"trace": trace} if trace else {},
                           latency_s=time.perf_counter() - began)

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()


class LLMAsker:
    """The LLM agents' prompt, through the configured provider (see the module's
    docstring). ModelRefused when the endpoint refuses the model or the key."""

    name = "llm"

    def __init__(self, config: Config) -> None:
        cfg = config.llm
        self.cfg = cfg
        redactor = Redactor()
        self.gates = Gates.from_config(cfg, clock=MonotonicClock(), redact=redactor)
        self.model = ProviderTextModel.alone(cfg, provider_factory(cfg, redactor),
                                             gates=self.gates, max_tokens=cfg.max_tokens)
        self.prompts: PromptBuilder | None = None
        self._abilities: tuple[str, ...] | None = None

    def prepare(self, world: World, key: Key, seen: Observation) -> object:
        cfg = self.cfg
        if self.prompts is None:
            self.prompts = PromptBuilder(facts=WorldFacts.of(world),
                                         max_actions=cfg.plan_actions,
                                         temperature=cfg.temperature, max_tokens=cfg.max_tokens,
                                         seed=cfg.seed or None, structured=cfg.structured)
        catalog = [a for a in world.abilities.catalog() if "disabled" not in a]
        names = tuple(a["name"] for a in catalog)
        if names != self._abilities:  # as the answerer keeps its rules in step
            self._abilities = names
            self.prompts.set_abilities(catalog)
        prompt = self.prompts.user(name=seen.me.name, observation=seen.prompt_view(None),
                                   memory={})
        return self.prompts.request(prompt, system=self.prompts.system_for(seen.me.personality))

    def answer(self, prepared: object) -> NewDecision:
        assert isinstance(prepared, LLMRequest)
        began = time.perf_counter()
        shown = {"prompt": prepared.prompt}
        try:
            response = self.model.ask(prepared)
        except ProviderError as exc:
            if exc.kind in ("auth", "credit") or (exc.kind == "bad_request"
                                                  and exc.status in REFUSED_STATUS):
                raise ModelRefused(f"the endpoint {self.cfg.endpoint} refuses model "
                                   f"{self.cfg.model!r} ({exc.kind}: {exc}); give a model it "
                                   "serves with --model, or fix llm.base_url and the key"
                                   ) from None
            return NewDecision(brain=self.name, valid=False, error=f"{exc.kind}: {exc}",
                               extra=shown, latency_s=time.perf_counter() - began)
        extra = {**shown, "model": response.model, "usage": response.usage.to_dict(),
                 "raw": response.text[:2000]}
        try:
            decision = decide_from_text(response.text, max_actions=self.cfg.plan_actions)
        except DecisionError as exc:
            return NewDecision(brain=self.name, valid=False, error=f"schema: {exc}",
                               extra=extra, latency_s=response.latency_s)
        return NewDecision(brain=self.name, valid=True, actions=_actions(decision.actions),
                           thought=decision.thought, extra=extra,
                           latency_s=response.latency_s)

    def system_prompt(self) -> str:
        return self.prompts.system if self.prompts is not None else ""

    def close(self) -> None:
        self.model.close()
