"""Replay says exactly what it verified and what it did not, and its exit status follows:
0 OK (everything), 3 PARTLY VERIFIED, 1 DIVERGED, 2 bad usage. And salvaging a damaged
gzip file keeps every intact line before the damage."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from agent_world.cli.replay import EXIT_DIVERGED, EXIT_OK, EXIT_PARTIAL, run_replay
from agent_world.config import Config
from agent_world.persistence import SaveFolder
from agent_world.persistence.eventlog import LogReader, salvage_damaged
from tests.persistence_helpers import file_lines, records, run_session, saving_config

ROOT = Path(__file__).resolve().parent.parent
INPUTS = {3: [("spawn", {"kind": "agent", "name": "Visitor", "personality": "trader"})],
          30: [("spawn", {"kind": "gold", "qty": 30})],
          130: [("spawn", {"kind": "apple", "qty": 2})]}


def _saved(tmp_path: Path, ticks: int, name: str = "w",
           inputs: dict[int, list[tuple[str, dict[str, Any]]]] | None = None,
           **persistence: object) -> tuple[Config, Path]:
    cfg = saving_config(tmp_path, name, **persistence)
    run_session(cfg, ticks, inputs=INPUTS if inputs is None else inputs)
    return cfg, tmp_path / "saves" / name


def _replay(root: Path, cfg: Config, capsys: pytest.CaptureFixture[str],
            to: int | None = None, *, from_start: bool = False) -> tuple[int, str, str]:
    code = run_replay(root, cfg, to=to, playback=None, from_start=from_start)
    out = capsys.readouterr()
    return code, out.out, out.err


def _main(tmp_path: Path, *args: str, cfg: Config | None = None
          ) -> subprocess.CompletedProcess[str]:
    extra: list[str] = []
    if cfg is not None:
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(cfg.to_dict()))
        extra = ["--config", str(config)]
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args, *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL)


def test_a_whole_log_is_ok_and_says_what_was_checked(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = _saved(tmp_path, 260)
    code, out, _err = _replay(root, cfg, capsys)
    assert code == EXIT_OK
    first, second = out.splitlines()[:2]
    assert first.startswith("OK: replayed ticks 1..260 (260 ticks, 3 inputs, 26 state hashes "
                            "verified) in ")
    # Snapshots 100, 200 and 260 (the first, at tick 0, is where the replay starts).
    assert second == ("  checked: 26 logged state hashes, the last at tick 260; 3 snapshots, "
                      "the last at tick 260")


def test_a_damaged_middle_file_is_partly_verified_on_the_command_line(tmp_path: Path) -> None:
    """The hostile tester's case: before, this printed OK and exited 0."""
    cfg, root = _saved(tmp_path, 800)
    gz = root / "events" / "0000250-0000499.jsonl.gz"
    gz.write_bytes(gz.read_bytes()[:-400])
    done = _main(tmp_path, "replay", str(root), cfg=cfg)
    assert done.returncode == EXIT_PARTIAL, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PARTLY VERIFIED: replayed ticks 1..")
    reached = int(lines[0].split("..")[1].split(" ")[0])
    assert 250 <= reached < 500 and " of 1..800 " in lines[0]
    assert lines[1].startswith("  checked: ")
    # The last hash verified: the last one logged before the cut (when the cut falls among
    # the events of a hashed tick, before its hash line, that hash is lost with the rest).
    last = int(lines[1].split("the last at tick ")[1].split(";")[0])
    assert last % 10 == 0 and reached - 10 <= last <= reached
    assert lines[2].startswith(f"  not verified: ticks {reached + 1}..800: "
                               "0000250-0000499.jsonl.gz is damaged after line ")
    assert lines[3] == ("  not verified: 2 later event-log file(s) after "
                        "0000250-0000499.jsonl.gz cannot be used: the ticks between are "
                        "missing")
    assert "OK" not in done.stdout


def test_a_bare_world_name_is_looked_up_in_the_saves_folder(tmp_path: Path) -> None:
    cfg, _root = _saved(tmp_path, 40, name="valley")
    done = _main(tmp_path, "replay", "valley", cfg=cfg)
    assert done.returncode == EXIT_OK, done.stderr
    assert done.stdout.startswith("OK: replayed ticks 1..40 ")
    missing = _main(tmp_path, "replay", "nowhere", cfg=cfg)
    assert missing.returncode == 2
    lines = missing.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: nowhere does not exist, and "
                                                   "neither does ")
    assert "python main.py worlds" in lines[0]


