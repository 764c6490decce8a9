"""Seek points: the running world's frequent snapshots in seek/, their budget, and what
starts from them (resume, fork, a served replay's seek). Real files and threads."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.cli.replay import run_replay
from agent_world.config import Config
from agent_world.persistence import SaveFolder, fork_world, open_world
from agent_world.persistence.seekpoints import SeekPoints
from agent_world.persistence.snapshots import load_snapshot_file
from tests.persistence_helpers import (
    records,
    reference_hash,
    run_session,
    saving_config,
)


def every(ticks: int, tmp_path: Path, **persistence: Any) -> Config:
    """A seek point on every multiple of ``ticks``, whatever the ticks cost."""
    return saving_config(tmp_path, seek_interval_ticks=ticks, seek_target_ms=0, **persistence)


SPAWN = {30: [("spawn", {"kind": "agent", "name": "Zed"})],
         160: [("spawn", {"kind": "agent", "name": "Ada"})]}


def test_the_running_world_leaves_a_seek_point_every_interval(tmp_path: Path) -> None:
    cfg = every(50, tmp_path, snapshot_interval_ticks=1000)
    session = run_session(cfg, 230, inputs=SPAWN)
    folder = SaveFolder(tmp_path / "saves" / "w")
    assert [t for t, _ in folder.seek_points()] == [50, 100, 150, 200]
    stats = session.persistence.stats() if session.persistence else {}
    assert stats["seek_points"] == 4 and stats["seek_points_bytes"] > 0
    logged = {r["tick"]: r["hash"] for r in records(folder.root) if r["type"] == "state_hash"}
    for tick, path in folder.seek_points():
        loaded = load_snapshot_file(path, cfg)  # a snapshot file: it checks its own hash
        assert loaded.tick == tick and loaded.hash == logged[tick]
        assert loaded.hash == reference_hash(cfg, tick, SPAWN)
        loaded.world.close()


def test_resume_after_a_crash_starts_from_the_newest_seek_point(tmp_path: Path) -> None:
    cfg = every(100, tmp_path, snapshot_interval_ticks=1000)
    run_session(cfg, 330, inputs=SPAWN)
    root = tmp_path / "saves" / "w"
    # As if the process died at tick 330: world_state.json still holds the first snapshot.
    first = gzip.decompress((root / "snapshots" / f"{0:010d}.json.gz").read_bytes())
    (root / "world_state.json").write_bytes(first)
    for path in (root / "snapshots").iterdir():
        if not path.name.startswith(f"{0:010d}"):
            path.unlink()
    opened = open_world(cfg)
    try:
        assert opened.world.tick == 330 and opened.replayed_ticks == 30
        assert opened.world.state_hash() == reference_hash(cfg, 330, SPAWN)
    finally:
        opened.close()


def test_a_damaged_seek_point_is_skipped_and_a_lost_future_is_deleted(
        tmp_path: Path) -> None:
    cfg = every(100, tmp_path, snapshot_interval_ticks=1000, events_chunk_ticks=10_000)
    run_session(cfg, 330, inputs=SPAWN)
    folder = SaveFolder(tmp_path / "saves" / "w")
    (folder.root / "world_state.json").unlink()
    folder.snapshot_path(330).unlink()  # the shutdown's snapshot
    folder.seek_path(300).write_bytes(b"not gzip")
    # The log lost its last ticks (a disk that gave back less than was written): the world
    # resumes where the log ends, before the seek point of 300, which is of another future.
    log = folder.root / "events" / "0000000-0009999.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(line for line in lines if orjson.loads(line)["tick"] <= 250))
    opened = open_world(cfg)
    try:
        notes = "\n".join(opened.notes)
        assert "skipping damaged snapshot" in notes and "0000000300.json.gz" in notes
        assert "deleted 1 seek point(s) past tick" in notes, notes
        assert [t for t, _ in folder.seek_points()] == [100, 200]
        assert opened.world.tick == 250
        assert opened.world.state_hash() == reference_hash(cfg, 250, SPAWN)
    finally:
        opened.close()


def test_a_fork_starts_from_the_nearest_seek_point(tmp_path: Path) -> None:
    cfg = every(100, tmp_path, snapshot_interval_ticks=1000)
    run_session(cfg, 330, inputs=SPAWN)
    source = SaveFolder.open(tmp_path / "saves" / "w")
    # Without the log before tick 200 only the seek point of 200 can give the fork its start.
    for chunk in source.chunks():
        for path in (chunk.plain, chunk.gz):
            if path is not None and chunk.end < 200:
                path.unlink()
    opened = fork_world(source, 250, "branch", cfg)
    try:
        assert opened.world.state_hash() == reference_hash(cfg, 250, SPAWN)
    finally:
        opened.close()


def test_a_seek_point_the_disk_refuses_is_skipped_and_the_world_goes_on(
        tmp_path: Path) -> None:
    cfg = every(50, tmp_path)
    opened = open_world(cfg)
    assert opened.folder is not None
    opened.folder.seek_dir.write_bytes(b"")  # a file where the folder should be
    session = run_session(cfg, 120, opened=opened)
    stats = session.persistence.stats() if session.persistence else {}
    assert stats["seek_points_failed"] == 2 and stats["seek_points"] == 0
    assert stats["errors"] == 0 and stats["snapshots_written"] >= 1  # nothing else suffered
    resumed = open_world(cfg)
    assert resumed.world.tick == 120
    resumed.close()


def test_past_the_budget_old_seek_points_thin_out_and_recent_ones_stay_dense(
        tmp_path: Path) -> None:
    folder = SaveFolder.create(tmp_path / "w", {})
    state = b'{"tick":0,"blob":"' + bytes(range(48, 58)) * 3000 + b'"}'
    one = len(gzip.compress(state, 1)) + 200  # about a point's size, with its envelope
    points = SeekPoints(folder, budget_bytes=one * 12)
    for tick in range(100, 6_100, 100):
        points.add(tick, state)
        assert points.total <= points.budget
    kept = [t for t, _ in folder.seek_points()]
    assert kept == sorted(points.sizes) and points.deleted == 60 - len(kept)
    newest = kept[len(kept) // 2:]
    assert newest == list(range(newest[0], 6_100, 100))  # the recent half: every point
    gaps = [b - a for a, b in itertools.pairwise(kept)]
    assert max(gaps) > 100 and gaps == sorted(gaps, reverse=True)  # sparser with age
    # A later writer of the same folder counts what is there.
    again = SeekPoints(folder, budget_bytes=one * 12)
    assert again.sizes == points.sizes and again.total == points.total


def test_replay_to_a_tick_starts_from_the_nearest_seek_point(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = every(100, tmp_path, snapshot_interval_ticks=1000)
    run_session(cfg, 330, inputs=SPAWN)
    root = tmp_path / "saves" / "w"
    assert run_replay(root, cfg, to=250, playback=None) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: replayed ticks 201..250 "), out
    assert "  from: the seek point of tick 200 (0000000200.json.gz)" in out
    assert f"tick 250 state_hash {reference_hash(cfg, 250, SPAWN)}" in out
    assert run_replay(root, cfg, to=250, playback=None, from_start=True) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: replayed ticks 1..250 ") and "from:" not in out
    assert f"tick 250 state_hash {reference_hash(cfg, 250, SPAWN)}" in out
