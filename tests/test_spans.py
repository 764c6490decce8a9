"""A whole-log verification split into spans at saved states, replayed in worker processes,
gives exactly the verdict of one replay from the first snapshot: the same counts, the same
first divergence, and the one-core replay whenever the log is not regular enough to split."""

from __future__ import annotations

import gzip
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.cli.replay import EXIT_DIVERGED, EXIT_OK, EXIT_PARTIAL, run_replay, sandboxed
from agent_world.config import Config
from agent_world.persistence import DivergenceError, SaveFolder, replay, spans
from agent_world.persistence.seekpoints import write_state_file
from agent_world.persistence.snapshots import load_first_snapshot, load_snapshot_file
from agent_world.persistence.spans import (
    MIN_SPAN_TICKS,
    SpanVerdict,
    plan_spans,
    verify_in_spans,
)
from agent_world.persistence.worlds import Setup
from tests.persistence_helpers import run_session, saving_config, without_speed

TICKS = 900
INPUTS = {3: [("spawn", {"kind": "agent", "name": "Visitor", "personality": "trader"})],
          420: [("spawn", {"kind": "gold", "qty": 30})],
          650: [("spawn", {"kind": "apple", "qty": 2})]}


REAL_SPLIT_BYTE_TICKS = spans.SPLIT_BYTE_TICKS


@pytest.fixture(autouse=True)
def split_small_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """These worlds are small enough to replay on one core in no time: split them anyway,
    as a large world's log would be."""
    monkeypatch.setattr(spans, "SPLIT_BYTE_TICKS", 0)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Config, Path]:
    """A world of 900 ticks: snapshots every 300, seek points every 100, hashes every 10."""
    tmp = tmp_path_factory.mktemp("spans")
    cfg = saving_config(tmp, "w", snapshot_interval_ticks=300, seek_interval_ticks=100,
                        seek_target_ms=0)
    run_session(cfg, TICKS, inputs=INPUTS)
    return cfg, tmp / "saves" / "w"


def _copy(root: Path, tmp_path: Path) -> Path:
    """A copy of the recorded folder to damage."""
    return Path(shutil.copytree(root, tmp_path / "w"))


def _forge(path: Path, tick: int, cfg: Config) -> None:
    """Rewrite a saved state as another timeline's: whole (it matches its own hash), but
    not the state the log leads to."""
    loaded = load_snapshot_file(path, cfg)
    state = orjson.loads(loaded.world.state_bytes())
    loaded.world.close()
    state["next_offer"] += 1
    write_state_file(path, tick, orjson.dumps(state, option=orjson.OPT_NON_STR_KEYS))


def _one_core(root: Path, cfg: Config) -> tuple[Any, int]:
    folder = SaveFolder.open(root)
    world = load_first_snapshot(folder, cfg).world
    try:
        result = replay(world, folder, check_snapshots=True, end=TICKS)
        return result, world.tick
    finally:
        world.close()


def _replay_text(root: Path, cfg: Config, capsys: pytest.CaptureFixture[str], *,
                 workers: int, to: int | None = None) -> tuple[int, str, str]:
    """Exit status, verdict (without its speed) and stderr of ``replay`` from the start."""
    code = run_replay(root, cfg, to=to, playback=None, workers=workers, from_start=True)
    out = capsys.readouterr()
    return code, without_speed(out.out), out.err


def _in_spans(root: Path, cfg: Config, capsys: pytest.CaptureFixture[str], *, workers: int,
              to: int | None = None) -> tuple[int, str, str]:
    """The replay with ``workers``, after checking that one core prints the same verdict
    (stderr may add only the note that the spans went back to one core)."""
    split = _replay_text(root, cfg, capsys, workers=workers, to=to)
    alone = _replay_text(root, cfg, capsys, workers=1, to=to)
    assert split[:2] == alone[:2]
    notes = [line for line in split[2].splitlines(keepends=True)
             if not line.startswith("note: replaying on one core: ")]
    assert "".join(notes) == alone[2]
    return split


