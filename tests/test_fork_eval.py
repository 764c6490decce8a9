"""Counterfactual forks (issue 34 item 2, with its bad input of item 7 and its verify of item
3): ``python main.py fork-eval saves/NAME --at T --agents A,B --brains X,Y`` forks a real
saved world into seeded branches per brain, the chosen agents on that brain, through eval's
pools; the same command gives the same results, ``verify`` replays every branch from its
folder alone, and bad input is one line and exit 2 with the source untouched."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import small_world
from persistence_helpers import records, run_session, saving_config

from agent_world.cli.forkeval import main as fork_eval_main
from agent_world.cli.verify import EXIT_MISMATCH, EXIT_OK
from agent_world.cli.verify import main as verify_main
from agent_world.config import Config
from agent_world.core import events as ev
from agent_world.eval.forkplan import branch_seed
from agent_world.persistence import SaveFolder, open_world
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.types import Input

MAIN = Path(__file__).resolve().parent.parent / "main.py"
FORK_AT, KILLED_AT, SPAWNED_AT, SOURCE_TICKS, BRANCH_TICKS = 200, 100, 50, 300, 150

BRAIN = '''
from agent_world.agents import SimpleBrain

class Charger(SimpleBrain):
    def decide_action(self, ctx):
        return "attack" if ctx.agents else "wander"
'''


@dataclass(frozen=True)
class Source:
    folder: Path  # the saved world
    chosen: tuple[str, str]  # two agents alive at the fork tick
    dead: str  # an agent killed before it
    config: Path  # a config.yaml registering the test brain ``charger``
    root: Path


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Source:
    """A real world run 300 ticks into its save folder, one of its agents killed at tick
    100 and an LLM agent (Lem, on its built-in brain here: no LLM is configured) spawned at
    tick 50; and a configuration registering ``charger``, a brain that attacks whoever it
    sees."""
    root = tmp_path_factory.mktemp("fork")
    config = saving_config(root, "src")
    opened = open_world(config)
    agents = [row.agent.name for _eid, row in opened.world.agents()]
    victim = opened.world.agents()[0][0]
    run_session(config, SOURCE_TICKS, opened=opened,
                inputs={KILLED_AT: [("kill", {"target": victim})],
                        SPAWNED_AT: [("spawn", {"kind": "agent", "name": "Lem",
                                                "brain": "llm"})]})
    brains = root / "brains"
    brains.mkdir()
    (brains / "fork_eval_brains.py").write_text(BRAIN)
    settings = root / "config.yaml"
    settings.write_text(
        "brains:\n  registered:\n    charger: \"fork_eval_brains:Charger\"\n"
        f"  path: {brains}\npaths:\n  runs: {root / 'runs'}\n  saves: {root / 'other'}\n")
    return Source(folder=root / "saves" / "src", chosen=(agents[3], agents[5]),
                  dead=agents[0], config=settings, root=root)


def _argv(source: Source, out: Path, *extra: str) -> list[str]:
    return [str(source.folder), "--at", str(FORK_AT), "--agents", ",".join(source.chosen),
            "--brains", "builtin,charger", "--branches", "2", "--ticks", str(BRANCH_TICKS),
            "--workers", "2", "--config", str(source.config), "--out", str(out), *extra]


@dataclass(frozen=True)
class Run:
    out: Path
    doc: dict[str, Any]
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def forked(source: Source) -> Run:
    """The command as a user types it: ``--branches 2 --brains builtin,charger``."""
    out = source.root / "run"
    done = subprocess.run([sys.executable, str(MAIN), "fork-eval", *_argv(source, out)],
                          capture_output=True, text=True, timeout=600, check=False,
                          stdin=subprocess.DEVNULL, cwd=source.root)
    assert done.returncode == 0, done.stderr
    return Run(out, orjson.loads((out / "results.json").read_bytes()), done.stdout,
               done.stderr)


def _branches(run: Run, brain: str) -> list[dict[str, Any]]:
    return [b for b in run.doc["branches"] if b["brain"] == brain]


def test_the_command_reports_each_brain_with_intervals(forked: Run, source: Source) -> None:
    doc = forked.doc
    assert doc["kind"] == "fork-eval" and doc["brains"] == ["builtin", "charger"]
    assert doc["fork"]["tick"] == FORK_AT and list(doc["fork"]["agents"]) == list(source.chosen)
    assert [(b["brain"], b["branch"]) for b in doc["branches"]] == [
        ("builtin", 1), ("builtin", 2), ("charger", 1), ("charger", 2)]
    for summary in doc["summary"]:
        assert summary["branches"] == 2
        assert {"mean", "ci95"} == set(summary["metrics"]["kills"])
        assert set(summary["world"]) == {"deaths", "trades", "alive", "wealth"}
    for branch in doc["branches"]:
        assert branch["ticks"] == BRANCH_TICKS and set(branch["agents"]) == set(source.chosen)
        assert len(branch["state_hash"]) == 32 and len(branch["log_digest"]) == 32
    assert forked.stdout.startswith(f"# src forked at tick {FORK_AT}: 2 brains x 2 branches")
    assert any(line.startswith("| charger | 2 | ") for line in forked.stdout.splitlines())
    assert (forked.out / "results.csv").read_text().count("\n") == 5
    assert (forked.out / "results.md").read_text().startswith("# src forked at tick 200")
    # Where the branches are, and how to watch one.
    assert f"python main.py replay {forked.out / 'saves' / 'src-t200-builtin-1'} --serve" \
        in forked.stderr


def test_branches_start_from_the_same_state_with_seeds_of_their_own(forked: Run) -> None:
    doc = forked.doc
    starts = set()
    for branch in doc["branches"]:
        folder = SaveFolder(Path(branch["folder"]))
        world = load_first_snapshot(folder, Config()).world
        try:
            assert world.tick == FORK_AT
            starts.add(world.state_hash())
        finally:
            world.close()
        assert branch["origin_hash"] == doc["fork"]["state_hash"]
        assert branch["seed"] == branch_seed(doc["fork"]["seed"], FORK_AT, branch["brain"],
                                             branch["branch"])
        first = [r for r in records(folder.root) if r["kind"] == "input"]
        assert first[0]["tick"] == FORK_AT + 1 and first[0]["type"] == "reseed"
        assert first[0]["data"] == {"seed": branch["seed"]}
    assert starts == {doc["fork"]["state_hash"]}
    assert len({b["seed"] for b in doc["branches"]}) == 4
    assert len({b["state_hash"] for b in doc["branches"]}) == 4  # and futures of their own


def test_the_chosen_agents_play_the_brain_under_test(forked: Run) -> None:
    chosen = set(forked.doc["fork"]["agents"].values())
    for branch in _branches(forked, "builtin"):
        assert branch["metrics"]["decisions"] == 0  # built-in decisions are not counted
    for branch in _branches(forked, "charger"):
        assert branch["metrics"]["decisions"] > 0
        lines = records(Path(branch["folder"]))
        given = {r["data"]["agent"] for r in lines
                 if r["kind"] == "input" and r["type"] == "brain"
                 and r["data"]["brain"] == "charger"}
        assert given == chosen
        planned = {r["data"]["agent"] for r in lines
                   if r["kind"] == "input" and r["type"] == "plan"}
        assert planned and planned <= chosen  # nobody else decided by the brain
        changed = {r["agent"]: r["brain"] for r in lines
                   if r["kind"] == "event" and r["type"] == ev.BRAIN_CHANGED}
        assert {eid for eid, brain in changed.items() if brain == "charger"} == chosen
    kills = {b: sum(x["metrics"]["kills"] + x["metrics"]["walked"] for x in _branches(forked, b))
             for b in ("builtin", "charger")}
    assert kills["builtin"] != kills["charger"]


def test_agents_on_brains_a_branch_cannot_run_get_the_built_in_one(forked: Run) -> None:
    """Lem's brain is the LLM: in every branch, whatever the brain under test, it plays
    the built-in brain, by a logged input, and the results say so."""
    fork = forked.doc["fork"]
    assert fork["fallback_brains"] == {"Lem": "llm"} and "Lem" not in fork["agents"]
    for branch in forked.doc["branches"]:
        given = [r["data"] for r in records(Path(branch["folder"]))
                 if r["kind"] == "input" and r["type"] == "brain"]
        assert {"agent": fork["fallback"]["Lem"], "brain": "builtin"} in given
    assert "Played by the built-in brain in every branch" in forked.stdout
    assert "Lem (llm)" in forked.stdout


def _timeless(branch: dict[str, Any]) -> dict[str, Any]:
    """A branch's figures without what wall-clock time decides: how long it took, where
    it was written, its log's digest (markers carry times, plans their latency) and the
    latency metrics."""
    def cut(metrics: dict[str, float]) -> dict[str, float]:
        return {k: v for k, v in metrics.items() if not k.startswith("latency_")}
    return {**{k: v for k, v in branch.items()
               if k not in ("seconds", "folder", "log_digest", "state_hash", "metrics",
                            "agents")},
            "metrics": cut(branch["metrics"]),
            "agents": {name: cut(row) for name, row in branch["agents"].items()}}


def test_the_same_command_twice_gives_the_same_results(forked: Run, source: Source,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    again = source.root / "again"
    assert fork_eval_main(_argv(source, again, "--workers", "1")) == 0
    capsys.readouterr()
    doc = orjson.loads((again / "results.json").read_bytes())
    assert [_timeless(b) for b in doc["branches"]] == \
        [_timeless(b) for b in forked.doc["branches"]]
    # A built-in brain's world has no latency in it: its final state is the same too.
    assert [b["state_hash"] for b in doc["branches"] if b["brain"] == "builtin"] == \
        [b["state_hash"] for b in _branches(forked, "builtin")]
    assert doc["fork"] == forked.doc["fork"]


def test_a_branch_is_a_save_folder_that_replays(forked: Run) -> None:
    folder = _branches(forked, "charger")[1]["folder"]
    done = subprocess.run([sys.executable, str(MAIN), "replay", folder], capture_output=True,
                          text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
                          cwd=Path(folder).parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"OK: replayed ticks {FORK_AT + 1}..{FORK_AT + BRANCH_TICKS}")


def _received(forked: Run, tmp_path: Path) -> Path:
    moved = tmp_path / "received"
    shutil.copytree(forked.out, moved)
    return moved / "results.json"


def test_verify_replays_every_branch_without_its_brain(forked: Run, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    results = _received(forked, tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "brains" not in p])
    assert verify_main([str(results)]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [f"  ok: branch {b} #{i} ({BRANCH_TICKS} ticks)"
                       for b in ("builtin", "charger") for i in (1, 2)]
    assert out[4].startswith("OK: 4 branches replayed from their logs")


def test_verify_catches_one_changed_byte_of_a_branch_log(forked: Run, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    results = _received(forked, tmp_path)
    folder = results.parent / "saves" / "src-t200-charger-1"
    chunk = sorted((folder / "events").iterdir())[0]
    zipped = chunk.suffix == ".gz"
    text = gzip.decompress(chunk.read_bytes()) if zipped else chunk.read_bytes()
    at = text.index(b'"type":"plan"')
    at = text.index(b'"agent":', at) + len(b'"agent":')  # whose plan it is: another agent
    text = text[:at] + bytes([text[at] + 1]) + text[at + 1:]
    chunk.write_bytes(gzip.compress(text) if zipped else text)
    assert verify_main([str(results), "--quiet"]) == EXIT_MISMATCH
    assert capsys.readouterr().out.startswith(
        "MISMATCH: branch charger #1: event log digest: recorded ")


def test_verify_names_a_figure_the_replay_does_not_give(forked: Run, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    results = _received(forked, tmp_path)
    doc = orjson.loads(results.read_bytes())
    true = doc["branches"][1]["world"]["deaths"]
    doc["branches"][1]["world"]["deaths"] = true + 1
    results.write_bytes(orjson.dumps(doc))
    assert verify_main([str(results), "--quiet"]) == EXIT_MISMATCH
    assert capsys.readouterr().out == (f"MISMATCH: branch builtin #2: world deaths: recorded "
                                       f"{true + 1!r}, replayed {true!r}\n")


# -- bad input ------------------------------------------------------------------------------


def _fingerprint(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def unverifiable(source: Source, tmp_path: Path) -> Iterator[Path]:
    """A copy of the source whose logged state hash at tick 150 was changed."""
    copy = tmp_path / "saves" / "src"
    shutil.copytree(source.folder, copy)
    chunk = sorted((copy / "events").iterdir())[0]
    lines = gzip.decompress(chunk.read_bytes()).split(b"\n")
    for i, line in enumerate(lines):
        if line and (rec := orjson.loads(line))["kind"] == "check" and rec["tick"] == 150:
            rec["hash"] = "0" * 32
            lines[i] = orjson.dumps(rec)
    chunk.write_bytes(gzip.compress(b"\n".join(lines)))
    yield copy


def test_bad_input_is_one_line_and_exit_2_with_the_source_untouched(
        source: Source, unverifiable: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    def refused(folder: Path, changes: dict[str, str], said: str) -> None:
        before = _fingerprint(folder)
        argv = _argv(Source(folder, source.chosen, source.dead, source.config, source.root),
                     tmp_path / "out")
        for option, value in changes.items():
            argv[argv.index(option) + 1] = value
        assert fork_eval_main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert said in err, err
        assert _fingerprint(folder) == before  # nothing written to the source
        assert not (tmp_path / "out").exists()  # nor anything else

    refused(source.folder, {"--at": "5000"},
            f"--at 5000: the log of {source.folder} ends at tick {SOURCE_TICKS}; fork at "
            f"tick {SOURCE_TICKS} or earlier")
    refused(source.folder, {"--agents": "Nobody"},
            f"--agents Nobody: no agent Nobody is alive at tick {FORK_AT} (alive then: ")
    refused(source.folder, {"--agents": source.dead},
            f"--agents {source.dead}: {source.dead} died before tick {FORK_AT}")
    refused(source.folder, {"--brains": "builtin,ghost"},
            "--brains: unknown brain 'ghost' (known: builtin, llm, charger")
    refused(unverifiable, {},
            f"{unverifiable} does not verify before the fork point: it diverges at tick 150")
    refused(source.folder, {"--ticks": "0"}, "--ticks 0: give 1 to")


# -- the inputs a branch starts with ------------------------------------------------------------


def test_a_reseed_input_gives_the_world_a_seed_of_its_own() -> None:
    a, b = small_world(seed=7), small_world(seed=7)
    try:
        a.step([Input(tick=1, seq=0, type="reseed", source="fork-eval", data={"seed": 99})])
        b.step([])
        assert a.seed == 99 and a.rng.random() != b.rng.random()
        report = a.step([Input(tick=2, seq=1, type="reseed", source="fork-eval",
                               data={"seed": -1})])
        assert any(e["type"] == ev.INPUT_REJECTED for e in report.events)
        assert a.seed == 99
    finally:
        a.close()
        b.close()


def test_a_brain_input_gives_an_agent_another_brain() -> None:
    world = small_world()
    try:
        eid = world.spawn_agent(name="Ada", x=3, y=3)
        report = world.step([Input(tick=1, seq=0, type="brain", source="fork-eval",
                                   data={"agent": eid, "brain": "charger"})])
        assert [e for e in report.events if e["type"] == ev.BRAIN_CHANGED] == [
            {"type": ev.BRAIN_CHANGED, "agent": eid, "name": "Ada", "brain": "charger",
             "was": "builtin"}]
        assert world.agent_rows()[eid].agent.brain == "charger"
        report = world.step([Input(tick=2, seq=1, type="brain", source="fork-eval",
                                   data={"agent": eid, "brain": "Not A Brain"})])
        assert any(e["type"] == ev.INPUT_REJECTED for e in report.events)
        assert world.agent_rows()[eid].agent.brain == "charger"
    finally:
        world.close()


HOOKED = '''
import json, os
from agent_world.agents import SimpleBrain

class Hooked(SimpleBrain):
    def on_spawn(self, agent_id):
        self.me = agent_id

    def _write(self, what, item):
        with open(os.path.join(os.environ["HOOKED_DIR"], f"{self.me}.jsonl"), "a") as f:
            f.write(json.dumps([what, item]) + "\\n")

    def on_episode_start(self, episode):
        self._write("start", dict(episode))

    def on_episode_end(self, episode):
        self._write("end", dict(episode))

    def decide_action(self, ctx):
        self._write("decide", ctx.tick)
        return "wander"
'''


def test_the_chosen_agents_brains_hear_the_branch_begin_and_end(
        source: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    brains = tmp_path / "brains"
    brains.mkdir()
    (brains / "fork_hooked.py").write_text(HOOKED)
    calls = tmp_path / "calls"
    calls.mkdir()
    monkeypatch.setenv("HOOKED_DIR", str(calls))
    settings = tmp_path / "config.yaml"
    settings.write_text("brains:\n  registered:\n    hooked: \"fork_hooked:Hooked\"\n"
                        f"  path: {brains}\npaths:\n  runs: {tmp_path / 'runs'}\n")
    argv = [str(source.folder), "--at", str(FORK_AT), "--agents", ",".join(source.chosen),
            "--brains", "hooked", "--branches", "1", "--ticks", "60", "--workers", "1",
            "--config", str(settings), "--out", str(tmp_path / "out")]
    assert fork_eval_main(argv) == 0
    doc = orjson.loads((tmp_path / "out" / "results.json").read_bytes())
    branch = doc["branches"][0]
    heard = {}
    for path in calls.glob("*.jsonl"):
        lines = [orjson.loads(x) for x in path.read_text().splitlines()]
        heard[lines[0][1]["name"]] = lines
    assert set(heard) == set(source.chosen)  # only the chosen agents' brains, each once
    for name, lines in heard.items():
        kinds = [kind for kind, _ in lines]
        assert kinds[0] == "start" and "decide" in kinds and kinds.count("start") == 1
        assert lines[0][1]["seed"] == branch["seed"] and lines[0][1]["branch"] == 1
        if name in branch["agents"] and kinds[-1] == "end":
            end = lines[-1][1]
            assert end["tick"] == FORK_AT + 60 and end["score"] is None
            assert end["figures"] == pytest.approx(branch["agents"][name])
    assert any(lines[-1][0] == "end" for lines in heard.values())
