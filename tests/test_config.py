"""Configuration: defaults, files, validation messages, secrets and the example file."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_world.config import (
    SECTIONS,
    Config,
    ConfigError,
    LLMConfig,
    config_from_dict,
    example_yaml,
    load_config,
)

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config.example.yaml"


def write_yaml(tmp_path: Path, data: Any, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def write_text(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config_error(fn: Any, *args: Any, **kwargs: Any) -> str:
    """Call ``fn``; it must raise exactly one ConfigError with a one-line, unchained message."""
    with pytest.raises(ConfigError) as info:
        fn(*args, **kwargs)
    exc = info.value
    message = str(exc)
    assert "\n" not in message, f"message spans lines: {message!r}"
    assert exc.__cause__ is None
    return message


# -- defaults and files ------------------------------------------------------------------------


def test_defaults_load_when_there_is_no_file(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load_config()
    assert cfg == Config()
    assert cfg.world.size == (64, 64)
    assert cfg.world.tick_rate == 10.0
    assert cfg.world.seed == 42
    assert cfg.llm.provider == "none"
    assert not cfg.llm.enabled
    assert cfg.paths.logs == "logs"


def test_config_yaml_in_the_working_folder_is_picked_up(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_yaml(tmp_path, {"world": {"seed": 7}})
    assert load_config().world.seed == 7


def test_a_file_overrides_only_what_it_names(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, {
        "world": {"seed": 7, "tick_rate": 20, "size": [80, 48]},
        "game": {"vision_radius": 5},
        "log": {"echo": False},
    })
    cfg = load_config(path)
    assert cfg.world.seed == 7
    assert cfg.world.tick_rate == 20.0
    assert isinstance(cfg.world.tick_rate, float)
    assert cfg.world.size == (80, 48)
    assert (cfg.world.width, cfg.world.height) == (80, 48)
    assert cfg.game.vision_radius == 5
    assert cfg.log.echo is False
    # everything else keeps its default
    assert cfg.world.starting_agents == Config().world.starting_agents
    assert cfg.game.max_health == Config().game.max_health
    assert cfg.llm == Config().llm
    assert cfg == Config().replace(world={"seed": 7, "tick_rate": 20.0, "size": [80, 48]},
                                   game={"vision_radius": 5}, log={"echo": False})


@pytest.mark.parametrize("text", ["", "# only a comment\n", "world:\n", "world: {}\n"])
def test_empty_file_or_empty_section_gives_defaults(tmp_path: Path, text: str) -> None:
    assert load_config(write_text(tmp_path, text)) == Config()


def test_to_dict_round_trips_through_json() -> None:
    cfg = Config().replace(world={"size": [80, 48], "seed": 9},
                           llm={"provider": "openai", "model": "m"})
    plain = json.loads(json.dumps(cfg.to_dict()))
    assert config_from_dict(plain) == cfg


def test_config_is_frozen() -> None:
    cfg = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.world.seed = 3  # type: ignore[misc]


# -- unknown names ----------------------------------------------------------------------------


def test_unknown_section_is_named_with_a_suggestion(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, {"wrold": {"seed": 1}})
    message = config_error(load_config, path)
    assert str(path) in message
    assert "unknown section 'wrold'" in message
    assert "did you mean 'world'?" in message
    assert f"valid sections: {', '.join(SECTIONS)})" in message


def test_unknown_section_without_a_near_miss_lists_the_valid_ones(tmp_path: Path) -> None:
    message = config_error(load_config, write_yaml(tmp_path, {"banana": {}}))
    assert "'banana'" in message
    assert "did you mean" not in message
    assert f"valid sections: {', '.join(SECTIONS)})" in message


def test_near_miss_key_gets_did_you_mean(tmp_path: Path) -> None:
    message = config_error(load_config, write_yaml(tmp_path, {"world": {"tick_rat": 5}}))
    assert "unknown setting world.tick_rat" in message
    assert "did you mean 'tick_rate'?" in message


def test_unknown_key_lists_the_valid_settings(tmp_path: Path) -> None:
    message = config_error(load_config, write_yaml(tmp_path, {"log": {"colour": True}}))
    assert "unknown setting log.colour" in message
    assert "did you mean" not in message
    for name in ("world_log_max_bytes", "world_log_backups", "echo", "everything"):
        assert name in message


def test_unknown_key_in_replace_is_named() -> None:
    message = config_error(Config().replace, game={"visoin_radius": 3})
    assert "overrides" in message
    assert "game.visoin_radius" in message
    assert "did you mean 'vision_radius'?" in message


# -- wrong shapes and types -------------------------------------------------------------------


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    message = config_error(load_config, write_text(tmp_path, "- world\n- game\n"))
    assert "top level must be a mapping" in message
    assert "['world', 'game'] (list)" in message


def test_section_must_be_a_mapping(tmp_path: Path) -> None:
    message = config_error(load_config, write_text(tmp_path, "world: 5\n"))
    assert "section 'world'" in message
    assert "5 (int)" in message
    assert "mapping" in message


@pytest.mark.parametrize(("section", "key", "value", "expected"), [
    ("world", "seed", "abc", "a whole number >= 0"),
    ("world", "seed", 3.5, "a whole number >= 0"),
    ("world", "seed", 3.0, "a whole number >= 0"),
    ("world", "tick_rate", "fast", "a number >= 0.001 and <= 1000"),
    ("world", "name", 12, "a string"),
    ("world", "size", "big", "a whole number >= 16 and <= 4096 or a list [width, height]"),
    ("world", "personality_mix", [1, 2], "a mapping of name to number >= 0 and <= 1000"),
    ("log", "echo", "yes please", "true or false"),
    ("log", "echo", 1, "true or false"),
    ("llm", "model", None, "a string"),
    ("paths", "logs", ["a"], "a string"),
])
def test_wrong_type_names_key_value_and_expected_form(tmp_path: Path, section: str, key: str,
                                                       value: Any, expected: str) -> None:
    path = write_yaml(tmp_path, {section: {key: value}})
    message = config_error(load_config, path)
    assert str(path) in message
    assert f"{section}.{key} = {value!r} ({type(value).__name__})" in message
    assert f"expected {expected}" in message
    assert "default:" in message


@pytest.mark.parametrize(("section", "key"), [
    ("world", "seed"), ("world", "starting_agents"), ("world", "tick_rate"),
    ("game", "vision_radius"), ("game", "max_health"), ("log", "world_log_backups"),
])
@pytest.mark.parametrize("value", [True, False])
def test_bools_are_not_numbers(tmp_path: Path, section: str, key: str, value: bool) -> None:
    message = config_error(load_config, write_yaml(tmp_path, {section: {key: value}}))
    assert f"{section}.{key} = {value!r} (bool)" in message


def test_bools_are_not_numbers_inside_size_and_personality_mix() -> None:
    message = config_error(config_from_dict, {"world": {"size": [True, 64]}})
    assert "world.size = [True, 64]" in message
    message = config_error(config_from_dict, {"world": {"personality_mix": {"trader": True}}})
    assert "world.personality_mix" in message


# -- ranges -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("section", "key", "value", "expected"), [
    ("world", "tick_rate", 0, "a number >= 0.001 and <= 1000"),
    ("world", "tick_rate", -5.0, "a number >= 0.001 and <= 1000"),
    ("world", "tick_rate", 1000.5, "a number >= 0.001 and <= 1000"),
    ("world", "tick_rate", math.inf, "a number >= 0.001 and <= 1000"),
    ("world", "tick_rate", math.nan, "a number >= 0.001 and <= 1000"),
    ("world", "seed", -1, "a whole number >= 0 and <= 9223372036854775807"),
    ("world", "seed", 2**63, "a whole number >= 0 and <= 9223372036854775807"),
    ("world", "size", 15, "a whole number >= 16 and <= 4096"),
    ("world", "size", [4097, 64], "a whole number >= 16 and <= 4096"),
    ("world", "obstacle_density", 0.6, "a number >= 0 and <= 0.5"),
    ("world", "starting_agents", 200_001, "a whole number >= 0 and <= 200000"),
    ("game", "action_timeout_ticks", 9, "a whole number >= 10 and <= 100000"),
    ("game", "steal_success_chance", -0.1, "a number >= 0 and <= 1"),
    ("game", "shelter_rest_multiplier", 0.5, "a number >= 1 and <= 100"),
    ("log", "world_log_max_bytes", 9_999, "a whole number >= 10000 and <= 1000000000000"),
    ("log", "world_log_backups", -1, "a whole number >= 0 and <= 1000"),
    ("llm", "provider", "gpt", "one of 'none', 'openai', 'anthropic'"),
])
def test_out_of_range_names_key_value_and_range(tmp_path: Path, section: str, key: str,
                                                value: Any, expected: str) -> None:
    path = write_yaml(tmp_path, {section: {key: value}})
    message = config_error(load_config, path)
    assert str(path) in message
    assert f"{section}.{key} = {value!r}" in message
    assert f"expected {expected}" in message


@pytest.mark.parametrize(("key", "value"), [
    ("seed", 10**400),
    ("tick_rate", 10**400),
    ("size", 10**400),
    ("personality_mix", {"trader": 10**400}),
], ids=["seed", "tick_rate", "size", "personality_mix"])
def test_huge_integers_are_a_config_error_not_a_crash(tmp_path: Path, key: str,
                                                      value: Any) -> None:
    # A 401-digit integer is valid YAML; it must be reported like any out-of-range value.
    path = write_yaml(tmp_path, {"world": {key: value}})
    message = config_error(load_config, path)
    assert f"world.{key}" in message


def test_boundaries_are_accepted() -> None:
    cfg = Config().replace(world={"tick_rate": 1000, "seed": 2**63 - 1, "size": [16, 4096],
                                  "obstacle_density": 0.5, "starting_agents": 0},
                           game={"action_timeout_ticks": 10, "steal_success_chance": 1})
    assert cfg.world.tick_rate == 1000.0
    assert cfg.world.seed == 2**63 - 1
    assert cfg.world.size == (16, 4096)
    assert cfg.game.action_timeout_ticks == 10


# -- size and personality_mix -----------------------------------------------------------------


def test_size_accepts_one_number_for_a_square(tmp_path: Path) -> None:
    cfg = load_config(write_yaml(tmp_path, {"world": {"size": 64}}))
    assert cfg.world.size == (64, 64)


def test_size_accepts_width_and_height(tmp_path: Path) -> None:
    cfg = load_config(write_text(tmp_path, "world:\n  size: [80, 48]\n"))
    assert cfg.world.size == (80, 48)
    assert (cfg.world.width, cfg.world.height) == (80, 48)


@pytest.mark.parametrize("value", [[80], [80, 48, 2], [80.0, 48], 64.0, {"w": 80}])
def test_size_rejects_other_shapes(value: Any) -> None:
    message = config_error(config_from_dict, {"world": {"size": value}})
    assert f"world.size = {value!r}" in message
    assert "or a list [width, height] of two such numbers" in message


def test_personality_mix_rejects_unknown_personalities(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, {"world": {"personality_mix": {"trader": 1, "pirate": 2}}})
    message = config_error(load_config, path)
    assert str(path) in message
    assert "world.personality_mix" in message
    assert "'pirate'" in message
    assert "aggressive, cautious, gatherer, trader" in message


def test_personality_mix_needs_one_positive_weight_when_agents_start() -> None:
    zero = {"aggressive": 0, "cautious": 0, "trader": 0, "gatherer": 0}
    message = config_error(Config().replace, world={"personality_mix": zero})
    assert "world.personality_mix" in message
    assert "> 0" in message
    cfg = Config().replace(world={"personality_mix": zero, "starting_agents": 0})
    assert cfg.world.personality_mix == dict.fromkeys(zero, 0.0)


def test_personality_mix_may_name_a_subset() -> None:
    cfg = Config().replace(world={"personality_mix": {"trader": 3}})
    assert cfg.world.personality_mix == {"trader": 3.0}


def test_world_name_must_be_a_folder_name() -> None:
    message = config_error(Config().replace, world={"name": "../escape"})
    assert "world.name" in message
    assert "'../escape'" in message
    assert "letters" in message


# -- llm and the API key ----------------------------------------------------------------------


def test_llm_provider_without_model_is_an_error(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, {"llm": {"provider": "openai"}})
    message = config_error(load_config, path)
    assert str(path) in message
    assert "llm.model" in message
    assert "'openai'" in message
    assert "llm.provider: none" in message


def test_api_key_is_read_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AW_TEST_KEY", "secret-value-123")
    cfg = Config().replace(llm={"provider": "openai", "model": "m", "api_key_env": "AW_TEST_KEY"})
    assert cfg.llm.api_key() == "secret-value-123"


@pytest.mark.parametrize("value", [None, ""])
def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch,
                                            value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("AW_TEST_KEY", raising=False)
    else:
        monkeypatch.setenv("AW_TEST_KEY", value)
    cfg = Config().replace(llm={"provider": "anthropic", "model": "m",
                                "api_key_env": "AW_TEST_KEY"})
    message = config_error(cfg.llm.api_key)
    assert "llm.api_key_env" in message
    assert "AW_TEST_KEY is not set" in message
    assert "export AW_TEST_KEY=" in message


def test_no_key_is_needed_without_a_provider_or_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    assert Config().llm.api_key() is None
    keyless = LLMConfig(provider="openai", model="m", api_key_env="")
    assert keyless.api_key() is None


def test_the_key_never_appears_in_to_dict_or_errors(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    secret = "sk-or-v1-0123456789abcdef0123456789abcdef"
    monkeypatch.setenv("AW_TEST_KEY", secret)
    cfg = Config().replace(llm={"provider": "openai", "model": "m", "api_key_env": "AW_TEST_KEY"})
    assert cfg.llm.api_key() == secret
    assert secret not in json.dumps(cfg.to_dict())
    assert secret not in repr(cfg)
    assert cfg.to_dict()["llm"]["api_key_env"] == "AW_TEST_KEY"
    messages = [
        config_error(cfg.replace, llm={"model": ""}),
        config_error(cfg.replace, llm={"provider": "azure"}),
        config_error(cfg.replace, llm={"api_key_env": 5}),
        config_error(load_config, write_yaml(tmp_path, {"llm": {"provider": "openai"}})),
    ]
    for message in messages:
        assert secret not in message


def test_a_key_pasted_into_api_key_env_is_rejected_without_echoing_it() -> None:
    # A common mistake: the key itself instead of the variable's name. The message must say
    # so without printing the secret to the terminal (and into shell logs).
    secret = "sk-or-v1-0123456789abcdef0123456789abcdef"
    message = config_error(Config().replace, llm={"api_key_env": secret})
    assert "llm.api_key_env" in message
    assert "not an environment variable name" in message
    assert secret not in message


# -- the example file -------------------------------------------------------------------------


def test_example_yaml_is_the_committed_file_byte_for_byte() -> None:
    assert example_yaml().encode("utf-8") == EXAMPLE.read_bytes()


def test_module_main_prints_the_example() -> None:
    out = subprocess.run([sys.executable, "-m", "agent_world.config"], cwd=REPO,
                         capture_output=True, check=True, timeout=60)
    assert out.stdout == EXAMPLE.read_bytes()


def test_loading_the_example_gives_the_defaults() -> None:
    assert load_config(EXAMPLE) == Config()


def test_example_documents_every_setting() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    for section, cls in SECTIONS.items():
        assert f"\n{section}:\n" in text
        for f in dataclasses.fields(cls):
            assert f"\n  {f.name}: " in text


# -- replace ----------------------------------------------------------------------------------


def test_replace_returns_a_validated_copy() -> None:
    base = Config()
    cfg = base.replace(world={"size": [80, 48], "seed": 3})
    assert cfg.world.size == (80, 48)
    assert cfg.world.seed == 3
    assert base == Config()  # the original is untouched


def test_replace_validates_like_a_file() -> None:
    message = config_error(Config().replace, world={"tick_rate": 0})
    assert "overrides: world.tick_rate = 0 (int) is invalid" in message
    assert "expected a number >= 0.001 and <= 1000" in message
    message = config_error(Config().replace, world={"seed": True})
    assert "world.seed = True (bool)" in message
    message = config_error(Config().replace, wrold={"seed": 1})
    assert "unknown section 'wrold'; did you mean 'world'?" in message


# -- malformed and unreadable files -----------------------------------------------------------


@pytest.mark.parametrize(("text", "line"), [
    ("world:\n  seed: [1, 2\n", 3),
    ("world: {seed: 1\n", 2),
    ("world:\n  seed: 1\n - x\n", 3),
])
def test_malformed_yaml_names_file_and_position(tmp_path: Path, text: str, line: int) -> None:
    path = write_text(tmp_path, text)
    message = config_error(load_config, path)
    assert message.startswith(f"{path}: not valid YAML at line {line}, column ")


def test_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    message = config_error(load_config, path)
    assert str(path) in message
    assert "no such config file" in message


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    message = config_error(load_config, tmp_path)  # a folder, not a file
    assert str(tmp_path) in message
    assert "cannot read config file" in message


def test_non_utf8_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"world:\n  name: caf\xe9\n")
    message = config_error(load_config, path)
    assert str(path) in message
    assert "cannot read config file" in message


# -- every setting rejects every wrong type ---------------------------------------------------

SETTINGS = [
    (section, f.name, typing.get_type_hints(cls)[f.name])
    for section, cls in SECTIONS.items()
    for f in dataclasses.fields(cls)
]

_text = st.text(max_size=8)
_none = st.none()
_floats = st.floats(allow_nan=True, allow_infinity=True)
_ints = st.integers(min_value=-(2**70), max_value=2**70)
_lists = st.lists(st.one_of(_ints, _text), max_size=3)
_dicts = st.dictionaries(_text, st.one_of(_ints, _text), max_size=2)


def _wrong_values(tp: Any) -> st.SearchStrategy[Any]:
    if tp is bool:
        return st.one_of(_ints, _floats, _text, _none, _lists, _dicts)
    if tp is int:
        return st.one_of(st.booleans(), _floats, _text, _none, _lists, _dicts)
    if tp is float:
        return st.one_of(st.booleans(), _text, _none, _lists, _dicts)
    if tp is str:
        return st.one_of(st.booleans(), _ints, _floats, _none, _lists, _dicts)
    if tp == tuple[int, int]:
        return st.one_of(
            st.booleans(), _floats, _text, _none, _dicts,
            st.lists(st.integers(16, 64), max_size=5).filter(lambda v: len(v) != 2),
            st.lists(st.one_of(_text, _floats, st.booleans(), _none), min_size=2, max_size=2),
        )
    if tp == tuple[str, ...]:  # a list of names: anything else, or a list holding a non-name
        return st.one_of(
            st.booleans(), _ints, _floats, _text, _none, _dicts,
            st.lists(st.one_of(_ints, _floats, st.booleans(), _none, _lists), min_size=1,
                     max_size=3),
        )
    if typing.get_origin(tp) is dict:
        # A wrong entry: text where numbers go, a number where text goes (llm.prices,
        # game.recipes), and what fits neither.
        wrong_entry = _floats if typing.get_args(tp)[1] is str else _text
        return st.one_of(
            st.booleans(), _ints, _floats, _text, _none, _lists,
            st.dictionaries(st.sampled_from(["trader", "cautious"]),
                            st.one_of(wrong_entry, st.booleans(), _none, _lists), min_size=1,
                            max_size=2),
        )
    raise AssertionError(f"no wrong-value strategy for {tp!r}")


def test_every_setting_has_a_wrong_value_strategy() -> None:
    for _section, _key, tp in SETTINGS:
        _wrong_values(tp)


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), which=st.sampled_from(SETTINGS))
def test_any_wrong_typed_value_is_rejected_naming_the_setting(
        data: st.DataObject, which: tuple[str, str, Any]) -> None:
    section, key, tp = which
    value = data.draw(_wrong_values(tp), label=f"{section}.{key}")
    with pytest.raises(ConfigError) as info:
        config_from_dict({section: {key: value}})
    message = str(info.value)
    assert f"{section}.{key} = " in message
    assert f"({type(value).__name__})" in message
    assert "expected" in message
