"""LLM-driven agents: providers, their answerer on the decision pipeline, the response
cache, the budget and breaker, prompts, observations and memories.

An outer layer: it reads the world on the main thread and changes it only through ``plan``
inputs in the world's inbox. The core never imports it."""

from agent_world.llm.answerer import LLMAgents, ProviderFactory
from agent_world.llm.providers import build_agents, provider_factory, provider_identity

__all__ = ["LLMAgents", "ProviderFactory", "build_agents", "provider_factory",
           "provider_identity"]
