"""Re-asking recorded decisions (issue 34 item 1): each logged decision's observation rebuilt
exactly by replaying to its asked tick, put to other brains (built-in, a user's, the LLM),
compared, and written as records, with the save folder only read. Real save folders made by
eval episodes of a user's brain; the LLM behind a real local HTTP server."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.cli.reask import EXIT_OK, EXIT_USAGE
from agent_world.cli.reask import main as reask_main
from agent_world.config import Config
from agent_world.eval import load_scenario, run_episode
from agent_world.persistence import SaveFolder
from agent_world.persistence.lock import WorldLock
from agent_world.recorded import recorded_decisions, select_decisions
from agent_world.recorded.askers import NewDecision
from agent_world.recorded.reask import ReaskOptions, reask
from agent_world.recorded.tally import Tally, agreement
from tests.llm_helpers import KEY, KEY_ENV
from tests.llm_server import FakeLLMServer, fake_llm_server

BRAIN = '''
import hashlib
import orjson
from agent_world.agents import Brain, Decision

def digest(obs):
    return hashlib.blake2b(orjson.dumps(obs.to_dict(), option=orjson.OPT_NON_STR_KEYS),
                           digest_size=8).hexdigest()

class Recorder(Brain):
    """Deterministic; its reasoning names the observation it was handed."""
    def decide(self, obs, actions):
        seen = f"tick={obs.tick} obs={digest(obs)}"
        if obs.me.attacked_by is not None:
            return Decision("attack", {"target": obs.me.attacked_by.id}, reasoning=seen)
        if obs.me.hunger > 50 and obs.items:
            return Decision("pickup", {"target": obs.items[0].id}, reasoning=seen)
        if obs.agents and obs.tick % 3 == 0:
            return Decision("move_to", {"target": obs.agents[0].id}, reasoning=seen)
        return Decision("wander", {"ticks": 10 + obs.tick % 7}, reasoning=seen)
'''

TICKS = 700  # long enough for two spans of at least persistence.spans.MIN_SPAN_TICKS


def _digest(observation: dict[str, Any]) -> str:
    return hashlib.blake2b(orjson.dumps(observation, option=orjson.OPT_NON_STR_KEYS),
                           digest_size=8).hexdigest()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Config, Path]:
    """A survival episode whose subjects think with ``Recorder``: its save folder, the
    configuration that registers the brain, and that configuration as a file."""
    root = tmp_path_factory.mktemp("recorded")
    brains = root / "brains"
    brains.mkdir()
    (brains / "rq_brains.py").write_text(BRAIN)
    config = Config().replace(
        brains={"registered": {"recorder": "rq_brains:Recorder"}, "path": str(brains)},
        persistence={"seek_target_ms": 0, "seek_interval_ticks": 50, "hash_interval_ticks": 10},
        paths={"runs": str(root / "runs")})
    scenario = dataclasses.replace(load_scenario("survival"), ticks=TICKS)
    episode = run_episode(scenario, "recorder", 1, root / "episode", base=config)
    config_file = root / "config.yaml"
    config_file.write_text(orjson.dumps({"brains": {
        "registered": {"recorder": "rq_brains:Recorder"}, "path": str(brains)},
        "paths": {"runs": str(root / "runs")}}).decode())
    return Path(episode.folder), config, config_file


def _contents(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a folder with its bytes and modification time."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _stable(report: dict[str, Any]) -> dict[str, Any]:
    """The report less what depends on the machine (timing) and where it was written."""
    return {k: v for k, v in report.items() if k not in ("timing", "files")}


# -- the observations ----------------------------------------------------------------------------


def test_each_rebuilt_observation_is_the_one_the_brain_was_handed(
        recorded: tuple[Path, Config, Path]) -> None:
    folder, config, _file = recorded
    seen = 0
    for item in recorded_decisions(folder, config):
        assert item.observation.tick == item.logged.asked_tick == item.key.asked_tick
        assert item.observation.me.id == item.logged.agent
        assert item.logged.thought == (f"tick={item.observation.tick} "
                                       f"obs={_digest(item.observation.to_dict())}")
        seen += 1
    assert seen > 100


def test_decisions_come_in_asked_order_and_a_range_selects_by_asked_tick(
        recorded: tuple[Path, Config, Path]) -> None:
    folder, _config, _file = recorded
    every = select_decisions(SaveFolder.open(folder))
    assert list(every.keys) == sorted(every.keys) and every.undated == 0
    some = select_decisions(SaveFolder.open(folder), first=200, last=300)
    assert some.keys and all(200 <= k.asked_tick <= 300 for k in some.keys)
    assert set(some.keys) == {k for k in every.keys if 200 <= k.asked_tick <= 300}


def test_a_sample_is_drawn_by_its_seed(recorded: tuple[Path, Config, Path]) -> None:
    folder = SaveFolder.open(recorded[0])
    one = select_decisions(folder, sample=10, seed=3)
    assert len(one.keys) == 10 and one.found > 10
    assert one.keys == select_decisions(folder, sample=10, seed=3).keys
    assert one.keys != select_decisions(folder, sample=10, seed=4).keys


# -- re-asking -----------------------------------------------------------------------------------


def test_the_same_brain_agrees_with_itself_and_the_output_is_the_same_on_any_workers(
        recorded: tuple[Path, Config, Path], tmp_path: Path) -> None:
    folder, config, _file = recorded
    options = ReaskOptions(brains=("builtin", "recorder"))
    one = reask(folder, config, options, tmp_path / "one", workers=1, min_work=0)
    two = reask(folder, config, options, tmp_path / "two", workers=2, min_work=0)
    again = reask(folder, config, options, tmp_path / "again", workers=1, min_work=0)
    assert (one.spans, two.spans) == (1, 2)
    for name in ("builtin.jsonl", "recorder.jsonl"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
        assert (tmp_path / "one" / name).read_bytes() == \
            (tmp_path / "again" / name).read_bytes()
    assert _stable(one.report) == _stable(two.report) == _stable(again.report)
    saved = orjson.loads((tmp_path / "two" / "report.json").read_bytes())
    assert _stable(saved) == _stable(one.report)
    mine = one.report["results"]["recorder"]
    asked = one.report["decisions"]["asked"]
    assert mine["asked"] == mine["valid"] == mine["exact"] == asked > 100
    assert mine["actions"]["new"] == mine["actions"]["logged"]
    for record in _records(tmp_path / "one" / "recorder.jsonl"):
        assert record["new"]["thought"] == record["logged"]["thought"]
        assert record["agree"] == {"exact": True, "same_target": True, "same_action": True}
    builtin = one.report["results"]["builtin"]
    assert builtin["asked"] == builtin["valid"] == asked
    assert builtin["exact"] <= builtin["same_target"] <= builtin["same_action"] < asked


def test_records_hold_the_observation_the_logged_and_the_new_decision(
        recorded: tuple[Path, Config, Path], tmp_path: Path) -> None:
    folder, config, _file = recorded
    reask(folder, config, ReaskOptions(brains=("builtin",), first=100, last=200), tmp_path)
    records = _records(tmp_path / "builtin.jsonl")
    assert [r["index"] for r in records] == list(range(len(records)))
    assert [(r["asked_tick"], r["seq"]) for r in records] == \
        sorted((r["asked_tick"], r["seq"]) for r in records)
    first = records[0]
    assert set(first) == {"index", "agent", "asked_tick", "tick", "seq", "observation",
                          "logged", "new", "agree"}
    assert first["observation"]["tick"] == first["asked_tick"]
    assert first["logged"]["source"] == "brain" and first["logged"]["brain"] == "recorder"
    assert first["new"]["brain"] == "builtin" and first["new"]["valid"] is True
    assert "latency_ms" not in first["new"]  # a measurement: kept in the report's timing


def test_agreement_is_counted_on_the_first_action() -> None:
    attack5 = [{"name": "attack", "args": {"target": 5}}]
    assert agreement(attack5, attack5).exact
    walk = agreement([{"name": "move_to", "args": {"target": 5}}],
                     [{"name": "move_to", "args": {"target": 5}},
                      {"name": "eat", "args": {"item": "apple"}}])
    assert (walk.exact, walk.same_target, walk.same_action) == (True, True, True)
    longer = agreement([{"name": "wander", "args": {"ticks": 10}}],
                       [{"name": "wander", "args": {"ticks": 30}}])
    assert (longer.exact, longer.same_target, longer.same_action) == (False, True, True)
    other = agreement(attack5, [{"name": "attack", "args": {"target": 6}}])
    assert (other.exact, other.same_target, other.same_action) == (False, False, True)
    assert not agreement(attack5, [{"name": "flee", "args": {"target": 5}}]).same_action

    tally = Tally("b")
    answers = [NewDecision(brain="b", valid=True, actions=tuple(attack5)),
               NewDecision(brain="b", valid=True,
                           actions=({"name": "attack", "args": {"target": 6}},)),
               NewDecision(brain="b", valid=True, actions=({"name": "rest", "args": {}},)),
               NewDecision(brain="b", valid=False, error="invalid: no plan")]
    for answer in answers:
        tally.add(attack5, answer)
    figures = tally.figures()
    assert (figures["asked"], figures["valid"], figures["exact"], figures["same_target"],
            figures["same_action"]) == (4, 3, 1, 1, 2)
    assert figures["rates"]["same_action"] == 0.5 and figures["invalid"] == {"invalid": 1}
    assert figures["actions"] == {"new": {"attack": 2, "rest": 1}, "logged": {"attack": 4}}


# -- the command line: the folder only read, bad input refused ---------------------------


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = reask_main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_command_reads_a_running_world_and_changes_nothing_in_it(
        recorded: tuple[Path, Config, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder, _config, config_file = recorded
    before = _contents(folder)
    lock = WorldLock.acquire(folder, "running")  # as a process running the world holds it
    try:
        code, out, err = _run([str(folder), "--brain", "builtin,recorder", "--sample", "40",
                               "--config", str(config_file), "--out",
                               str(tmp_path / "out")], capsys)
    finally:
        lock.release()
    assert code == EXIT_OK, err
    assert "is running" in err
    assert out.splitlines()[0].startswith("survival-recorder-1: 40 decisions re-asked")
    assert any(line.startswith("recorder ") and " 100.0% " in line for line in out.splitlines())
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "builtin.jsonl", "recorder.jsonl", "report.json", "run.json", ".lock"}
    after = _contents(folder)
    after[".lock"] = before[".lock"]  # the lock file a run (here: the test) holds
    assert after == before


@pytest.mark.parametrize(("args", "said"), [
    (["--from", "99999"], "--from 99999: outside the ticks of"),
    (["--from", "300", "--to", "200"], "--from 300 is after --to 200"),
    (["--agents", "99999"], "--agents 99999: no agent #99999 appears in"),
    (["--agents", "SUBJECT", "--from", "0", "--to", "0"], "is not alive at ticks 0..0"),
    (["--brain", "nosuch"], "--brain nosuch: unknown brain 'nosuch'"),
    (["--brain", "llm"], "--brain llm: llm needs an LLM"),
    (["--model", "gpt-x"], "--model gpt-x: a model is for --brain llm"),
    (["--out", "INSIDE"], "inside the save folder"),
])
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(
        recorded: tuple[Path, Config, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], args: list[str], said: str) -> None:
    folder, _config, config_file = recorded
    subject = select_decisions(SaveFolder.open(folder)).keys[0].agent
    args = [str(subject) if a == "SUBJECT" else str(folder / "x") if a == "INSIDE" else a
            for a in args]
    argv = [str(folder), "--config", str(config_file), "--out", str(tmp_path / "out")]
    if "--brain" not in args:
        argv += ["--brain", "builtin"]
    before = _contents(folder)
    code, out, err = _run(argv + args, capsys)
    assert code == EXIT_USAGE
    assert out == ""
    assert len(err.splitlines()) == 1 and said in err, err
    assert _contents(folder) == before
    assert not (tmp_path / "out").exists() and not (folder / "x").exists()


def test_no_such_folder_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                    ) -> None:
    code, _out, err = _run([str(tmp_path / "nowhere"), "--brain", "builtin"], capsys)
    assert code == EXIT_USAGE and len(err.splitlines()) == 1 and "does not exist" in err


# -- the LLM ------------------------------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as fake:
        yield fake


def _llm_config(config_file: Path, server: FakeLLMServer, tmp_path: Path) -> Path:
    doc = orjson.loads(config_file.read_bytes())
    doc["llm"] = {"provider": "openai", "base_url": server.base_url, "model": "test-model",
                  "api_key_env": KEY_ENV, "request_timeout_s": 5.0, "max_retries": 0}
    path = tmp_path / "llm.yaml"
    path.write_text(orjson.dumps(doc).decode())
    return path


def test_the_llm_is_asked_the_agents_prompt_through_the_configured_endpoint(
        recorded: tuple[Path, Config, Path], tmp_path: Path, server: FakeLLMServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder, _config, config_file = recorded
    llm_file = _llm_config(config_file, server, tmp_path)
    before = _contents(folder)
    code, out, err = _run([str(folder), "--brain", "llm", "--model", "other-model",
                           "--sample", "6", "--seed", "1", "--config", str(llm_file),
                           "--out", str(tmp_path / "out"), "--workers", "1"], capsys)
    assert code == EXIT_OK, err
    assert _contents(folder) == before
    assert server.count("/chat/completions") == 6
    assert {r["body"]["model"] for r in server.requests} == {"other-model"}
    records = _records(tmp_path / "out" / "llm.jsonl")
    assert len(records) == 6
    for record, request in zip(records, server.requests, strict=True):
        name = record["observation"]["me"]["name"]
        user = request["body"]["messages"][-1]["content"]
        assert record["new"]["prompt"] == user and name in user
        assert record["new"]["model"] == "other-model"
        assert record["new"]["actions"] == [{"name": "idle", "args": {"ticks": 5}},
                                            {"name": "wander", "args": {"ticks": 20}}]
        assert record["new"]["usage"]["prompt_tokens"] == 300
    report = orjson.loads((tmp_path / "out" / "report.json").read_bytes())
    figures = report["results"]["llm"]
    assert figures["valid"] == 6 and figures["actions"]["new"] == {"idle": 6}
    assert figures["tokens"] == {"prompt": 1800, "completion": 240}
    assert figures["cost"] == pytest.approx(0.0006)
    assert report["model"] == "other-model" and "empty memory" in report["llm_prompt"]["memory"]
    assert "empty memory" in out


def test_a_model_the_endpoint_refuses_is_one_line_and_exit_2(
        recorded: tuple[Path, Config, Path], tmp_path: Path, server: FakeLLMServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder, _config, config_file = recorded
    server.mode = "404"
    before = _contents(folder)
    code, out, err = _run([str(folder), "--brain", "llm", "--model", "no-such-model",
                           "--sample", "3", "--config",
                           str(_llm_config(config_file, server, tmp_path)),
                           "--out", str(tmp_path / "out"), "--workers", "1"], capsys)
    assert code == EXIT_USAGE and out == ""
    line = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "refuses model 'no-such-model'" in line[0], err
    assert _contents(folder) == before and not (tmp_path / "out").exists()


def test_the_command_is_registered() -> None:
    from agent_world.cli.program import SUBCOMMANDS

    assert SUBCOMMANDS["reask"].parser().parse_args(
        ["saves/w", "--brain", "builtin", "--sample", "5"]).sample == 5
