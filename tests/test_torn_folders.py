"""Every torn state a save folder can be left in: resume works and keeps every intact line,
the world runs on across later range switches without destroying anything, and replay then
verifies what it can and says what it cannot.

The folders are real ones written by real runs, then torn by hand the way a crash, a power
cut or a failing disk leaves them (tests/test_crash.py kills the real program instead)."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.cli.replay import EXIT_OK, EXIT_PARTIAL, run_replay
from agent_world.config import Config
from agent_world.persistence import SaveError, SaveFolder, fork_world, open_world, spans
from tests.persistence_helpers import (
    event_files,
    file_lines,
    in_order,
    log_lines,
    records,
    reference_hash,
    run_session,
    saving_config,
    use_snapshot,
    without_speed,
)

Inputs = dict[int, list[tuple[str, dict[str, Any]]]]
INPUTS: Inputs = {3: [("spawn", {"kind": "agent", "name": "Visitor", "personality": "trader"})],
          30: [("spawn", {"kind": "gold", "qty": 30})],
          130: [("spawn", {"kind": "apple", "qty": 2})],
          210: [("spawn", {"kind": "agent", "name": "Late"})]}
FIRST = "0000000-0000249.jsonl"
SECOND = "0000250-0000499.jsonl"


def _world(tmp_path: Path, ticks: int = 260, **persistence: object) -> tuple[Config, Path]:
    cfg = saving_config(tmp_path, **persistence)
    run_session(cfg, ticks, inputs=INPUTS)
    return cfg, tmp_path / "saves" / "w"


def _last_tick(lines: list[bytes]) -> int:
    return max(orjson.loads(line)["tick"] for line in lines)


def _resume(cfg: Config, expect_tick: int, inputs: Inputs = INPUTS) -> list[str]:
    """Resume, check the world is exactly where an uninterrupted run with the same inputs
    is, and run on past two range switches."""
    opened = open_world(cfg)
    assert opened.world.tick == expect_tick, opened.notes
    assert opened.world.state_hash() == reference_hash(cfg, expect_tick, inputs)
    session = run_session(cfg, 300, opened=opened)
    assert session.world.state_hash() == reference_hash(cfg, expect_tick + 300, inputs)
    return opened.notes


def _replay(root: Path, cfg: Config, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The one-core verdict, after checking that a verification in spans reaches it too
    (these small worlds are split though they replay in no time)."""
    code = run_replay(root, cfg, to=None, playback=None)
    out = capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(spans, "SPLIT_BYTE_TICKS", 0)
        in_spans = run_replay(root, cfg, to=None, playback=None, workers=3)
    assert (in_spans, without_speed(capsys.readouterr().out)) == (code, without_speed(out.out))
    return code, out.out + out.err


def _fingerprint(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# -- the newest file ------------------------------------------------------------------------


@pytest.mark.parametrize("newest", [b"", b'{"tick":250,"seq":0,"ki'],
                         ids=["empty", "only-a-torn-first-line"])
def test_a_newest_file_with_no_whole_line_keeps_the_finished_range(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], newest: bytes) -> None:
    """A power cut just after the log moved to a new file: the new file holds nothing
    whole, so the world resumes inside the finished (gzipped) range before it."""
    cfg, root = _world(tmp_path)
    events = root / "events"
    finished = file_lines(events / f"{FIRST}.gz")
    (events / SECOND).write_bytes(newest)
    use_snapshot(root, 200)
    notes = _resume(cfg, _last_tick(finished))
    assert any("reopened the finished range" in n for n in notes), notes
    assert event_files(root) == [f"{FIRST}.gz", f"{SECOND}.gz", "0000500-0000749.jsonl"]
    after = file_lines(events / f"{FIRST}.gz")
    assert in_order(finished, after) and len(after) == len(finished) + 1  # + resume marker
    assert in_order(finished, log_lines(root))
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_OK, out
    assert out.startswith(f"OK: replayed ticks 1..{_last_tick(finished) + 300} ")


