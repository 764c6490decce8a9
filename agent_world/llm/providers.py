"""Building providers, and LLM agents' answerer, from the configuration."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.config import KindPace, LLMConfig
from agent_world.core.world import World
from agent_world.llm.answerer import LLMAgents, ProviderFactory
from agent_world.llm.anthropic_api import AnthropicProvider
from agent_world.llm.gates import Gates
from agent_world.llm.local import LocalModel, LocalProvider, find_model_file
from agent_world.llm.openai_api import OpenAIProvider
from agent_world.llm.redact import Redactor
from agent_world.types import Clock, LLMProvider

__all__ = ["build_agents", "provider_factory", "provider_identity"]


def provider_identity(cfg: LLMConfig) -> dict[str, Any]:
    """What the response cache keys on besides the request (never a key or header)."""
    model = cfg.model
    if cfg.provider == "local":
        try:
            model = find_model_file(cfg.model).name
        except Exception:
            model = cfg.model
    return {"provider": cfg.provider, "base_url": cfg.endpoint if cfg.provider != "local"
            else "", "model": model, "structured": cfg.structured}


class LocalFactory:
    """Loads the local model once, in the first worker that needs it (not on the main
    thread), and gives every worker a provider feeding that model's one thread."""

    def __init__(self, cfg: LLMConfig) -> None:
        self.cfg = cfg
        self._lock = threading.Lock()
        self._model: LocalModel | None = None

    def __call__(self) -> LLMProvider:
        cfg = self.cfg
        with self._lock:
            if self._model is None:
                self._model = LocalModel(cfg.model, threads=cfg.local_threads,
                                         context=cfg.local_context, seed=cfg.seed)
            return LocalProvider(self._model, structured=cfg.structured)

    def close(self) -> None:
        with self._lock:
            if self._model is not None:
                self._model.close()
                self._model = None


def provider_factory(cfg: LLMConfig, redactor: Redactor) -> ProviderFactory:
    """A function that makes one provider per worker thread. The local model is loaded once,
    by the first worker that needs it, and shared (it runs on its own thread)."""
    key = cfg.api_key()
    if key:
        redactor.add(key)
    http: dict[str, Any] = {
        "base_url": cfg.endpoint, "model": cfg.model, "api_key": key,
        "connect_timeout_s": cfg.connect_timeout_s, "read_timeout_s": cfg.read_timeout_s,
        "max_response_bytes": cfg.max_response_bytes, "structured": cfg.structured,
        "redactor": redactor,
    }
    if cfg.provider == "openai":
        return lambda: OpenAIProvider(app_url=cfg.app_url, app_title=cfg.app_title, **http)
    if cfg.provider == "anthropic":
        return lambda: AnthropicProvider(**http)
    if cfg.provider == "local":
        return LocalFactory(cfg)
    raise ValueError(f"llm.provider {cfg.provider!r} makes no provider")


def build_agents(cfg: LLMConfig, world: World, *, settings: KindPace,
                 clock: Clock | None = None,
                 memories: Path | None = None, report: Callable[[str], None] = print,
                 factory: ProviderFactory | None = None,
                 redactor: Redactor | None = None,
                 prompt_log: Path | None = None, gates: Gates | None = None) -> LLMAgents:
    """LLM agents' answerer for a configured provider (``factory`` replaces the configured one).
    ``redactor`` is shared with the rest of the session; the key is added to it.
    ``prompt_log``: where every prompt and answer is written (``llm.log_prompts``).
    ``gates``: the session's, when others (the angel) call the same LLM."""
    redactor = redactor if redactor is not None else Redactor()
    made = factory or provider_factory(cfg, redactor)
    if factory is not None:
        key = cfg.api_key()
        if key:
            redactor.add(key)
    return LLMAgents(cfg, world, settings=settings, provider_factory=made,
                     identity=provider_identity(cfg),
                     redactor=redactor, clock=clock, memories=memories, report=report,
                     prompt_log=prompt_log, gates=gates)
