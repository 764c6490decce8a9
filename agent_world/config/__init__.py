"""Configuration: one schema, validated once at start-up.

Every setting is a field of a frozen section dataclass whose metadata carries its meaning and
its allowed range. The same schema validates user files, renders ``config.example.yaml`` and
round-trips through plain dicts (for ``meta.json``), so the three can never drift apart.

One module per group of sections (``world``, ``llm``, ``web``, ``brains``, ``storage``,
``abilities``, ``collector``, ``talk``, ``minds``), what they are made of (``base``) and how
they are read (``load``); this package's face is what the rest of the program imports.
``python -m agent_world.config`` prints config.example.yaml.
"""

from agent_world.config.abilities import AbilitiesConfig, AngelConfig, SandboxConfig
from agent_world.config.base import ConfigError, setting
from agent_world.config.brains import (
    BRAIN_CLASS,
    BRAIN_NAME,
    BrainsConfig,
    llm_brain,
    llm_profile_of,
    model_for_brain,
    unknown_model,
)
from agent_world.config.collector import CollectorConfig
from agent_world.config.decisions import DecisionsConfig, KindPace
from agent_world.config.llm import DEFAULT_BASE_URLS, LLMConfig
from agent_world.config.load import (
    RETIRED,
    SECTIONS,
    Config,
    config_from_dict,
    embeddings_profile,
    example_yaml,
    llm_profiles,
    load_config,
)
from agent_world.config.minds import MindsConfig
from agent_world.config.storage import MIN_RUNS_BYTES, LogConfig, PathsConfig, PersistenceConfig
from agent_world.config.talk import TalkConfig
from agent_world.config.web import ConsoleConfig, RemoteConfig, WebConfig
from agent_world.config.world import PERSONALITIES, RECIPE, GameConfig, WorldConfig

__all__ = [
    "BRAIN_CLASS",
    "BRAIN_NAME",
    "DEFAULT_BASE_URLS",
    "MIN_RUNS_BYTES",
    "PERSONALITIES",
    "RECIPE",
    "RETIRED",
    "SECTIONS",
    "AbilitiesConfig",
    "AngelConfig",
    "BrainsConfig",
    "CollectorConfig",
    "Config",
    "ConfigError",
    "ConsoleConfig",
    "DecisionsConfig",
    "GameConfig",
    "KindPace",
    "LLMConfig",
    "LogConfig",
    "MindsConfig",
    "PathsConfig",
    "PersistenceConfig",
    "RemoteConfig",
    "SandboxConfig",
    "TalkConfig",
    "WebConfig",
    "WorldConfig",
    "config_from_dict",
    "embeddings_profile",
    "example_yaml",
    "llm_brain",
    "llm_profile_of",
    "llm_profiles",
    "load_config",
    "model_for_brain",
    "setting",
    "unknown_model",
]
