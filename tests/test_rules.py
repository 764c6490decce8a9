"""Rules are versioned as a whole: a world records the version it was made under, keeps it,
and a release that does not run that version says so in one line naming what to do."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agent_world.config import Config
from agent_world.core import rules
from agent_world.core.rules import RULES_VERSION, compat, missing_settings, ruleset
from agent_world.core.world import World
from agent_world.persistence import SaveFolder, open_world
from agent_world.persistence.folder import RulesUnsupported
from tests.golden.check import GOLDEN, reading_config
from tests.persistence_helpers import run_session, saving_config

ROOT = Path(__file__).resolve().parent.parent


def test_a_new_world_is_made_under_the_current_rules_and_its_folder_says_so(
        tmp_path: Path) -> None:
    assert Config().game.brain_version == RULES_VERSION
    config = saving_config(tmp_path)
    run_session(config, 5)
    meta = SaveFolder.open(tmp_path / "saves" / "w").read_meta()
    assert meta["rules"] == RULES_VERSION
    opened = open_world(config)
    try:
        assert opened.world.ruleset.version == RULES_VERSION
    finally:
        opened.close()


def test_a_world_keeps_the_rules_it_was_made_under_and_resuming_records_them(
        tmp_path: Path) -> None:
    saved = tmp_path / "saves" / "first_brains"
    shutil.copytree(GOLDEN / "first_brains", saved)
    assert "rules" not in orjson.loads((saved / "meta.json").read_bytes())  # made before
    opened = open_world(reading_config(saved))
    try:
        assert opened.world.ruleset is ruleset(1)
        assert opened.world.ruleset.decide is not ruleset(RULES_VERSION).decide
    finally:
        opened.close()
    assert orjson.loads((saved / "meta.json").read_bytes())["rules"] == 1


def test_every_ruleset_is_complete_and_settings_new_since_a_version_are_filled_in() -> None:
    assert set(compat.RULESETS) == set(range(rules.OLDEST_RULES_VERSION, RULES_VERSION + 1))
    assert all(compat.RULESETS[v].version == v for v in compat.RULESETS)
    # Settings added before versions existed: every world lacking one ran without it.
    assert missing_settings("game", RULES_VERSION)["market_fee"] == 0.0
    assert missing_settings("abilities", 1)["caps"] == "effect"


def test_settings_added_in_a_later_version_apply_only_to_older_worlds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(compat.ADDED_IN, RULES_VERSION + 1, {"game": {"tax": 0.0}})
    assert missing_settings("game", RULES_VERSION)["tax"] == 0.0
    assert "tax" not in missing_settings("game", RULES_VERSION + 1)


def _newer_world(tmp_path: Path) -> Path:
    """The golden teams world as a later release (rules version 99) would have saved it."""
    saved = tmp_path / "saves" / "later"
    shutil.copytree(GOLDEN / "teams_crafting_brains", saved)
    meta = orjson.loads((saved / "meta.json").read_bytes())
    (saved / "meta.json").write_bytes(orjson.dumps({**meta, "rules": 99}))
    return saved


def test_a_world_made_under_newer_rules_is_refused_with_one_line(tmp_path: Path) -> None:
    saved = _newer_world(tmp_path)
    with pytest.raises(RulesUnsupported) as caught:
        open_world(reading_config(saved))
    assert str(caught.value) == (
        "world 'later' was made under rules version 99, newer than this release's (it runs "
        f"rules 1..{RULES_VERSION}); upgrade Agent World to run it")
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), "replay", str(saved)],
                          capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert done.returncode != 0
    assert "made under rules version 99" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def test_a_snapshot_under_newer_rules_is_not_taken_for_damage(tmp_path: Path) -> None:
    """A folder made before meta.json recorded rules: the snapshots' own state says it, and
    no older snapshot is tried in its place."""
    saved = tmp_path / "saves" / "first_brains"
    shutil.copytree(GOLDEN / "first_brains", saved)
    for path in sorted((saved / "snapshots").glob("*.json.gz")):
        doc = orjson.loads(gzip.decompress(path.read_bytes()))
        doc["state"]["config"]["game"]["brain_version"] = 99
        path.write_bytes(gzip.compress(orjson.dumps(doc)))
    (saved / "world_state.json").write_bytes(gzip.decompress(
        sorted((saved / "snapshots").glob("*.json.gz"))[-1].read_bytes()))
    with pytest.raises(RulesUnsupported, match="made under rules version 99"):
        open_world(reading_config(saved))


def test_a_retired_rules_version_names_the_release_that_runs_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(compat.RULESETS, 1)
    monkeypatch.setitem(rules.RETIRED, 1, "agent-world 0.1.0")
    saved = tmp_path / "saves" / "first_brains"
    shutil.copytree(GOLDEN / "first_brains", saved)
    with pytest.raises(RulesUnsupported) as caught:
        open_world(reading_config(saved))
    assert str(caught.value).endswith(
        "this world runs rules version 1, retired since; agent-world 0.1.0 is the last "
        "release that replays and resumes it")
    with pytest.raises(Exception, match="retired since"):
        World.create(Config().replace(game={"brain_version": 1}))


def test_no_system_asks_for_a_rules_version_by_number() -> None:
    """The differences between versions live in core/rules: elsewhere the world's Ruleset
    is asked what to do, never which version it is."""
    package = ROOT / "agent_world"
    allowed = {"core/rules", "core/world.py", "config/world.py"}
    offenders = [str(p.relative_to(package)) for p in package.rglob("*.py")
                 if "brain_version" in p.read_text()
                 and not any(str(p.relative_to(package)).startswith(a) for a in allowed)]
    assert offenders == []