def test_a_torn_last_line_is_cut_and_nothing_else(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = _world(tmp_path)
    newest = root / "events" / SECOND
    intact = file_lines(root / "events" / f"{FIRST}.gz") + file_lines(newest)
    with newest.open("ab") as f:
        f.write(b'{"tick":261,"seq":0,"kind":"inp')
    use_snapshot(root, 200)
    notes = _resume(cfg, _last_tick(intact))
    assert any("cut a torn line (31 bytes)" in n for n in notes), notes
    assert in_order(intact, log_lines(root))
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_OK, out


# -- both a plain and a gzip file of one range -------------------------------------------------


def _both(lines: list[bytes], variant: str) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(gzip file lines, plain file lines, what the range holds) for each variant."""
    half = len(lines) // 2
    marker = orjson.dumps({"tick": lines and orjson.loads(lines[-1])["tick"], "seq": 0,
                           "kind": "marker", "type": "resume",
                           "at": "2030-01-01T00:00:00+00:00"}) + b"\n"
    return {
        # A compression or a reopening interrupted between the rename and the removal.
        "identical": (lines, lines, lines),
        "plain-is-a-prefix": (lines, lines[:half], lines),
        "gz-is-a-prefix": (lines[:half], lines, lines),
        # Each holds lines the other lacks (overlapping by three).
        "different": (lines[:half], lines[half - 3:], lines),
        # What older versions left: a new plain file beside a finished range.
        "older-version": (lines, [marker], [*lines, marker]),
    }[variant]


@pytest.mark.parametrize("variant", ["identical", "plain-is-a-prefix", "gz-is-a-prefix",
                                     "different", "older-version"])
def test_a_range_with_both_files_holds_every_line_of_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], variant: str) -> None:
    cfg, root = _world(tmp_path)
    events = root / "events"
    lines = file_lines(events / f"{FIRST}.gz")
    in_gz, in_plain, expected = _both(lines, variant)
    (events / f"{FIRST}.gz").write_bytes(gzip.compress(b"".join(in_gz)))
    (events / FIRST).write_bytes(b"".join(in_plain))
    use_snapshot(root, 200)  # the resume reads the range
    before = _fingerprint(root)
    assert log_lines(root)[:len(expected)] == expected  # the reader merges...
    assert _fingerprint(root) == before  # ...without touching the folder
    newest = file_lines(events / SECOND)
    _resume(cfg, _last_tick(newest))
    # Settled, then compressed again at the next range switch: one file with every line.
    assert event_files(root) == [f"{FIRST}.gz", f"{SECOND}.gz", "0000500-0000749.jsonl"]
    assert file_lines(events / f"{FIRST}.gz") == expected
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_OK, out


# -- leftovers of interrupted writes ----------------------------------------------------------


def test_leftover_temporary_files_are_removed_and_the_authority_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A crash during a compression (the plain file and half a .gz.tmp), during a reopening
    (half a .jsonl.tmp beside the .gz), and during snapshot and meta writes."""
    cfg, root = _world(tmp_path, ticks=560)
    events = root / "events"
    gz = (events / f"{FIRST}.gz").read_bytes()
    lines = file_lines(events / f"{FIRST}.gz")
    (events / FIRST).write_bytes(b"".join(lines))  # compression interrupted: plain is it
    (events / f"{FIRST}.gz").unlink()
    (events / f".{FIRST}.gz.tmp").write_bytes(gz[: len(gz) // 2])
    second = file_lines(events / f"{SECOND}.gz")
    (events / f".{SECOND}.tmp").write_bytes(b"".join(second[:5]))  # reopening interrupted
    (root / ".world_state.json.tmp").write_bytes((root / "world_state.json").read_bytes()[:99])
    (root / ".meta.json.tmp").write_bytes(b'{"format": 1, "wor')
    (root / "snapshots" / ".0000000600.json.gz.tmp").write_bytes(b"\x1f\x8b\x08")
    notes = _resume(cfg, 560)
    removed = [n for n in notes if n.startswith("removed ")]
    assert len(removed) == 5, notes
    assert not list(root.rglob(".*.tmp"))
    assert file_lines(events / f"{FIRST}.gz") == lines  # compressed again, whole
    assert file_lines(events / f"{SECOND}.gz") == second
    assert orjson.loads((root / "meta.json").read_bytes())["last_tick"] == 860
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_OK, out


# -- damaged gzip files -----------------------------------------------------------------------


def _decodable_lines(data: bytes) -> list[bytes]:
    """Every whole JSON line a byte-at-a-time decoder gets out of damaged gzip data, up to
    the first line that is not a JSON object (an independent reference for salvage)."""
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    for i in range(len(data)):
        try:
            out += decoder.decompress(data[i:i + 1])
        except zlib.error:
            break
    kept = []
    for line in bytes(out).split(b"\n")[:-1]:
        try:
            if not isinstance(orjson.loads(line), dict):
                break
        except orjson.JSONDecodeError:
            break
        kept.append(line + b"\n")
    return kept


def _damage(path: Path, how: str) -> bytes:
    data = path.read_bytes()
    at = len(data) * 3 // 5
    if how == "truncated":
        damaged = data[:at]
    else:  # bytes overwritten in the middle
        damaged = data[:at] + bytes(b ^ 0x5A for b in data[at:at + 64]) + data[at + 64:]
    path.write_bytes(damaged)
    return damaged


def test_a_damaged_middle_file_does_not_stop_a_resume_from_a_later_snapshot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = _world(tmp_path, ticks=800)
    damaged = root / "events" / f"{SECOND}.gz"
    data = _damage(damaged, "truncated")
    _resume(cfg, 800)
    assert damaged.read_bytes() == data  # resume did not need it, and left it alone
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_PARTIAL, out
    kept = _decodable_lines(data)
    reached = _last_tick(kept)
    assert out.startswith(f"PARTLY VERIFIED: replayed ticks 1..{reached} of 1..1100 ")
    assert (f"not verified: ticks {reached + 1}..1100: {SECOND}.gz is damaged after line "
            f"{len(kept)}") in out
    assert "later event-log file(s)" in out
    assert damaged.read_bytes() == data  # nor did replay


@pytest.mark.parametrize("how", ["truncated", "overwritten"])
def test_a_damaged_file_the_resume_needs_keeps_every_intact_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    cfg, root = _world(tmp_path, ticks=800)
    events = root / "events"
    data = _damage(events / f"{SECOND}.gz", how)
    later = {name: (events / name).read_bytes() for name in event_files(root)
             if not name.startswith(SECOND) and name > SECOND}
    use_snapshot(root, 200)
    kept = _decodable_lines(data)
    notes = _resume(cfg, _last_tick(kept))
    assert any(f"{SECOND}.gz is damaged" in n for n in notes), notes
    assert (events / f"{SECOND}.gz.damaged").read_bytes() == data
    for name, content in later.items():  # set aside, untouched
        assert (events / f"{name}.orphaned").read_bytes() == content
    now = file_lines(events / f"{SECOND}.gz")
    assert now[:len(kept)] == kept  # every intact line before the damage, then the new run
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_PARTIAL, out
    assert out.startswith(f"PARTLY VERIFIED: replayed ticks 1..{_last_tick(kept) + 300} ")
    assert f"not verified: {SECOND}.gz.damaged: set aside after damage" in out
    assert "0000750-0000999.jsonl.orphaned: set aside after damage" in out


def test_a_damaged_last_file_before_the_snapshot_leaves_a_gap_marker(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The newest file was lost entirely and the finished one before it is damaged before
    the snapshot's tick: the world resumes from the snapshot, and the ticks whose lines are
    gone are recorded, so replay stops before them instead of diverging."""
    cfg, root = _world(tmp_path)
    events = root / "events"
    (events / SECOND).unlink()
    whole = file_lines(events / f"{FIRST}.gz")
    data = (events / f"{FIRST}.gz").read_bytes()
    (events / f"{FIRST}.gz").write_bytes(data[: len(data) * 2 // 5])
    kept = _decodable_lines(data[: len(data) * 2 // 5])
    good = _last_tick(kept)
    assert good < 200
    use_snapshot(root, 200)
    # The input of tick 211 was in the lost part: the world runs on without it.
    notes = _resume(cfg, 200, {t: i for t, i in INPUTS.items() if t < 200})
    assert any(f"the log lost ticks {good + 1}..200" in n for n in notes), notes
    gap = [r for r in records(root) if r.get("type") == "gap"]
    assert [(g["tick"], g["from"]) for g in gap] == [(200, good + 1)]
    assert in_order(kept, log_lines(root)) and kept == whole[:len(kept)]
    assert open_world(cfg).world.tick == 500  # and it resumes again from there
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_PARTIAL, out
    assert out.startswith(f"PARTLY VERIFIED: replayed ticks 1..{good} of 1..500 ")
    assert f"not verified: ticks {good + 1}..500: the log lost ticks {good + 1}..200" in out
    # Should every snapshot and seek point but the first be lost too, no resume can cross
    # the gap: it says how to carry on from the last tick the log reaches.
    (root / "world_state.json").unlink()
    saved = SaveFolder(root)
    for tick, path in [*saved.history()[1:], *saved.seek_points()]:
        assert tick > 0
        path.unlink()
    with pytest.raises(SaveError, match=rf"cannot resume world 'w': its newest usable "
                       rf"snapshot is at tick 0, and the log lost ticks {good + 1}..200 .*"
                       rf"replay {root} --to {good} --fork NEW_NAME"):
        open_world(cfg)
    rescued = fork_world(SaveFolder.open(root), good, "rescue", cfg)
    assert rescued.world.state_hash() == reference_hash(cfg, good, INPUTS)
    rescued.close()


# -- missing parts ----------------------------------------------------------------------------


def test_a_missing_events_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = _world(tmp_path)
    shutil.rmtree(root / "events")
    notes = _resume(cfg, 260)
    assert any("events/ was missing" in n for n in notes), notes
    assert any("the log lost ticks 1..260 (the event log was missing)" in n for n in notes)
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_PARTIAL, out
    assert out.startswith("PARTLY VERIFIED: replayed no ticks of 1..560 ")
    assert "not verified: ticks 1..560: the log lost ticks 1..260" in out


@pytest.mark.parametrize("state", ["missing", "torn", "garbage"])
def test_a_missing_or_damaged_world_state_falls_back_to_the_snapshots(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], state: str) -> None:
    cfg, root = _world(tmp_path)
    world_state = root / "world_state.json"
    (root / "snapshots" / "0000000260.json.gz").unlink()  # the newest is then tick 200
    if state == "missing":
        world_state.unlink()
    elif state == "torn":
        world_state.write_bytes(world_state.read_bytes()[:3000])
    else:
        world_state.write_bytes(b"\0" * 4096)
    notes = _resume(cfg, 260)
    assert any("world_state.json" in n for n in notes), notes
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_OK, out


# -- a legitimate resume inside a finished range ----------------------------------------------


def test_with_events_none_a_resume_inside_a_finished_range_logs_where_replay_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With only inputs, checks and markers logged, the last logged tick can lie well
    before the end of a finished range; the inputs of the ticks after it belong there."""
    cfg = saving_config(tmp_path, events="none", hash_interval_ticks=50)
    early = {**INPUTS, 239: [("spawn", {"kind": "gold", "qty": 7})]}
    run_session(cfg, 260, inputs=early)
    root = tmp_path / "saves" / "w"
    events = root / "events"
    finished = file_lines(events / f"{FIRST}.gz")
    assert _last_tick(finished) == 240
    (events / SECOND).write_bytes(b"")  # the power cut
    use_snapshot(root, 200)
    opened = open_world(cfg)
    assert opened.world.tick == 240
    later = {245: [("spawn", {"kind": "agent", "name": "Inside"})]}
    session = run_session(cfg, 300, opened=opened, inputs=later)
    assert session.world.state_hash() == reference_hash(cfg, 540, early | later)
    now = file_lines(events / f"{FIRST}.gz")
    assert in_order(finished, now)
    assert any(b'"name":"Inside"' in line for line in now)  # logged in its own range
    code, out = _replay(root, cfg, capsys)
    assert code == EXIT_OK, out
    assert out.startswith("OK: replayed ticks 1..540 ")
