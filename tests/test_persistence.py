"""Save folders: snapshots, the event log, resume, and every kind of damage."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core.world import World
from agent_world.persistence import FORMAT_VERSION, SaveError, SaveFolder, open_world
from agent_world.persistence.snapshots import load_latest_snapshot, load_snapshot_file
from tests.persistence_helpers import (
    records,
    reference_hash,
    run_session,
    saving_config,
    snapshot_doc,
)

SPAWN = {5: [("spawn", {"kind": "agent", "name": "Visitor", "personality": "trader"})],
         40: [("spawn", {"kind": "gold", "qty": 30})],
         77: [("give", {"target": 1, "item": "sword", "qty": 1})]}


def test_save_then_load_gives_the_identical_hash(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    session = run_session(cfg, 137)
    expected = session.world.state_hash()
    folder = SaveFolder.open(tmp_path / "saves" / "w")
    loaded = load_snapshot_file(folder.state_path, cfg)
    assert loaded.tick == 137
    assert loaded.world.state_hash() == expected == loaded.hash


def test_a_new_world_has_the_documented_layout(tmp_path: Path) -> None:
    run_session(saving_config(tmp_path), 260)
    root = tmp_path / "saves" / "w"
    for part in ("meta.json", "world_state.json", "snapshots", "events", "minds",
                 "abilities"):
        assert (root / part).exists(), part
    meta = orjson.loads((root / "meta.json").read_bytes())
    assert meta["format"] == FORMAT_VERSION
    assert meta["seed"] == 42 and meta["world"] == "w" and meta["last_tick"] == 260
    assert meta["config"]["world"]["name"] == "w" and meta["origin"] is None
    assert (root / "snapshots" / "0000000000.json.gz").exists()  # the first, kept forever
    # Ticks 0-249 are a closed range (gzipped); 250-499 is still being written.
    assert (root / "events" / "0000000-0000249.jsonl.gz").exists()
    assert (root / "events" / "0000250-0000499.jsonl").exists()
    assert not (root / "events" / "0000000-0000249.jsonl").exists()


def test_every_line_has_tick_seq_kind_and_type_in_order(tmp_path: Path) -> None:
    run_session(saving_config(tmp_path), 120, inputs=SPAWN)
    lines = records(tmp_path / "saves" / "w")
    assert all({"tick", "seq", "kind", "type"} <= line.keys() for line in lines)
    assert [line["tick"] for line in lines] == sorted(line["tick"] for line in lines)
    kinds = {line["kind"] for line in lines}
    assert kinds == {"input", "event", "check", "marker"}
    checks = [line["tick"] for line in lines if line["kind"] == "check"]
    assert checks == list(range(10, 121, 10))
    inputs = [line for line in lines if line["kind"] == "input"]
    assert [(i["tick"], i["type"]) for i in inputs] == [(6, "spawn"), (41, "spawn"),
                                                         (78, "give")]
    assert [i["seq"] for i in inputs] == [1, 2, 3]


def test_inputs_are_logged_before_the_events_they_cause(tmp_path: Path) -> None:
    run_session(saving_config(tmp_path), 10, inputs=SPAWN)
    tick6 = [line for line in records(tmp_path / "saves" / "w") if line["tick"] == 6]
    assert tick6[0]["kind"] == "input"
    assert any(line["kind"] == "event" and line["type"] == "spawn"
               and line["name"] == "Visitor" for line in tick6[1:])


def test_resume_reaches_the_exact_state_and_continues(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    first = run_session(cfg, 150, inputs=SPAWN)
    assert first.world.tick == 150
    opened = open_world(cfg)
    assert opened.resumed and opened.world.tick == 150
    assert opened.world.state_hash() == first.world.state_hash()
    later = {160: [("spawn", {"kind": "apple", "qty": 2})]}  # keyed by absolute tick
    second = run_session(cfg, 150, opened=opened, inputs=later)
    everything = {**SPAWN, 160: [("spawn", {"kind": "apple", "qty": 2})]}
    assert second.world.state_hash() == reference_hash(cfg, 300, everything)


def test_clean_restart_is_invisible_in_the_log_except_for_markers(tmp_path: Path) -> None:
    split = saving_config(tmp_path / "a")
    run_session(split, 180)
    run_session(split, 120)
    whole = saving_config(tmp_path / "b")
    run_session(whole, 300)

    def content(root: Path) -> list[dict]:
        return [r for r in records(root) if r["kind"] != "marker"]

    assert content(tmp_path / "a" / "saves" / "w") == content(tmp_path / "b" / "saves" / "w")
    markers = [(r["type"], r["tick"]) for r in records(tmp_path / "a" / "saves" / "w")
               if r["kind"] == "marker"]
    assert markers == [("start", 0), ("shutdown", 180), ("resume", 180), ("shutdown", 300)]


def test_resume_replays_logged_inputs_after_the_snapshot(tmp_path: Path) -> None:
    """A run that stops without its final snapshot (as after a crash) resumes from an older
    snapshot and re-applies every logged input after it."""
    cfg = saving_config(tmp_path, snapshot_interval_ticks=100)
    session = run_session(cfg, 180, inputs=SPAWN | {130: [("spawn", {"kind": "agent",
                                                                       "name": "Late"})]})
    root = tmp_path / "saves" / "w"
    # Remove the final snapshot so the latest one is tick 100.
    (root / "snapshots" / "0000000180.json.gz").unlink()
    older = gzip.decompress((root / "snapshots" / "0000000100.json.gz").read_bytes())
    (root / "world_state.json").write_bytes(older)
    opened = open_world(cfg)
    assert opened.replayed_ticks == 80
    assert opened.world.population.find("Late") is not None
    assert opened.world.state_hash() == session.world.state_hash()


def test_a_damaged_latest_snapshot_falls_back_to_an_earlier_one(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    session = run_session(cfg, 230, inputs=SPAWN)
    root = tmp_path / "saves" / "w"
    state = root / "world_state.json"
    state.write_bytes(state.read_bytes()[:5000])  # torn mid-write
    newest = root / "snapshots" / "0000000230.json.gz"
    newest.write_bytes(b"\x1f\x8b garbage")
    opened = open_world(cfg)
    assert opened.world.state_hash() == session.world.state_hash()
    assert opened.replayed_ticks == 30  # from the snapshot at tick 200
    damaged = [n for n in opened.notes if "damaged snapshot" in n]
    assert len(damaged) == 2 and "world_state.json" in damaged[0]


def test_a_snapshot_whose_content_was_altered_is_refused(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    run_session(cfg, 50)
    state = tmp_path / "saves" / "w" / "world_state.json"
    doc = snapshot_doc(state)
    doc["state"]["entities"][0]["Position"]["x"] += 1  # still valid JSON, wrong content
    state.write_bytes(orjson.dumps(doc))
    with pytest.raises(SaveError, match="does not match its own hash"):
        load_snapshot_file(state, cfg)
    warnings: list[str] = []
    loaded = load_latest_snapshot(SaveFolder.open(state.parent), cfg, warnings)
    assert loaded.source.name == "0000000050.json.gz" and len(warnings) == 1


def test_a_torn_last_line_is_skipped_with_a_warning_and_cut(tmp_path: Path) -> None:
    cfg = saving_config(tmp_path)
    session = run_session(cfg, 120)
    chunk = tmp_path / "saves" / "w" / "events" / "0000000-0000249.jsonl"
    intact = chunk.read_bytes()
    with chunk.open("ab") as f:
        f.write(b'{"tick":121,"seq":0,"kind":"inp')  # the process died mid-line
    opened = open_world(cfg)
    assert opened.world.state_hash() == session.world.state_hash()
    assert any("torn last line" in n for n in opened.notes)
    assert any("cut a torn line" in n for n in opened.notes)
    assert chunk.read_bytes() == intact
    run_session(cfg, 30, opened=opened)
    assert all(r["tick"] <= 150 for r in records(chunk.parent.parent))  # readable again


def test_a_truncated_gzip_chunk_keeps_what_is_intact(tmp_path: Path) -> None:
    # No seek points: the world must salvage the damaged log, not start past it.
    cfg = saving_config(tmp_path, snapshot_interval_ticks=1000, seek_interval_ticks=0)
    run_session(cfg, 400, inputs=SPAWN)
    root = tmp_path / "saves" / "w"
    gz = root / "events" / "0000000-0000249.jsonl.gz"
    data = gz.read_bytes()
    gz.write_bytes(data[: len(data) // 2])
    # The latest snapshot (tick 400) is intact: resuming needs nothing from the damage.
    opened = open_world(cfg)
    assert opened.world.tick == 400 and opened.replayed_ticks == 0
    opened.close()  # frees the world's lock too: no session will run this one
    # Without it, the world resumes as far as the intact log reaches, and says so.
    (root / "world_state.json").unlink()
    (root / "snapshots" / "0000000400.json.gz").unlink()
    opened = open_world(cfg)
    assert 0 < opened.world.tick < 250
    notes = "\n".join(opened.notes)
    assert "0000000-0000249.jsonl.gz is damaged" in notes
    assert "set 0000250-0000499.jsonl aside" in notes
    assert (root / "events" / "0000000-0000249.jsonl.gz.damaged").exists()
    assert (root / "events" / "0000250-0000499.jsonl.orphaned").exists()
    kept = (root / "events" / "0000000-0000249.jsonl").read_bytes()
    assert kept and kept.endswith(b"\n")
    reference = World.create(cfg)
    for _ in range(opened.world.tick):
        for kind, data_ in SPAWN.get(reference.tick, []):
            reference.inbox.submit(kind, data_)
        reference.step()
    assert opened.world.state_hash() == reference.state_hash()
    # And the salvaged world runs on and saves normally.
    run_session(cfg, 20, opened=opened)
    assert open_world(cfg).world.tick == opened.world.tick


def test_missing_foreign_and_newer_folders_get_one_clear_message(tmp_path: Path) -> None:
    with pytest.raises(SaveError, match="does not exist"):
        SaveFolder.open(tmp_path / "nope")
    foreign = tmp_path / "saves" / "w"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(SaveError, match="not an Agent World save"):
        open_world(saving_config(tmp_path))
    assert (foreign / "notes.txt").read_text() == "mine"  # untouched
    newer = tmp_path / "newer"
    run_session(saving_config(newer), 5)
    meta = newer / "saves" / "w" / "meta.json"
    doc = orjson.loads(meta.read_bytes())
    doc["format"] = FORMAT_VERSION + 1
    meta.write_bytes(orjson.dumps(doc))
    with pytest.raises(SaveError, match=r"newer Agent World.*upgrade"):
        open_world(saving_config(newer))


def test_a_seed_for_an_existing_world_is_refused(tmp_path: Path) -> None:
    run_session(saving_config(tmp_path), 5)
    cfg = saving_config(tmp_path).replace(world={"seed": 7})
    with pytest.raises(SaveError, match=r"already exists with seed 42.*--world"):
        open_world(cfg, seed_given=True)


def test_changed_rules_are_reported_and_the_saved_ones_kept(tmp_path: Path) -> None:
    run_session(saving_config(tmp_path), 5)
    cfg = saving_config(tmp_path).replace(game={"hunger_per_tick": 0.5})
    opened = open_world(cfg)
    assert opened.world.rules.hunger_per_tick == 0.05
    assert any("game.hunger_per_tick" in n and "0.05" in n for n in opened.notes)


def test_history_is_bounded_but_keeps_the_first_snapshot(tmp_path: Path) -> None:
    run_session(saving_config(tmp_path, snapshot_interval_ticks=20, snapshots_kept=3), 200)
    ticks = [t for t, _ in SaveFolder(tmp_path / "saves" / "w").history()]
    assert ticks == [0, 160, 180, 200]


def _wait_for(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the writer thread"
        time.sleep(0.01)


def test_an_unwritable_log_is_reported_retried_and_loses_nothing(tmp_path: Path,
                                                                 capfd) -> None:
    """/dev/full fails every write with ENOSPC, as a full disk does."""
    cfg = saving_config(tmp_path, events_chunk_ticks=100, snapshot_interval_ticks=1000)
    run_session(cfg, 10)
    opened = open_world(cfg)
    chunk = tmp_path / "saves" / "w" / "events" / "0000000-0000099.jsonl"
    good = chunk.read_bytes()
    chunk.unlink()
    os.symlink("/dev/full", chunk)
    session = Session(cfg, opened.world, folder=opened.folder, resumed=True)
    persistence = session.persistence
    assert persistence is not None
    asyncio.run(session.loop.run(max_ticks=40, paced=False))
    assert session.world.tick == 50  # the world kept running
    _wait_for(lambda: persistence.stats()["errors"] > 0)
    stats = persistence.stats()
    assert "No space left" in stats["error"] and stats["pending_lines_bytes"] > 0
    # The disk comes back: everything held in memory is written, in order.
    restored = chunk.with_name("restored.tmp")
    restored.write_bytes(good)
    os.replace(restored, chunk)  # atomically: the writer sees /dev/full or the real file
    session.close()
    err = capfd.readouterr().err
    assert err.count("cannot write") == 1, err
    assert "again; nothing was lost" in err
    checks = [r["tick"] for r in records(chunk.parent.parent) if r["kind"] == "check"]
    assert checks == [10, 20, 30, 40, 50]
    assert open_world(cfg).world.state_hash() == session.world.state_hash()
    assert "cannot write" in (tmp_path / "logs" / "world.log").read_text()


def test_logged_hashes_are_the_state_at_the_end_of_their_tick(tmp_path: Path) -> None:
    # The fork that hashes the state runs between ticks, after the observers: each logged
    # hash must still be the world exactly as its tick left it, the last tick's included
    # (the session stops right after it; closing hands the due hash over).
    config = saving_config(tmp_path, hash_interval_ticks=7)
    run_session(config, 70, inputs=SPAWN)
    logged = {r["tick"]: r["hash"] for r in records(tmp_path / "saves" / "w")
              if r["kind"] == "check"}
    assert sorted(logged) == list(range(7, 71, 7))
    world = World.create(config)
    expected = {}
    for _ in range(70):
        for kind, data in SPAWN.get(world.tick, []):
            world.inbox.submit(kind, data)
        world.step()
        if world.tick % 7 == 0:
            expected[world.tick] = world.state_hash()
    assert logged == expected


def test_forked_and_inline_serialisation_write_the_same_log(tmp_path: Path) -> None:
    forked = saving_config(tmp_path / "f", serialize_in_child=True)
    inline = saving_config(tmp_path / "i", serialize_in_child=False)
    a = run_session(forked, 160, inputs=SPAWN)
    b = run_session(inline, 160, inputs=SPAWN)
    assert a.persistence is not None and b.persistence is not None
    assert a.persistence.stats()["serialized_in"] == "forked child"
    assert b.persistence.stats()["serialized_in"] == "main thread"

    def lines(root: Path) -> list[dict]:
        return [r for r in records(root / "saves" / "w") if r["kind"] != "marker"]

    assert lines(tmp_path / "f") == lines(tmp_path / "i")
    assert (snapshot_doc(tmp_path / "f" / "saves" / "w" / "world_state.json")
            == snapshot_doc(tmp_path / "i" / "saves" / "w" / "world_state.json"))


def test_a_serialising_child_that_dies_is_reported_and_the_world_runs_on(
        tmp_path: Path, capfd, monkeypatch) -> None:
    cfg = saving_config(tmp_path, serialize_in_child=True, hash_interval_ticks=5)
    opened = open_world(cfg)
    session = Session(cfg, opened.world, folder=opened.folder)
    # The child inherits this: it dies without writing anything.
    monkeypatch.setattr(World, "state_bytes", lambda self: os._exit(3))
    asyncio.run(session.loop.run(max_ticks=12, paced=False))
    monkeypatch.undo()
    assert session.world.tick == 12
    session.close()
    err = capfd.readouterr().err
    assert "the state of tick 5 was not saved" in err and "wait status" in err
    # The final snapshot (taken after the fault was fixed) still makes the world resumable.
    assert open_world(cfg).world.tick == 12


def test_a_state_saved_before_a_setting_existed_loads_and_hashes_as_saved() -> None:
    """A newer version adds settings; a world saved without them must still load, keep its
    hash (so its snapshots and logged hashes verify) and run with the default."""
    w = World.create(Config().replace(world={"starting_agents": 3, "size": [20, 20]}), seed=5)
    for _ in range(5):
        w.step()
    old = json.loads(w.state_bytes())
    del old["config"]["game"]["trade_range"]  # as if trade_range had not existed yet
    saved = json.dumps(old, separators=(",", ":")).encode()
    rebuilt = World.from_state(json.loads(saved))
    assert rebuilt.state_bytes() == saved
    assert rebuilt.rules.trade_range == Config().game.trade_range
    again = World.from_state(json.loads(rebuilt.state_bytes()))
    for world in (rebuilt, again):
        for _ in range(20):
            world.step()
    assert again.state_hash() == rebuilt.state_hash()
