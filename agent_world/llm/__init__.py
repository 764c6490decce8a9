"""LLM-driven agents: providers, the worker pool, the request queue, the response cache, the
budget and breaker, prompts, observations and memories.

An outer layer: it reads the world on the main thread and changes it only through ``plan``
inputs in the world's inbox. The core never imports it."""

from agent_world.llm.manager import LLMManager, ProviderFactory
from agent_world.llm.providers import build_manager, provider_factory, provider_identity

__all__ = ["LLMManager", "ProviderFactory", "build_manager", "provider_factory",
           "provider_identity"]
