"""Trajectories out (issue 34 item 5): every logged decision of a real save folder with the
observation it answered, its reasoning and the outcome that followed, as JSON Lines and as
Parquet, streamed; the outcomes checked against a replay of our own; bad input one line and
exit 2 with nothing written."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.cli.export import EXIT_OK, EXIT_USAGE
from agent_world.cli.export import main as export_main
from agent_world.config import Config
from agent_world.eval import load_scenario, run_episode
from agent_world.persistence import SaveFolder
from agent_world.persistence.replay import LogStepper
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.recorded import export as export_module
from agent_world.recorded.export import ExportOptions, export
from agent_world.recorded.outcomes import Reward

BRAIN = '''
import hashlib
import orjson
from agent_world.agents import Brain, Decision

class Picker(Brain):
    """Deterministic; its reasoning names the observation it was handed."""
    def decide(self, obs, actions):
        seen = hashlib.blake2b(orjson.dumps(obs.to_dict(), option=orjson.OPT_NON_STR_KEYS),
                               digest_size=8).hexdigest()
        if obs.items:
            return Decision("pickup", {"target": obs.items[0].id}, reasoning=seen)
        return Decision("wander", {"ticks": 8 + obs.tick % 5}, reasoning=seen)
'''
TICKS = 500
WEIGHTS = "food_gathered=1,damage_taken=-0.5,ticks_alive=0.01"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A foraging episode whose subjects think with ``Picker``."""
    root = tmp_path_factory.mktemp("recorded")
    brains = root / "brains"
    brains.mkdir()
    (brains / "ex_brains.py").write_text(BRAIN)
    config = Config().replace(
        brains={"registered": {"picker": "ex_brains:Picker"}, "path": str(brains)})
    scenario = dataclasses.replace(load_scenario("foraging"), ticks=TICKS)
    return Path(run_episode(scenario, "picker", 1, root / "episode", base=config).folder)


