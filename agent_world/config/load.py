"""The whole configuration (``Config``, its sections by name) and the one way it is read:
from a YAML file or a plain dict, validated once, with errors that name the setting; and
``example_yaml``, the source of config.example.yaml."""

from __future__ import annotations

import dataclasses
import difflib
import math
import reprlib
import sys
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agent_world.config.abilities import AbilitiesConfig, AngelConfig, SandboxConfig
from agent_world.config.base import ConfigError
from agent_world.config.brains import BrainsConfig
from agent_world.config.collector import CollectorConfig
from agent_world.config.decisions import MOVED, DecisionsConfig
from agent_world.config.llm import DEFAULT_BASE_URLS, NOT_PER_PROFILE, LLMConfig
from agent_world.config.minds import MindsConfig
from agent_world.config.storage import LogConfig, PathsConfig, PersistenceConfig
from agent_world.config.talk import TalkConfig
from agent_world.config.web import ConsoleConfig, RemoteConfig, WebConfig
from agent_world.config.world import GameConfig, WorldConfig

__all__ = ["RETIRED", "SECTIONS", "Config", "config_from_dict", "embeddings_profile",
           "example_yaml", "llm_profiles", "load_config"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration."""

    world: WorldConfig = field(default_factory=WorldConfig)
    game: GameConfig = field(default_factory=GameConfig)
    decisions: DecisionsConfig = field(default_factory=DecisionsConfig)
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
    talk: TalkConfig = field(default_factory=TalkConfig)
    minds: MindsConfig = field(default_factory=MindsConfig)

    def __post_init__(self) -> None:
        if self.angel.generator == "llm" and not self.llm.enabled:
            raise ConfigError(
                "angel.generator: 'llm' needs an LLM, but llm.provider is 'none'; set "
                "llm.provider (and llm.model), or angel.generator: auto or templates"
            )
        llm_profiles(self.llm)  # every profile checked once, at start-up
        embeddings_profile(self)

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
        """A copy with some settings changed, validated like a file: replace(world={"seed": 3}).
        A setting that moved (``MOVED``) may still be changed by its old name this release: it
        replaces the value under its new one."""
        data = self.to_dict()
        for name, given in sections.items():
            changes = dict(given)
            for key in [k for k in MOVED.get(name, ()) if k in changes]:
                data["decisions"][name] = {**data["decisions"][name], key: changes.pop(key)}
                _say(f"overrides: {name}.{key} is deprecated; use decisions.{name}.{key} (the "
                     "old name works until the next release)")
            data.setdefault(name, {}).update(changes)
        return config_from_dict(data, source="overrides")


SECTIONS: dict[str, type[Any]] = {
    "world": WorldConfig,
    "game": GameConfig,
    "decisions": DecisionsConfig,
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
    "talk": TalkConfig,
    "minds": MindsConfig,
}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


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
    if tp == dict[str, dict[str, Any]]:
        return "a mapping of name to a mapping of settings"
    if tp == dict[str, dict[str, str]]:
        return "a mapping of team or personality to a mapping of name to text"
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
    if tp in (dict[str, dict[str, Any]], dict[str, dict[str, str]]):
        text = tp == dict[str, dict[str, str]]
        if isinstance(value, dict) and all(
                isinstance(k, str) and isinstance(v, dict)
                and all(isinstance(n, str) and (isinstance(x, str) or not text)
                        for n, x in v.items()) for k, v in value.items()):
            return {k: dict(v) for k, v in value.items()}
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


ENDPOINT_KEYS = ("base_url", "base_urls")


def llm_profiles(llm: LLMConfig) -> dict[str, LLMConfig]:
    """Each model profile of ``llm.models`` as a whole ``llm`` section: the default's
    settings with the profile's own over them. A profile names its endpoint (``base_url``
    or ``base_urls``) or keeps the default's when it keeps its provider too; its prices
    add to the default's. ConfigError names ``llm.models.NAME.KEY`` and the fix. With
    ``llm.provider: none`` (no LLM: a replay, a branch without one) the profiles' settings
    are checked and none is returned: every agent uses its built-in brain."""
    fields_by_name = {f.name: f for f in dataclasses.fields(LLMConfig)}
    allowed = [k for k in fields_by_name if k not in NOT_PER_PROFILE]
    hints = typing.get_type_hints(LLMConfig)
    profiles: dict[str, LLMConfig] = {}
    for name, raw in llm.models.items():
        where = f"llm.models.{name}"
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in allowed:
                why = (" (it is the llm section's alone)" if key in NOT_PER_PROFILE else
                       _did_you_mean(str(key), allowed))
                raise ConfigError(f"{where}: unknown setting {key!r}{why}; a profile takes "
                                  f"{', '.join(allowed)}")
            f = fields_by_name[key]
            try:
                values[key] = _coerce(hints[key], value, f.metadata)
            except ValueError:
                raise ConfigError(
                    f"{where}.{key} = {_describe(value)} is invalid; expected "
                    f"{_expected(hints[key], f.metadata)}") from None
        base = {k: getattr(llm, k) for k in allowed}
        own_endpoint = any(k in values for k in ENDPOINT_KEYS)
        if own_endpoint or values.get("provider", llm.provider) != llm.provider:
            base |= {"base_url": "", "base_urls": ()}
        if "prices" in values:
            values["prices"] = {**llm.prices, **values["prices"]}
        merged = base | values
        if not llm.enabled:
            merged["provider"] = "none"
        elif merged["provider"] == "none":
            raise ConfigError(f"{where}.provider: a profile needs a provider (openai, "
                              "anthropic or local); remove the profile instead")
        if (merged["provider"] not in ("local", "none") and not merged["base_url"]
                and not merged["base_urls"]):
            raise ConfigError(
                f"{where}: no endpoint; set {where}.base_url (e.g. "
                f"{DEFAULT_BASE_URLS.get(merged['provider'], 'http://localhost:8000/v1')}) "
                f"or {where}.base_urls")
        try:
            profiles[name] = LLMConfig(**merged)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace("llm.", f"{where}.", 1)) from None
    return profiles if llm.enabled else {}


def embeddings_profile(config: Config) -> LLMConfig | None:
    """The model profile whose ``/embeddings`` endpoint ``minds.embeddings`` names (None:
    recall stays lexical, BM25). ConfigError names the setting and the fix: an unknown
    profile, or one that is not an OpenAI-compatible server. With ``llm.provider: none``
    (a replay, a branch without an LLM) there is none, whatever the setting says."""
    name = config.minds.embeddings
    if not name:
        return None
    if name == "default":
        chosen: LLMConfig | None = config.llm
    else:
        if name not in config.llm.models:
            raise ConfigError(
                f"minds.embeddings: no model profile {name!r} (models: "
                f"{config.llm.known_models()}); define it under llm.models, e.g. {{{name}: "
                "{base_url: 'https://api.openai.com/v1', model: text-embedding-3-small}}, or "
                "set minds.embeddings: ''")
        chosen = llm_profiles(config.llm).get(name)
    if chosen is None or not chosen.enabled:
        return None
    if chosen.provider != "openai":
        raise ConfigError(
            f"minds.embeddings: profile {name!r} uses provider {chosen.provider!r}; the "
            "embeddings endpoint must be an OpenAI-compatible server (provider openai)")
    return chosen


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


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _moved(data: dict[str, Any], source: str, notice: Callable[[str], None]) -> dict[str, Any]:
    """The document with settings that moved to ``decisions`` put there (each said once);
    a setting given both ways is refused rather than one of them silently ignored."""
    if not any(isinstance(data.get(old), dict) and set(data[old]).intersection(keys)
               for old, keys in MOVED.items()):
        return data
    data = dict(data)
    decisions = data.get("decisions")
    decisions = dict(decisions) if isinstance(decisions, dict) else {}
    for old, keys in MOVED.items():
        section = data.get(old)
        if not isinstance(section, dict):
            continue
        section = dict(section)
        for key in [k for k in keys if k in section]:
            own = decisions.get(old)
            own = dict(own) if isinstance(own, dict) else {}
            if key in own:
                raise ConfigError(
                    f"{source}: {old}.{key} and decisions.{old}.{key} are both set; keep "
                    f"decisions.{old}.{key} ({old}.{key} is its old name)")
            own[key] = section.pop(key)
            decisions[old] = own
            notice(f"{source}: {old}.{key} is deprecated; use decisions.{old}.{key} (the old "
                   "name works until the next release)")
        data[old] = section
    data["decisions"] = decisions
    return data


def config_from_dict(data: Any, *, source: str = "config",
                     notice: Callable[[str], None] = _say) -> Config:
    """Validate a parsed YAML/JSON document into a Config (missing keys take defaults).
    ``notice`` is told of each setting given by an old name (one line each)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the top level must be a mapping of sections "
            f"({', '.join(SECTIONS)}), got {_describe(data)}"
        )
    data = _moved(data, source, notice)
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


def load_config(path: str | Path | None = None, *,
                notice: Callable[[str], None] = _say) -> Config:
    """Load ``path``; with no path, ``config.yaml`` in the working folder if it exists, else
    the built-in defaults. ``notice``: as ``config_from_dict``'s."""
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
    return config_from_dict(data, source=str(path), notice=notice)


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

