"""Building providers, the transport and LLM agents' answerer from the configuration."""

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
from agent_world.llm.retry import RetryPolicy
from agent_world.llm.transport import Transport
from agent_world.types import Clock, LLMProvider, MonotonicClock

__all__ = ["build_agents", "build_transport", "provider_factory", "provider_identity"]


def provider_identity(cfg: LLMConfig) -> dict[str, Any]:
    """What the response cache keys on besides the request (never a key or header)."""
    model = cfg.model
    if cfg.provider == "local":
        try:
            model = find_model_file(cfg.model).name
        except Exception:
            model = cfg.model
    return {"provider": cfg.provider, "base_url": ",".join(cfg.endpoints)
            if cfg.provider != "local" else "", "model": model, "structured": cfg.structured}


class LocalFactory:
    """Loads the local model once, when the transport first needs it (on a helper thread,
    never the main thread or the transport's loop), and gives a provider feeding that
    model's one thread."""

    def __init__(self, cfg: LLMConfig) -> None:
        self.cfg = cfg
        self._lock = threading.Lock()
        self._model: LocalModel | None = None

    def __call__(self, _base_url: str = "") -> LLMProvider:
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
    """A function that makes the provider of one endpoint, given its base URL (the
    transport calls it once per endpoint). Each HTTP provider's connection pool holds
    ``llm.max_concurrent`` connections. The local model is loaded once, and runs on its own
    thread."""
    key = cfg.api_key()
    if key:
        redactor.add(key)
    http: dict[str, Any] = {
        "model": cfg.model, "api_key": key, "max_connections": cfg.max_concurrent,
        "connect_timeout_s": cfg.connect_timeout_s, "read_timeout_s": cfg.read_timeout_s,
        "max_response_bytes": cfg.max_response_bytes, "structured": cfg.structured,
        "redactor": redactor,
    }
    if cfg.provider == "openai":
        return lambda base_url: OpenAIProvider(base_url=base_url, app_url=cfg.app_url,
                                               app_title=cfg.app_title, **http)
    if cfg.provider == "anthropic":
        return lambda base_url: AnthropicProvider(base_url=base_url, **http)
    if cfg.provider == "local":
        return LocalFactory(cfg)
    raise ValueError(f"llm.provider {cfg.provider!r} makes no provider")


def build_transport(cfg: LLMConfig, gates: Gates, *, factory: ProviderFactory | None = None,
                    redactor: Redactor | None = None, clock: Clock | None = None,
                    name: str = "llm-loop") -> Transport:
    """The configured model's transport: its endpoints (``llm.base_urls`` or the one
    ``base_url``), ``llm.max_concurrent``, the retry policy and ``gates``. ``factory``
    replaces the configured providers (tests); the thread starts on the first call."""
    if factory is None:
        factory = provider_factory(cfg, redactor if redactor is not None else gates.redact)
    endpoints = cfg.endpoints if cfg.provider != "local" else ("local",)
    return Transport(endpoints=endpoints, factory=factory, gates=gates,
                     max_concurrent=cfg.max_concurrent,
                     policy=RetryPolicy(max_retries=cfg.max_retries,
                                        retry_after_cap_s=cfg.retry_after_cap_s),
                     clock=clock or MonotonicClock(), breaker_failures=cfg.breaker_failures,
                     breaker_cooldown_s=cfg.breaker_cooldown_s, name=name)


def build_agents(cfg: LLMConfig, world: World, *, settings: KindPace,
                 clock: Clock | None = None,
                 report: Callable[[str], None] = print,
                 factory: ProviderFactory | None = None,
                 redactor: Redactor | None = None,
                 prompt_log: Path | None = None, gates: Gates | None = None,
                 transport: Transport | None = None, profile: str = "") -> LLMAgents:
    """LLM agents' answerer for a configured provider (``factory`` replaces the configured one).
    ``redactor`` is shared with the rest of the session; the key is added to it.
    ``prompt_log``: where every prompt and answer is written (``llm.log_prompts``).
    ``gates`` and ``transport``: the session's, when others (the angel, users' brains) call
    the same LLM; made here when not given (and the transport then closed with the kind).
    ``profile``: the model profile ``cfg`` is (``llm.models``; '' the default)."""
    redactor = redactor if redactor is not None else Redactor()
    key = cfg.api_key()
    if key:
        redactor.add(key)
    owned = transport is None
    if transport is None:
        if gates is None:
            gates = Gates.from_config(cfg, clock=clock or MonotonicClock(), redact=redactor)
        transport = build_transport(cfg, gates, factory=factory, redactor=redactor,
                                    clock=clock,
                                    name=f"llm-loop-{profile}" if profile else "llm-loop")
    return LLMAgents(cfg, world, settings=settings, transport=transport,
                     identity=provider_identity(cfg),
                     redactor=redactor, clock=clock, report=report,
                     prompt_log=prompt_log, owns_transport=owned, profile=profile)