def test_spans_split_at_saved_states_at_least_a_minimum_apart(
        recorded: tuple[Config, Path]) -> None:
    _cfg, root = recorded
    folder = SaveFolder.open(root)
    spans = plan_spans(folder, 0, TICKS, 3)
    assert [s.start_tick for s in spans] == [0, 300, 600]
    assert [s.until for s in spans] == [300, 600, None]
    assert spans[0].start is None  # the first snapshot, as a replay from the start
    saved = dict(folder.saved_states())
    assert all(saved[s.start_tick] == s.start for s in spans[1:])
    many = plan_spans(folder, 0, TICKS, 50)
    starts = [s.start_tick for s in many]
    assert len(many) == TICKS // MIN_SPAN_TICKS
    assert all(b - a >= MIN_SPAN_TICKS for a, b in pairwise(starts))
    assert TICKS - starts[-1] >= MIN_SPAN_TICKS
    assert len(plan_spans(folder, 0, 2 * MIN_SPAN_TICKS - 1, 4)) == 1


def test_a_log_that_replays_in_no_time_is_not_split(recorded: tuple[Config, Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve agents over 900 ticks replay in a fraction of a second on one core; starting
    processes for them would only slow the verification down."""
    _cfg, root = recorded
    monkeypatch.setattr(spans, "SPLIT_BYTE_TICKS", REAL_SPLIT_BYTE_TICKS)
    folder = SaveFolder.open(root)
    assert len(plan_spans(folder, 0, TICKS, 8)) == 1
    state = folder.saved_states()[-1][1].stat().st_size
    monkeypatch.setattr(spans, "SPLIT_BYTE_TICKS", TICKS * state)
    assert len(plan_spans(folder, 0, TICKS, 8)) == 4  # exactly enough work: split


def test_spans_count_exactly_what_one_replay_from_the_start_counts(
        recorded: tuple[Config, Path]) -> None:
    cfg, root = recorded
    verdict = verify_in_spans(SaveFolder.open(root), cfg, workers=3)
    assert isinstance(verdict, SpanVerdict), verdict
    alone, reached = _one_core(root, cfg)
    assert verdict.spans == 3
    assert verdict.reached == reached == TICKS
    got = verdict.result
    assert (got.ticks, got.inputs, got.checks, got.snapshots_checked) == \
        (alone.ticks, alone.inputs, alone.checks, alone.snapshots_checked) == (900, 3, 90, 3)
    assert (got.last_check_tick, got.last_snapshot_tick, got.last_logged_tick) == \
        (alone.last_check_tick, alone.last_snapshot_tick, alone.last_logged_tick)


def _rewrite_check(root: Path, tick: int) -> None:
    """Change the state hash logged for ``tick`` in whichever event-log file holds it."""
    for path in sorted((root / "events").iterdir()):
        packed = path.suffix == ".gz"
        data = gzip.decompress(path.read_bytes()) if packed else path.read_bytes()
        lines = data.splitlines(keepends=True)
        for i, line in enumerate(lines):
            record = orjson.loads(line)
            if record["tick"] == tick and record["kind"] == "check":
                record["hash"] = "0" * 32
                lines[i] = orjson.dumps(record) + b"\n"
                data = b"".join(lines)
                path.write_bytes(gzip.compress(data) if packed else data)
                return
    raise AssertionError(f"no check line for tick {tick}")


@pytest.mark.parametrize("tick", [250, 480, 870])
def test_the_first_divergence_is_found_in_whichever_span_holds_it(
        recorded: tuple[Config, Path], tmp_path: Path, tick: int) -> None:
    cfg, source = recorded
    root = _copy(source, tmp_path)
    _rewrite_check(root, tick)
    with pytest.raises(DivergenceError) as alone:
        _one_core(root, cfg)
    with pytest.raises(DivergenceError) as split:
        verify_in_spans(SaveFolder.open(root), cfg, workers=3)
    assert split.value.tick == alone.value.tick == tick
    assert split.value.expected == alone.value.expected == "0" * 32
    assert split.value.actual == alone.value.actual


def test_a_saved_state_that_is_not_the_replayed_one_sends_the_replay_to_one_core(
        recorded: tuple[Config, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A seek point that matches its own hash but not the log (another timeline's): a span
    started from it proves nothing, so the whole log is replayed from the start."""
    cfg, source = recorded
    root = _copy(source, tmp_path)
    (root / "snapshots" / "0000000300.json.gz").unlink()  # so 400 is where a span starts
    _forge(root / "seek" / "0000000400.json.gz", 400, cfg)
    verdict = verify_in_spans(SaveFolder.open(root), cfg, workers=2)
    assert isinstance(verdict, str)
    assert "the saved state of tick 400 is not the state the replay reaches there" in verdict
    code, out, err = _in_spans(root, cfg, capsys, workers=2)
    assert code == EXIT_OK, out + err
    assert "note: replaying on one core: the saved state of tick 400" in err


def test_an_unreadable_line_inside_a_span_gives_the_one_core_verdict(
        recorded: tuple[Config, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cfg, source = recorded
    root = _copy(source, tmp_path)
    chunk = root / "events" / "0000250-0000499.jsonl.gz"
    lines = gzip.decompress(chunk.read_bytes()).splitlines(keepends=True)
    lines.insert(40, b"\0\0\0\0 not json\n")
    chunk.write_bytes(gzip.compress(b"".join(lines)))
    code, out, err = _in_spans(root, cfg, capsys, workers=3)
    assert code == EXIT_PARTIAL
    assert "note: replaying on one core: part of the log is unreadable (ticks 1..300)" in err
    assert "not verified: skipped an unreadable line in 0000250-0000499.jsonl (line 41)" in out


def test_damage_in_the_last_span_is_reported_as_one_core_reports_it(
        recorded: tuple[Config, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cfg, source = recorded
    root = _copy(source, tmp_path)
    with (root / "events" / "0000750-0000999.jsonl").open("ab") as f:
        f.write(b'{"tick":901,"seq":1,"kind":"input","ty')
    code, out, err = _in_spans(root, cfg, capsys, workers=3)
    assert code == EXIT_PARTIAL
    assert "replaying on one core" not in err
    assert "not verified: skipped a torn last line in 0000750-0000999.jsonl" in out


def test_a_contradicting_snapshot_at_a_span_boundary_is_a_divergence(
        recorded: tuple[Config, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cfg, source = recorded
    root = _copy(source, tmp_path)
    _forge(root / "snapshots" / "0000000300.json.gz", 300, cfg)
    code, _out, err = _in_spans(root, cfg, capsys, workers=3)
    assert code == EXIT_DIVERGED
    assert err.startswith("DIVERGED at tick 300: 0000000300.json.gz records state ")


def test_spans_run_their_worlds_with_the_ability_sandbox(
        recorded: tuple[Config, Path], capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = recorded
    code = run_replay(root, cfg, to=None, playback=None, workers=2, setup_factory=sandboxed)
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert out.startswith("OK: replayed ticks 1..900 (900 ticks, 3 inputs, 90 state hashes ")
    assert ", in 2 processes" in out.splitlines()[0]


def test_a_verification_up_to_a_tick_splits_too_and_ends_on_its_hash(
        recorded: tuple[Config, Path], capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = recorded
    folder = SaveFolder.open(root)
    assert [s.until for s in plan_spans(folder, 0, 750, 3, 750)] == [200, 500, 750]
    code, out, _err = _in_spans(root, cfg, capsys, workers=3, to=750)
    assert code == EXIT_OK, out
    assert out.startswith("OK: replayed ticks 1..750 (750 ticks, 3 inputs, 75 state hashes")
    assert re.search(r"^tick 750 state_hash [0-9a-f]{32}$", out, re.MULTILINE)


@contextmanager
def _killed(_config: Config) -> Iterator[Setup]:
    """A span's process that dies as the kernel's out-of-memory killer would leave it."""
    os._exit(137)
    yield lambda _world: None  # pragma: no cover - never reached


def test_a_span_process_that_dies_sends_the_replay_to_one_core(
        recorded: tuple[Config, Path], capsys: pytest.CaptureFixture[str]) -> None:
    cfg, root = recorded
    code = run_replay(root, cfg, to=None, playback=None, workers=2, setup_factory=_killed)
    out = capsys.readouterr()
    assert code == EXIT_OK, out.out + out.err
    assert "note: replaying on one core: a span's process failed (BrokenProcessPool" in out.err
    assert out.out.startswith("OK: replayed ticks 1..900 (900 ticks, 3 inputs, 90 state ")
    assert "processes" not in out.out
