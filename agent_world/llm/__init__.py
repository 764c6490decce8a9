"""LLM-driven agents: providers, the transport that carries every call of a model (its
endpoints, concurrency and retries on one event-loop thread), their answerer on the decision
pipeline, the response cache, the budget and breakers, prompts, observations and memories.

An outer layer: it reads the world on the main thread and changes it only through ``plan``
inputs in the world's inbox. The core never imports it."""

from agent_world.llm.answerer import LLMAgents, ProviderFactory
from agent_world.llm.providers import (
    build_agents,
    build_transport,
    provider_factory,
    provider_identity,
)
from agent_world.llm.transport import Transport

__all__ = ["LLMAgents", "ProviderFactory", "Transport", "build_agents", "build_transport",
           "provider_factory", "provider_identity"]