def test_a_torn_last_line_is_not_verified(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = _saved(tmp_path, 120)
    with (root / "events" / "0000000-0000249.jsonl").open("ab") as f:
        f.write(b'{"tick":121,"seq":1,"kind":"input","ty')
    code, out, _err = _replay(root, cfg, capsys)
    assert code == EXIT_PARTIAL
    assert out.startswith("PARTLY VERIFIED: replayed ticks 1..120 of 1..120 ")
    assert ("not verified: skipped a torn last line in 0000000-0000249.jsonl (38 bytes): the "
            "process stopped while writing it") in out


def test_an_unreadable_line_is_skipped_and_not_verified(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = _saved(tmp_path, 120, events="none")
    chunk = root / "events" / "0000000-0000249.jsonl"
    lines = chunk.read_bytes().splitlines(keepends=True)
    lines.insert(3, b"\0\0\0\0 not json\n")  # what a failing disk can leave
    chunk.write_bytes(b"".join(lines))
    code, out, _err = _replay(root, cfg, capsys)
    assert code == EXIT_PARTIAL
    assert out.startswith("PARTLY VERIFIED: replayed ticks 1..120 of 1..120 ")
    assert "not verified: skipped an unreadable line in 0000000-0000249.jsonl (line 4)" in out


def test_files_set_aside_after_damage_are_not_verified(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = _saved(tmp_path, 120)
    (root / "events" / "0000250-0000499.jsonl.orphaned").write_bytes(b"{}\n")
    code, out, _err = _replay(root, cfg, capsys)
    assert code == EXIT_PARTIAL
    assert ("not verified: 0000250-0000499.jsonl.orphaned: set aside after damage; it is not "
            "part of the log and was not replayed") in out


def test_ticks_without_lines_are_replayed_up_to_the_snapshot_and_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With only inputs and checks logged, a world saved at tick 237 has no line after tick
    200 but its snapshot's: replay steps the quiet ticks and compares the snapshot."""
    cfg, root = _saved(tmp_path, 237, events="none", hash_interval_ticks=50)
    chunk = root / "events" / "0000000-0000249.jsonl"
    kept = [line for line in file_lines(chunk) if b'"shutdown"' not in line]
    chunk.write_bytes(b"".join(kept))
    assert max(orjson.loads(line)["tick"] for line in kept) == 200
    code, out, _err = _replay(root, cfg, capsys)
    assert code == EXIT_OK, out
    assert out.startswith("OK: replayed ticks 1..237 ")
    assert "3 snapshots, the last at tick 237" in out


def test_a_snapshot_that_contradicts_the_log_is_a_divergence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two processes writing one world leave a whole snapshot of another timeline."""
    cfg, root = _saved(tmp_path / "a", 150)
    _other, other = _saved(tmp_path / "b", 150, inputs={})
    shutil.copy(other / "snapshots" / "0000000100.json.gz",
                root / "snapshots" / "0000000100.json.gz")
    code, _out, err = _replay(root, cfg, capsys)
    assert code == EXIT_DIVERGED
    assert err.startswith("DIVERGED at tick 100: 0000000100.json.gz records state ")
    assert "the snapshot contradicts the event log" in err


def test_to_inside_the_damage_is_partial_and_past_the_log_is_usage(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = _saved(tmp_path, 800)
    gz = root / "events" / "0000250-0000499.jsonl.gz"
    gz.write_bytes(gz.read_bytes()[:-400])
    assert _replay(root, cfg, capsys, to=200, from_start=True)[0] == EXIT_OK  # all there
    code, out, _err = _replay(root, cfg, capsys, to=700, from_start=True)
    assert code == EXIT_PARTIAL and " of 1..700 " in out
    # From the nearest saved state the damage lies behind: what --to asks for is verified.
    code, out, _err = _replay(root, cfg, capsys, to=750)
    assert code == EXIT_OK and out.startswith("OK: replayed ticks 701..750 "), out
    assert "  from: the snapshot of tick 700 (0000000700.json.gz)" in out
    code, _out, err = _replay(root, cfg, capsys, to=900)
    assert code == 2 and "ends at tick 800" in err


# -- salvage -------------------------------------------------------------------------------------


def _gzip_log(folder: SaveFolder, lines: list[bytes]) -> Path:
    folder.events_dir.mkdir(parents=True, exist_ok=True)
    path = folder.events_dir / "0000000-0000249.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(lines)))
    return path


def _line(tick: int, seq: int) -> bytes:
    return orjson.dumps({"tick": tick, "seq": seq, "kind": "event", "type": "say",
                         "text": f"line {tick}.{seq} " + "x" * (tick % 40)}) + b"\n"


def _valid_prefix(got: list[bytes], lines: list[bytes]) -> int:
    n = 0
    for a, b in zip(got, lines, strict=False):
        if a != b:
            break
        n += 1
    return n


def _damaged(clean: bytes, at: int) -> bytes:
    data = bytearray(clean)
    data[at:at + 64] = bytes(b ^ 0x5A for b in data[at:at + 64])
    return bytes(data)


def _line_iteration(path: Path) -> list[bytes]:
    """What gzip.open's line iteration gets out of a damaged file before it fails."""
    got: list[bytes] = []
    with pytest.raises((EOFError, OSError, zlib.error)), gzip.open(path, "rb") as f:
        got.extend(f)
    return got


def _byte_by_byte(data: bytes, lines: list[bytes]) -> int:
    """How many whole lines one byte at a time decodes before the corruption."""
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    decoded = bytearray()
    for i in range(len(data)):
        try:
            decoded += decoder.decompress(data[i:i + 1])
        except zlib.error:
            break
    return _valid_prefix([line + b"\n" for line in bytes(decoded).split(b"\n")], lines)


def test_salvage_keeps_every_line_decoded_before_corruption(tmp_path: Path) -> None:
    """Decoding in small pieces: a corrupt byte loses only what comes after it, not the
    buffer of lines decoded before it (gzip.open's line iteration, which salvage used,
    loses what it had decoded of the failing block). Where that shows depends on where the
    damage falls in the compressed stream (the log's bytes differ from run to run: it holds
    the time it started), so the damage is put where the line iteration loses lines."""
    _cfg, root = _saved(tmp_path, 260)
    folder = SaveFolder(root)
    path = folder.events_dir / "0000000-0000249.jsonl.gz"
    lines = file_lines(path)
    clean = path.read_bytes()
    for share in range(60, 95, 3):  # percent of the way into the file
        data = _damaged(clean, len(clean) * share // 100)
        path.write_bytes(data)
        reference = _byte_by_byte(data, lines)
        if _valid_prefix(_line_iteration(path), lines) < reference:
            break
    else:
        pytest.fail("no place in the file where gzip's line iteration loses lines")
    salvage = salvage_damaged(folder, path)
    kept = file_lines(folder.events_dir / "0000000-0000249.jsonl")
    # None of the lines decoded before the damage is lost. (Past them, bytes decoded from the
    # damage before zlib noticed it may read as a line: they cannot be told apart, and the
    # save format says so.)
    assert len(kept) >= reference and kept[:reference] == lines[:reference]
    assert salvage.last_tick == orjson.loads(kept[-1])["tick"]
    assert (folder.events_dir / "0000000-0000249.jsonl.gz.damaged").read_bytes() == data


def test_salvage_stops_at_the_first_line_that_is_not_a_json_object(tmp_path: Path) -> None:
    folder = SaveFolder(tmp_path / "w")
    lines = [_line(t, 0) for t in range(100)]
    garbled = [*lines[:40], b"\x07\x00 garbage\n", *lines[40:]]
    path = _gzip_log(folder, garbled)
    path.write_bytes(path.read_bytes()[:-30])  # and damaged near its end
    salvage_damaged(folder, path)
    assert file_lines(folder.events_dir / "0000000-0000249.jsonl") == lines[:40]


def test_an_unreadable_line_in_a_whole_gzip_file_is_skipped_not_fatal(tmp_path: Path) -> None:
    folder = SaveFolder(tmp_path / "w")
    lines = [_line(t, 0) for t in range(100)]
    _gzip_log(folder, [*lines[:40], b"not json\n", *lines[40:]])
    reader = LogReader(folder)
    assert [orjson.dumps(r) + b"\n" for r in reader] == lines
    assert reader.stopped_at is None
    assert reader.problems == ["skipped an unreadable line in 0000000-0000249.jsonl (line 41)"]


def test_the_reader_never_changes_the_folder(tmp_path: Path) -> None:
    _cfg, root = _saved(tmp_path, 260)
    events = root / "events"
    gz = events / "0000000-0000249.jsonl.gz"
    (events / "0000000-0000249.jsonl").write_bytes(b"".join(file_lines(gz)[:10]))
    gz.write_bytes(gz.read_bytes()[:-100])
    before = {p.name: p.read_bytes() for p in events.iterdir()}
    records(root)
    assert {p.name: p.read_bytes() for p in events.iterdir()} == before
