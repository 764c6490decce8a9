"""The API for bringing your own agent: what a brain reads and what it answers.

    from agent_world.agents import Decision, Observation

    def decide(obs: Observation) -> Decision:
        if obs.me.hunger > 60 and "apple" in obs.me.items:
            return Decision("eat", {"item": "apple"}, reasoning="hungry")
        return Decision("wander")

``Observation`` is frozen, typed, plain data: the agent itself (``obs.me``: position, needs,
goods, cooldowns, abilities), what it sees (agents, items, objects, nearest first, with
distances), what it heard, the offers made to it, prices, its recent memory and a ``custom``
mapping a scenario fills. The LLM's prompt is rendered from the same object. ``Decision`` is
an action, its arguments and optionally why; a brain may answer a short plan of several.
``python main.py schema`` prints JSON Schema for all of it (docs/agents.md).

A brain of your own subclasses ``SimpleBrain`` (name an action), ``Brain`` (answer
decisions, with hooks) or ``LLMBrain`` (ask the configured LLM, with a ``Memory`` of its
own, a ``reflect()`` on a schedule and a reasoning trace) and is registered in the
configuration: ``brains: {forager: "my_agents.forager:Forager"}``; ``/spawn agent Zed
brain=forager`` gives an agent to it.
It runs on worker threads, off the tick, within ``decisions.brains.deadline_ms``.
"""

from agent_world.contract.brains import Brain, SimpleBrain, sensible_args
from agent_world.contract.decision import Decision, DecisionError, as_plan
from agent_world.contract.llmbrain import LLMBrain
from agent_world.contract.memory import (
    EmbeddingMemory,
    Memory,
    MemoryEntry,
    NoEmbeddings,
    RetrievalMemory,
    SummaryMemory,
    WindowMemory,
    within_tokens,
)
from agent_world.contract.observation import (
    AttackedBy,
    Heard,
    Observation,
    Offer,
    Seen,
    SeenAgent,
    Self,
    observe,
)
from agent_world.contract.schema import (
    ability_schema,
    action_schemas,
    decision_schema,
    every_schema,
    observation_schema,
)

__all__ = ["AttackedBy", "Brain", "Decision", "DecisionError", "EmbeddingMemory", "Heard",
           "LLMBrain", "Memory", "MemoryEntry", "NoEmbeddings", "Observation", "Offer",
           "RetrievalMemory", "Seen", "SeenAgent", "Self", "SimpleBrain", "SummaryMemory",
           "WindowMemory", "ability_schema", "action_schemas", "as_plan", "decision_schema",
           "every_schema", "observation_schema", "observe", "sensible_args", "within_tokens"]
