"""The liveliness report on real save folders (a real world run with persistence), checked
against the same log counted directly, and the command's answers to bad input: a missing
folder, a folder that is not a save, a damaged gzip file, a torn last line, a log without
events, ranges outside the log, and --png with and without matplotlib."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from persistence_helpers import run_session, saving_config

from agent_world.cli import report as report_command
from agent_world.report import build_report
from agent_world.report.render import WIDTH

REPO = Path(__file__).resolve().parents[1]
TICKS = 3000
WINDOW = 1000


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 12-agent world run for 3,000 ticks, its log in files of 250 ticks (a clean stop)."""
    tmp = tmp_path_factory.mktemp("report")
    run_session(saving_config(tmp, "w"), TICKS)
    return tmp / "saves" / "w"


@pytest.fixture
def copy(world: Path, tmp_path: Path) -> Path:
    """A copy of the world to damage."""
    return Path(shutil.copytree(world, tmp_path / "w"))


def direct_events(folder: Path) -> list[dict[str, Any]]:
    """Every event line of the log, read without the report or the log reader."""
    files = sorted((folder / "events").iterdir(), key=lambda p: int(p.name.split("-")[0]))
    records = []
    for path in files:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        records += [json.loads(line) for line in data.splitlines()]
    return [r for r in records if r["kind"] == "event"]


def counted(events: list[dict[str, Any]], start: int, end: int) -> dict[str, Any]:
    mine = [e for e in events if start <= e["tick"] <= end]
    types = Counter(e["type"] for e in mine)
    texts = [e["text"] for e in mine if e["type"] == "say"]
    census = [e for e in mine if e["type"] == "census"]
    deaths = [e for e in mine if e["type"] == "death"]
    thefts = [e for e in mine if e["type"] == "theft"]
    return {
        "offers": types["trade_offer"], "accepted": types["trade"],
        "declined": types["trade_declined"], "expired": types["trade_expired"],
        "undone": types["trade_undone"], "arrivals": types["spawn"], "deaths": len(deaths),
        "kills": sum(1 for e in deaths if e["killer"]),
        "thefts": len(thefts), "thefts_succeeded": sum(e.get("success", True) for e in thefts),
        "hits": types["attack"],
        "pairs": len({(e["agent"], e["target"]) for e in mine if e["type"] == "attack"}),
        "failed": types["action_failed"], "lines": len(texts), "distinct": len(set(texts)),
        "casts": types["ability"], "requests": types["ability_requested"],
        "agents": census[-1]["agents"] if census else None,
        "agents_min": min((c["agents"] for c in census), default=None),
        "richest_max": max((c["richest_gold_share"] for c in census), default=None),
    }


def figures(w: Any) -> dict[str, Any]:
    return {
        "offers": w.trade.offers, "accepted": w.trade.accepted, "declined": w.trade.declined,
        "expired": w.trade.expired, "undone": w.trade.undone,
        "arrivals": w.population.arrivals, "deaths": w.population.deaths,
        "kills": w.conflict.kills, "thefts": w.conflict.thefts,
        "thefts_succeeded": w.conflict.thefts_succeeded, "hits": w.conflict.hits,
        "pairs": w.conflict.fighting_pairs, "failed": w.failures.failed,
        "lines": w.speech.lines, "distinct": w.speech.distinct, "casts": w.abilities.casts,
        "requests": w.angel.requests, "agents": w.population.agents,
        "agents_min": w.population.agents_min,
        "richest_max": w.wealth.richest_gold_share_max,
    }


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    status = report_command.main(args)
    out, err = capsys.readouterr()
    return status, out, err.splitlines()


# -- the figures ------------------------------------------------------------------------------


def test_every_window_matches_the_log_counted_directly(world: Path) -> None:
    report = build_report(world, window=WINDOW)
    events = direct_events(world)
    assert [(w.start, w.end) for w in report.windows] == [(1, 1000), (1001, 2000),
                                                          (2001, 3000)]
    for w in report.windows:
        assert figures(w) == counted(events, w.start, w.end), w.span
    assert figures(report.total) == counted(events, 1, TICKS)
    assert report.notes == ()
    assert report.world.starting_agents == 12
    assert [c.tick for c in report.census] == [1000, 2000, 3000]
    assert figures(report.total)["offers"] > 0 and figures(report.total)["lines"] > 0


def test_failed_reasons_group_into_few_kinds(world: Path) -> None:
    report = build_report(world, window=WINDOW)
    reasons = report.total.failures.by_reason
    assert sum(reasons.values()) == report.total.failures.failed
    assert not any(re.search(r"#\d|\d", r) for r in reasons), reasons


def test_from_and_to_match_the_log_counted_directly(world: Path) -> None:
    report = build_report(world, first=1234, last=2345, window=500)
    assert [(w.start, w.end) for w in report.windows] == [(1234, 1733), (1734, 2233),
                                                          (2234, 2345)]
    events = direct_events(world)
    for w in report.windows:
        assert figures(w) == counted(events, w.start, w.end), w.span