def _contents(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _figures_by_tick(folder: Path, agents: set[int]) -> dict[tuple[int, int], dict[str, Any]]:
    """Our own replay: each agent's metrics and whether it is alive after every tick."""
    config = Config().replace(world={"name": folder.name}, paths={"saves": str(folder.parent)})
    world = load_first_snapshot(SaveFolder.open(folder), config).world
    out = {}
    try:
        stepper = LogStepper(world, SaveFolder.open(folder), verify=True)
        while stepper.more():
            stepper.step()
            for eid in agents:
                out[(eid, world.tick)] = {"alive": world.alive(eid),
                                          **world.metrics.of(eid)}
        return out
    finally:
        world.close()


def test_every_decision_with_its_observation_and_the_outcome_that_followed(
        recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _contents(recorded)
    out = tmp_path / "t.jsonl"
    assert export_main([str(recorded), "--out", str(out), "--reward", WEIGHTS,
                        "--window", "40"]) == EXIT_OK
    assert _contents(recorded) == before  # only read
    assert f"to {out}" in capsys.readouterr().out
    records = _jsonl(out)
    assert len(records) > 100
    keys = [(r["asked_tick"], r["tick"]) for r in records]
    assert keys == sorted(keys)  # decision order
    figures = _figures_by_tick(recorded, {r["agent"] for r in records})
    last = max(tick for _eid, tick in figures)
    for r in records:
        obs = r["observation"]
        assert obs["tick"] == r["asked_tick"] and obs["me"]["id"] == r["agent"]
        assert r["reasoning"] == hashlib.blake2b(
            orjson.dumps(obs, option=orjson.OPT_NON_STR_KEYS), digest_size=8).hexdigest()
        assert r["source"] == "brain" and r["by"] == "picker"
        assert r["actions"][0]["name"] in ("pickup", "wander")
        # The outcome, from our own replay: the window closes 40 ticks on, at a death, or
        # at the log's end.
        start, agent = r["tick"], r["agent"]
        end = next((t for t in range(start + 1, min(start + 40, last) + 1)
                    if not figures[(agent, t)]["alive"]), min(start + 40, last))
        ended = ("death" if not figures[(agent, end)]["alive"]
                 else "window" if end == start + 40 else "log_end")
        assert (r["outcome_to_tick"], r["outcome_ended"]) == (end, ended)
        food = figures[(agent, end)]["food_gathered"] - figures[(agent, start)]["food_gathered"]
        hurt = figures[(agent, end)]["damage_taken"] - figures[(agent, start)]["damage_taken"]
        assert r["deltas"]["food_gathered"] == food and r["deltas"]["damage_taken"] == hurt
        if ended != "death":
            assert r["deltas"]["ticks_alive"] == end - start
        assert r["reward"] == pytest.approx(food - 0.5 * hurt + 0.01 * r["deltas"]["ticks_alive"])
    assert any(r["deltas"]["food_gathered"] for r in records)


def test_the_same_export_twice_is_the_same_bytes_and_parquet_holds_the_same_records(
        recorded: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    paths = []
    for name, fmt in (("a.jsonl", "jsonl"), ("b.jsonl", "jsonl"), ("c.parquet", "parquet")):
        paths.append(tmp_path / name)
        assert export_main([str(recorded), "--out", str(paths[-1]), "--format", fmt,
                            "--reward", "foraging", "--from", "100", "--to", "300"]) == EXIT_OK
    assert paths[0].read_bytes() == paths[1].read_bytes()
    records = _jsonl(paths[0])
    rows = pq.read_table(paths[2]).to_pylist()
    assert len(rows) == len(records) > 0
    for row, record in zip(rows, records, strict=True):
        for name in export_module.JSON_COLUMNS:
            row[name] = None if row[name] is None else orjson.loads(row[name])
        assert {k: v for k, v in row.items() if v is not None} == \
            {k: v for k, v in record.items() if v is not None}
    assert all(100 <= r["asked_tick"] <= 300 for r in records)


def test_records_stream_out_while_the_replay_goes_on(recorded: Path, tmp_path: Path) -> None:
    """Only the decisions of one outcome window are held: records are written while the
    replay is far from the end."""
    written_at: list[int] = []
    ticks: list[int] = []
    real = export_module._Follow.after_tick

    def watching(self: Any, world: Any, report: Any) -> None:
        ticks.append(world.tick)
        real(self, world, report)

    class Sink(export_module._Jsonl):
        def write(self, record: Any) -> None:
            written_at.append(ticks[-1])
            super().write(record)

    options = ExportOptions(out=tmp_path / "s.jsonl", reward=Reward.parse(WEIGHTS), window=30)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(export_module._Follow, "after_tick", watching)
        patch.setattr(export_module, "_Jsonl", Sink)
        result = export(SaveFolder.open(recorded), Config(), options)
    assert result.records == len(written_at) > 100
    half = result.records // 2
    assert written_at[half] < TICKS * 0.75  # half the records out well before the end
    records = _jsonl(tmp_path / "s.jsonl")
    for at, record in zip(written_at, records, strict=True):
        # Written once its window closed, at the next decision the replay reaches.
        assert at <= record["tick"] + 30 + 15


@pytest.mark.parametrize(("args", "says"), [
    (["--reward", "food_gatherd=1"], "unknown metric 'food_gatherd'"),
    (["--reward", "won=1"], "won is a figure of a whole episode"),
    (["--reward", "food_gathered=lots"], "'food_gathered=lots' is not METRIC=WEIGHT"),
    (["--reward", "no_such_scenario"], "unknown scenario 'no_such_scenario'"),
    (["--from", "999999"], "--from 999999: outside the ticks"),
    (["--agents", "4242"], "--agents 4242: no agent #4242"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(
        recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        args: list[str], says: str) -> None:
    before = _contents(recorded)
    out = tmp_path / "x.jsonl"
    assert export_main([str(recorded), "--out", str(out), *args]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err
    assert not out.exists() and not list(tmp_path.glob(".*partial"))
    assert _contents(recorded) == before


def test_an_output_that_exists_or_sits_in_the_save_folder_is_refused(
        recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    taken = tmp_path / "taken.jsonl"
    taken.write_text("mine")
    assert export_main([str(recorded), "--out", str(taken)]) == EXIT_USAGE
    assert "exists already" in capsys.readouterr().err and taken.read_text() == "mine"
    before = _contents(recorded)
    assert export_main([str(recorded), "--out", str(recorded / "t.jsonl")]) == EXIT_USAGE
    assert "inside the save folder" in capsys.readouterr().err
    assert _contents(recorded) == before
    monkeypatch.setattr("agent_world.cli.export.parquet_available", lambda: False)
    assert export_main([str(recorded), "--format", "parquet",
                        "--out", str(tmp_path / "p.parquet")]) == EXIT_USAGE
    assert "pip install 'agent-world[export]'" in capsys.readouterr().err
