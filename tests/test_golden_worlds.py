"""Golden worlds: save folders recorded by earlier releases (tests/golden/, made once each by
``python -m tests.golden.make``) must replay with every logged hash verified and resume
exactly, in this release and every later one. Their figures in golden.json never change:
a rule that changes behaviour gets a new rules version, and these worlds keep their own."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.golden.check import GOLDEN, INDEX, continued_by_replay, continued_by_resume

WORLDS: dict[str, dict[str, Any]] = orjson.loads(INDEX.read_bytes())


def test_every_golden_folder_is_listed_and_every_listed_world_is_kept() -> None:
    folders = {p.name for p in GOLDEN.iterdir() if (p / "meta.json").exists()}
    assert folders == set(WORLDS)
    assert len(WORLDS) >= 3


def _copy(name: str, tmp_path: Path) -> Path:
    saved = tmp_path / "saves" / name
    shutil.copytree(GOLDEN / name, saved)
    return saved


@pytest.mark.parametrize("name", sorted(WORLDS))
def test_a_golden_world_replays_from_its_log_to_its_recorded_hashes(
        name: str, tmp_path: Path) -> None:
    golden = WORLDS[name]
    final, continued = continued_by_replay(_copy(name, tmp_path), golden["continue_ticks"])
    assert final == golden["final_hash"]
    assert continued == golden["continued_hash"]


@pytest.mark.parametrize("name", sorted(WORLDS))
def test_a_golden_world_resumes_exactly_where_it_stopped(name: str, tmp_path: Path) -> None:
    golden = WORLDS[name]
    final, continued = continued_by_resume(_copy(name, tmp_path), golden["continue_ticks"])
    assert final == golden["final_hash"]
    assert continued == golden["continued_hash"]