def test_the_text_report_fits_in_100_columns(world: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([str(world), "--window", str(WINDOW)], capsys)
    assert (status, err) == (0, [])
    lines = out.splitlines()
    assert lines[0].startswith("liveliness of world 'w'")
    assert max(len(line) for line in lines) <= WIDTH
    for heading in ("people and wealth (agents, gini, wgini, rich%: at the last census of "
                    "each window)", "activity", "ticks 1..1000", "ticks 2001..3000",
                    "total, ticks 1..3000"):
        assert heading in lines
    assert any(line.startswith("checks: ") for line in lines)


def test_json_is_one_document_with_every_part(world: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([str(world), "--json", "--window", str(WINDOW)], capsys)
    assert (status, err) == (0, [])
    doc = json.loads(out)
    assert {"world", "windows", "total", "notes", "checks"} <= set(doc)
    assert len(doc["windows"]) == 3
    assert doc["total"]["trade"]["offers"] == sum(w["trade"]["offers"] for w in doc["windows"])
    assert doc["world"]["name"] == "w"
    assert {c["status"] for c in doc["checks"]} <= {"passed", "violated", "skipped"}


def test_a_world_is_found_by_name_in_paths_saves(world: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"paths": {"saves": str(world.parent)}}), encoding="utf-8")
    status, out, _err = run(["w", "--config", str(config), "--json"], capsys)
    assert status == 0
    assert json.loads(out)["world"]["path"] == str(world)


def test_the_command_runs_through_main_py(world: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "main.py"), "report", str(world), "--window", "1000",
         "--json"], capture_output=True, text=True, timeout=120, check=False,
        stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["windows"]) == 3


# -- bad input ------------------------------------------------------------------------------


def test_a_missing_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([str(tmp_path / "nowhere")], capsys)
    assert (status, out, len(err)) == (2, "", 1)
    assert err[0].startswith("error: ") and "does not exist" in err[0]


def test_a_folder_that_is_not_a_save_is_one_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "notes.txt").write_text("hello", encoding="utf-8")
    status, out, err = run([str(tmp_path / "stuff")], capsys)
    assert (status, out, len(err)) == (2, "", 1)
    assert "is not an Agent World save" in err[0]


@pytest.mark.parametrize("window", ["50", "99", "1e4", "ten"])
def test_a_window_must_be_a_whole_number_of_at_least_100(world: Path, window: str) -> None:
    with pytest.raises(SystemExit) as exc:
        report_command.main([str(world), "--window", window])
    assert exc.value.code == 2


@pytest.mark.parametrize(("args", "says"), [
    (["--from", "9000"], "--from 9000 is past the end of the readable log"),
    (["--to", "9000"], "--to 9000 is past the end of the log"),
    (["--from", "2000", "--to", "1000"], "--from 2000 is after --to 1000"),
])
def test_a_range_outside_the_log_is_one_line(world: Path, args: list[str], says: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run([str(world), *args], capsys)
    assert (status, out, len(err)) == (2, "", 1)
    assert says in err[0]


def test_a_damaged_gzip_file_in_the_middle_is_one_note(world: Path, copy: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    damaged = copy / "events" / "0001000-0001249.jsonl.gz"
    data = damaged.read_bytes()
    middle = len(data) // 2
    damaged.write_bytes(data[:middle] + bytes(64) + data[middle + 64:])
    status, out, err = run([str(copy), "--json", "--window", str(WINDOW)], capsys)
    assert status == 0
    assert len(err) == 1
    note = re.fullmatch(r"note: 0001000-0001249\.jsonl\.gz is damaged after line \d+; "
                        r"ticks (\d+)\.\.3000 are not in the report", err[0])
    assert note is not None, err
    doc = json.loads(out)
    last = doc["range"]["last"]
    assert 1000 <= last < 1250 and int(note.group(1)) == last + 1
    assert doc["notes"] == [err[0].removeprefix("note: ")]
    # the report covers the intact lines: all of ticks 1..last-1 and some of tick last
    events = direct_events(world)
    before, upto = counted(events, 1, last - 1), counted(events, 1, last)
    for key, figure in (("offers", doc["total"]["trade"]["offers"]),
                        ("lines", doc["total"]["speech"]["lines"]),
                        ("hits", doc["total"]["conflict"]["hits"])):
        assert before[key] <= figure <= upto[key], key


def test_a_torn_last_line_is_one_note(world: Path, copy: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    live = copy / "events" / "0003000-0003249.jsonl"
    with live.open("ab") as f:
        f.write(b'{"tick":3001,"seq":0,"kind":"ev')
    status, out, err = run([str(copy), "--json", "--window", str(WINDOW)], capsys)
    assert status == 0
    assert err == ["note: skipped a torn last line in 0003000-0003249.jsonl (31 bytes): the "
                   "process stopped while writing it"]
    whole = build_report(world, window=WINDOW)
    assert json.loads(out)["total"]["trade"]["offers"] == whole.total.trade.offers


def test_a_log_without_events_is_one_line(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    run_session(saving_config(tmp_path, "quiet", events="none"), 300)
    status, out, err = run([str(tmp_path / "saves" / "quiet")], capsys)
    assert (status, out, len(err)) == (2, "", 1)
    assert "holds no events" in err[0] and "persistence.events: none" in err[0]


# -- plots ----------------------------------------------------------------------------------


def test_png_without_matplotlib_says_how_to_install_it(
        world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    status, out, err = run([str(world), "--png", str(tmp_path / "plots")], capsys)
    assert (status, out, len(err)) == (2, "", 1)
    assert "pip install -e '.[plots]'" in err[0]
    assert not (tmp_path / "plots").exists()


def test_png_draws_one_file_per_subject(world: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    status, out, _err = run([str(world), "--window", str(WINDOW), "--png",
                             str(tmp_path / "plots")], capsys)
    assert status == 0
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == ["casts.png", "population.png", "prices.png", "speech.png", "trade.png",
                     "wealth.png"]
    for name in names:
        assert (tmp_path / "plots" / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert out.splitlines()[-1] == f"wrote 6 plots to {tmp_path / 'plots'}"
