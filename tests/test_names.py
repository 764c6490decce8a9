"""Names are checked whole: a pattern written ``^...$`` and used with ``match`` accepts a
trailing newline (``$`` matches before one), so a served replay's ``/fork "evil\\n"`` made
``saves/evil<LF>/``, ran it live and split log lines and the ``worlds`` table. Every name the
program takes from outside is now checked with ``fullmatch``; each case below is one such
door, tried with the newline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ability_helpers import source
from helpers import small_world

from agent_world.commands.parsing import CommandError, parse_entity_ref, parse_spawn
from agent_world.config import Config, ConfigError, config_from_dict
from agent_world.core.abilities import AbilityError, AbilityMeta
from agent_world.core.world import WorldError
from agent_world.persistence.folder import SaveError, SaveFolder
from agent_world.policies.policy import PolicyError, load_policy
from agent_world.sandbox.compiler import compile_ability
from agent_world.sandbox.gate import GateError
from agent_world.web.playback import _parse_name

POLICY = ('NAME = "{name}"\nDESCRIPTION = "Waits."\nVERSION = 1\n\n\n'
          'def decide(obs, memory):\n    return {{"action": "rest", "args": {{}}}}\n')


def test_a_world_name_with_a_newline_is_refused_by_the_config_and_by_a_replay_fork() -> None:
    with pytest.raises(ConfigError, match=r"world\.name"):
        Config().replace(world={"name": "evil\n"})
    with pytest.raises(CommandError, match=r"world\.name"):
        _parse_name(["evil\n"])
    assert _parse_name(["fine"]) == "fine"


def test_console_names_with_a_newline_are_refused() -> None:
    with pytest.raises(CommandError, match="not a usable name"):
        parse_spawn(["agent", "Bob\n"])
    with pytest.raises(CommandError, match="team name"):
        parse_spawn(["agent", "team=red\n"])
    with pytest.raises(CommandError, match="unknown brain"):
        parse_spawn(["agent", "brain=forager\n"])
    with pytest.raises(CommandError, match="neither an entity id"):
        parse_entity_ref("Zed#12\n")
    assert parse_spawn(["agent", "Bob", "team=red"]).name == "Bob"


def test_world_and_config_names_with_a_newline_are_refused() -> None:
    world = small_world()
    try:
        with pytest.raises(WorldError, match="team"):
            world.spawn_agent(x=1, y=1, team="red\n")
    finally:
        world.close()
    with pytest.raises(ConfigError, match="brains"):
        config_from_dict({"brains": {"registered": {"forager\n": "mod:Cls"}}})


def test_ability_and_policy_names_with_a_newline_are_refused() -> None:
    with pytest.raises(AbilityError):
        AbilityMeta(name="glow\n", description="A test ability.", energy_cost=0.0,
                    cooldown=0, range=1, args={})
    with pytest.raises(GateError):
        compile_ability(source("    return []\n", name="glow\n"))
    with pytest.raises(PolicyError):
        load_policy(POLICY.format(name="idle\\n"), "idle.py")
    assert load_policy(POLICY.format(name="idle"), "idle.py").name == "idle"


def test_a_save_folder_takes_no_ability_file_whose_name_ends_in_a_newline(tmp_path) -> None:
    folder = SaveFolder(tmp_path / "w")
    with pytest.raises(SaveError, match="is not an ability name"):
        folder.ability_path("glow\n")


def test_no_pattern_in_the_program_ends_in_a_dollar_sign() -> None:
    """``$`` also matches before a final newline: names are checked with ``fullmatch`` and
    patterns end with ``\\Z`` where they must stop at the end."""
    package = Path(__file__).resolve().parent.parent / "agent_world"
    loose = [f"{path.relative_to(package.parent)}:{n}"
             for path in sorted(package.rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"""re\.compile\(r?b?["'][^"']*(?<!\\)\$["']""", line)]
    assert loose == []
