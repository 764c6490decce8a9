"""The ``decisions`` section (issue 31 item 2): what every off-tick brain shares, each kind's
own values, the old keys that still work for a release, and that none of it is in a
world's state."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_world.config import Config, ConfigError, config_from_dict, load_config
from agent_world.config.decisions import KIND_DEFAULTS, KINDS, MOVED
from agent_world.core.world import SIMULATION_SECTIONS, World
from tests.helpers import small_config


def test_the_defaults_are_each_kinds_values_of_before() -> None:
    """No world behaves otherwise: the LLM's, users' brains' and remote agents' settings
    are what llm, brains and remote held."""
    decisions = Config().decisions
    llm, brains, remote = (decisions.of(kind) for kind in KINDS)
    assert (llm.think_interval_ticks, llm.min_gap_ticks, llm.workers) == (600, 20, 4)
    assert (llm.decisions_per_agent_hour, llm.decisions_per_hour) == (120, 0)
    assert (brains.think_interval_ticks, brains.min_gap_ticks) == (50, 5)
    assert (brains.deadline_ms, brains.workers) == (500, 2)
    assert (remote.think_interval_ticks, remote.min_gap_ticks, remote.deadline_ms) == (50, 5,
                                                                                       2000)


def test_a_shared_value_holds_for_every_kind_without_its_own() -> None:
    config = config_from_dict({"decisions": {"think_interval_ticks": 80, "deadline_ms": 900}})
    assert config.decisions.of("brains").think_interval_ticks == 80
    assert config.decisions.of("remote").think_interval_ticks == 80
    assert config.decisions.of("llm").think_interval_ticks == 600  # the LLM's own default
    assert config.decisions.of("brains").deadline_ms == 900
    assert config.decisions.of("remote").deadline_ms == 2000  # remote's own default


def test_a_kinds_own_value_wins_and_the_rest_keep_their_defaults() -> None:
    config = config_from_dict({"decisions": {"workers": 3, "llm": {"workers": 8}}})
    llm = config.decisions.of("llm")
    assert llm.workers == 8 and isinstance(llm.workers, int)
    assert llm.think_interval_ticks == 600 and llm.min_gap_ticks == 20  # not the shared 50/5
    assert config.decisions.of("brains").workers == 3
    assert config.decisions.llm == {"workers": 8}  # whole numbers stay whole


def test_the_new_key_works_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("decisions:\n  brains: {deadline_ms: 1200}\n  remote: {min_gap_ticks: 2}\n",
                    encoding="utf-8")
    config = load_config(path)
    assert config.decisions.of("brains").deadline_ms == 1200
    assert config.decisions.of("remote").min_gap_ticks == 2
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("section", "key"), [(s, k) for s, keys in MOVED.items() for k in keys])
def test_an_old_key_still_works_and_says_once_where_it_went(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, key: str) -> None:
    value = 7 if key != "deadline_ms" else 700
    path = tmp_path / "config.yaml"
    path.write_text(f"{section}:\n  {key}: {value}\n", encoding="utf-8")
    config = load_config(path)
    assert getattr(config.decisions.of(section), key) == value
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert f"{section}.{key} is deprecated" in lines[0]
    assert f"use decisions.{section}.{key}" in lines[0]
    assert str(path) in lines[0]


def test_an_old_key_in_replace_overrides_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    config = Config().replace(brains={"deadline_ms": 300})
    again = config.replace(brains={"deadline_ms": 400})  # changed again: no conflict
    assert again.decisions.of("brains").deadline_ms == 400
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("use decisions.brains.deadline_ms" in line for line in err)


def test_an_old_and_a_new_key_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match=r"llm.workers and decisions.llm.workers are both "
                                          r"set; keep decisions.llm.workers"):
        config_from_dict({"llm": {"workers": 2}, "decisions": {"llm": {"workers": 3}}})


def test_the_old_key_and_a_shared_new_one_are_not_a_conflict() -> None:
    """The old key was the kind's own; the shared value is another setting."""
    config = config_from_dict({"llm": {"workers": 2}, "decisions": {"workers": 3}})
    assert config.decisions.of("llm").workers == 2
    assert config.decisions.of("brains").workers == 3


@pytest.mark.parametrize(("raw", "message"), [
    ({"llm": {"speed": 3}}, "decisions.llm.speed is not a setting a kind may set"),
    ({"brains": {"workers": 0}}, "decisions.brains.workers = 0 is invalid"),
    ({"brains": {"workers": 2.5}}, "expected a whole number >= 1 and <= 64"),
    ({"remote": {"min_gap_ticks": 0}}, "below remote's least"),
    ({"min_gap_ticks": 0}, r"decisions.remote.min_gap_ticks is 0 \(from decisions.min_gap_ticks"),
])
def test_a_bad_kind_value_names_the_setting(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"decisions": raw})


def test_the_settings_are_not_in_a_worlds_state() -> None:
    """They pace the pipeline, not the simulation: worlds made under different values are
    the same world, hash for hash."""
    plain = small_config()
    busy = plain.replace(decisions={"think_interval_ticks": 7, "workers": 9,
                                    "llm": {"min_gap_ticks": 1}})
    a, b = World.create(plain, seed=3), World.create(busy, seed=3)
    assert set(a.get_state()["config"]) == set(SIMULATION_SECTIONS)
    for _ in range(30):
        a.step()
        b.step()
        assert a.state_hash() == b.state_hash()


def test_every_kind_has_defaults_and_moved_keys_are_shared_settings() -> None:
    assert set(KIND_DEFAULTS) == set(KINDS) == set(MOVED)
    shared = set(Config().decisions.of("llm").__dataclass_fields__)
    assert all(set(keys) <= shared for keys in MOVED.values())
