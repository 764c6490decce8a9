"""The trainer: versions generated (by templates offline, by an LLM on a real local HTTP
server), checked in the sandbox, evaluated over seeds, and accepted only when they measurably
do better; a hostile version refused with the reason fed back; an LLM that fails or is slow
never stops a run; the command line and the web API (HTTP and WebSocket) run the same loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent_world.cli.verify import main as verify_main
from agent_world.config import Config
from agent_world.policies import example_policies
from agent_world.training.contract import contract_text
from agent_world.training.request import TrainRequest, prepare
from agent_world.training.source import numeric_constants, replace_values, stamp
from agent_world.training.trainer import THIN, Gain, Trainer, Version, paired_gain, refusal_of
from tests.llm_helpers import KEY, KEY_ENV
from tests.llm_server import FakeLLMServer, fake_llm_server
from tests.web_helpers import served, web_config

MAIN = Path(__file__).resolve().parent.parent / "main.py"

IDLER = '''"""Does nothing at all."""

NAME = "idler"
DESCRIPTION = "Stands about."
VERSION = 1
PARENT = None

IDLE_TICKS = 100


def decide(obs, memory):
    return {"action": "idle", "args": {"ticks": IDLE_TICKS}, "memory": memory}
'''

HOSTILE = '''NAME = "evil"
DESCRIPTION = "Reads the host's files."
VERSION = 1
PARENT = None
import os


def decide(obs, memory):
    return {"action": "say", "args": {"text": os.listdir("/")[0]}}
'''

GATHER = """name: gather
description: A small map with food about; the subjects score the food they gather.
world: {size: [32, 32], starting_agents: 3, item_spawn_rate: 0.6, seed: 3}
subjects: {count: 3}
end: {ticks: 300}
score: {food_gathered: 1.0}
"""


def forager_source() -> str:
    return next(p.source for p in example_policies() if p.name == "forager")


def fenced(source: str, said: str = "Gather food instead of standing about.") -> str:
    return f"{said}\n```python\n{source}```\n"


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as server:
        yield server


def llm_config(server: FakeLLMServer, tmp_path: Path, **llm: Any) -> Config:
    return Config().replace(
        llm={"provider": "openai", "base_url": server.base_url, "model": "test-model",
             "api_key_env": KEY_ENV, "request_timeout_s": 2.0, "max_retries": 0,
             "agents": 0, **llm},
        paths={"runs": str(tmp_path / "runs")})


def gather_request(tmp_path: Path, **fields: Any) -> TrainRequest:
    # Three episodes: one gives no interval, and no version could be shown better.
    scenario = tmp_path / "gather.yaml"
    scenario.write_text(GATHER)
    return TrainRequest(scenario=str(scenario), **{"code": IDLER, "episodes": 3,
                                                   "workers": 1, **fields})


def run_with(request: TrainRequest, config: Config, out: Path) -> tuple[Trainer, list[dict]]:
    messages: list[dict[str, Any]] = []
    trainer = prepare(request, config, out, on_message=messages.append)
    trainer.run()
    return trainer, messages


# -- editing sources ----------------------------------------------------------------------


def test_constants_are_found_and_changed_in_place_and_metadata_is_stamped() -> None:
    source = forager_source()
    constants = {c.name: c.value for c in numeric_constants(source)}
    assert constants["EAT_AT"] == 45 and constants["FLEE_HEALTH"] == 0.5
    assert "VERSION" not in constants and "FOOD" not in constants
    changed = replace_values(source, {"EAT_AT": "61", "FLEE_HEALTH": "0.35"})
    assert {c.name: c.value for c in numeric_constants(changed)}["EAT_AT"] == 61
    assert changed.replace("EAT_AT = 61", "EAT_AT = 45").replace(
        "FLEE_HEALTH = 0.35", "FLEE_HEALTH = 0.5") == source  # nothing else moved
    stamped = stamp(source, name="forager_v3", version=4, parent="forager_v2@3")
    assert "NAME = 'forager_v3'" in stamped and "VERSION = 4" in stamped
    assert "PARENT = 'forager_v2@3'" in stamped
    bare = 'def decide(obs, memory):\n    return {"action": "idle"}\n'
    assert stamp(bare, name="x_v1", version=2, parent=None).startswith(
        "NAME = 'x_v1'\nVERSION = 2\nPARENT = None\n")


def judged(best_seeds: dict[int, float], new_seeds: dict[int, float],
           margin: float = 0.02) -> str:
    def version(number: int, seeds: dict[int, float]) -> Version:
        scores = {str(k): v for k, v in seeds.items()}
        return Version(number=number, name=f"x_v{number + 1}", parent=None, status="evaluated",
                       summary="", score=sum(seeds.values()) / len(seeds),
                       bundle={"score": {"per_seed": scores}})

    return refusal_of(version(1, new_seeds), version(0, best_seeds), margin)


def test_a_version_is_accepted_only_when_better_with_confidence() -> None:
    # The run the issue found: 8.68 +- 26.43 accepted over 6.95 +- 0.87, on two episodes.
    reason = judged({1: 6.9, 2: 7.0}, {1: 10.7, 2: 6.66})
    assert reason.startswith(f"not accepted: {THIN}: gain +1.73 ± 26.30 per seed")
    assert "paired over 2 seeds" in reason and "--episodes" in reason
    one = judged({1: 5.0}, {1: 9.0})
    assert THIN in one and "one seed gives no interval" in one
    assert judged({1: 5.0, 2: 6.0, 3: 4.0}, {1: 5.0, 2: 6.0, 3: 4.0}).startswith(
        "not better: score 5.00 does not beat the best's 5.00 by the margin 0.10")
    # The same gain on every seed (the worlds are the same) is certain, however few.
    assert judged({1: 5.0, 2: 9.0}, {1: 6.0, 2: 10.0}) == ""
    assert judged({1: 5.0, 2: 6.0, 3: 4.0}, {1: 7.1, 2: 7.9, 3: 6.2}) == ""
    # --margin: the gain's whole interval must clear that share of the best's score.
    assert judged({1: 5.0, 2: 9.0}, {1: 6.0, 2: 10.0}, margin=0.2).startswith("not better")
    # Only seeds both were evaluated on are compared.
    assert paired_gain(Version(number=1, name="", parent=None, status="", summary="",
                               bundle={"score": {"per_seed": {"1": 3.0, "2": 4.0}}}),
                       Version(number=0, name="", parent=None, status="", summary="",
                               bundle={"score": {"per_seed": {"2": 1.0, "3": 9.0}}})
                       ) == Gain(mean=3.0, half=0.0, seeds=1)


def test_the_packaged_contract_is_the_one_in_the_docs() -> None:
    docs = (Path(__file__).resolve().parent.parent / "docs" / "policies.md").read_text()
    assert contract_text() in docs
    assert "## `decide(obs, memory)`" in contract_text()


# -- offline: templates ---------------------------------------------------------------------


# A forager with one constant, GATHER, at 0: it picks fights instead of gathering. The
# template generator can only raise GATHER from 0, which turns it into a forager: a gain of
# about 75 points on every seed, far beyond the episodes' noise (a few points), so the test
# does not hang on which change a seed draws or on how a run's fights happen to go (it did:
# any change to when policies are asked moved it).
PICKS_FIGHTS = '''"""Spoiling for a fight: with GATHER at 0 it attacks whoever is nearest;
above 0 it eats when hungry and gathers the nearest food. GATHER is its only constant."""

NAME = "forager"
DESCRIPTION = "Eats when hungry and gathers the nearest food, once GATHER is above 0."
VERSION = 1
PARENT = None

FOOD = ["berries", "apple", "bread", "meat"]
GATHER = 0  # 0: fight whoever is nearest; above 0: forage


def decide(obs, memory):
    me = obs["me"]
    if GATHER <= 0:
        for other in obs["agents"]:  # nearest first
            return {"action": "attack", "args": {"target": other["id"]}}
    food = sum(me["items"].get(kind, 0) for kind in FOOD)
    if me["hunger"] >= 45 and food > 0:
        return {"action": "eat", "args": {}}
    for item in obs["items"]:  # nearest first
        if item["kind"] in FOOD:
            return {"action": "pickup", "args": {"target": item["id"]}}
    for thing in obs["objects"]:
        if thing["kind"] in ("berry_bush", "tree") and thing["stock"] > 0:
            return {"action": "use", "args": {"target": thing["id"]}}
    return {"action": "wander", "args": {"ticks": 30}}
'''


def test_an_offline_template_run_improves_its_score(tmp_path: Path) -> None:
    # A version is accepted only when its paired gain is clear of the margin at 95% over six
    # episodes: the start picks fights, and the generator's first change turns it into the
    # forager (see PICKS_FIGHTS).
    start = tmp_path / "forager.py"
    start.write_text(PICKS_FIGHTS)
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, str(MAIN), "train", "foraging", "--iterations", "3", "--episodes",
         "6", "--ticks", "1000", "--workers", "2", "--seed", "7", "--from", str(start),
         "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    lineage = json.loads((out / "lineage.json").read_text())
    versions = lineage["versions"]
    assert [v["number"] for v in versions] == [0, 1, 2, 3]
    start = versions[0]
    best = next(v for v in versions if v["name"] == lineage["best"])
    assert best["number"] > 0 and best["status"] == "accepted"
    assert best["score"] > start["score"]
    assert best["reason"].startswith("better with confidence: gain +")
    assert "paired over 6 seeds" in best["reason"]
    assert "| version | name | parent | status |" in done.stdout
    assert f"best: {best['name']}" in done.stdout
    for v in versions:
        folder = Path(v["folder"])
        assert (folder / "policy.py").exists() and (folder / "result.json").exists()
        # One number in the folder, the name and the file.
        n = v["version"]
        assert (folder.name, v["name"]) == (f"v{n:03d}-forager_v{n}", f"forager_v{n}")
        source = (folder / "policy.py").read_text()
        assert f"NAME = 'forager_v{n}'" in source and f"VERSION = {n}\n" in source
        bundle = json.loads((folder / "bundle.json").read_text())
        assert set(bundle) >= {"contract", "scenario", "score", "metrics", "mistakes",
                               "traces", "errors", "steps"}
        assert 0 < bundle["steps"]["episodes_max"] < bundle["steps"]["budget"]
    assert (out / "best.py").read_text() == (Path(best["folder"]) / "policy.py").read_text()
    assert "lineage" not in done.stderr.lower() or done.stderr
    # Every version's result can be re-checked from its episodes' folders alone.
    assert verify_main([str(Path(best["folder"]) / "episodes" / "results.json"),
                        "--quiet"]) == 0


def test_bad_requests_are_refused_before_anything_runs(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(MAIN), "train", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, check=False)

    for args, message in ((("nowhere",), "unknown scenario 'nowhere'"),
                          (("foraging", "--iterations", "0"), "--iterations 0"),
                          (("foraging", "--from", "ghost"), "--from 'ghost': no such policy"),
                          (("foraging", "--generator", "llm"), "--generator llm needs an LLM")):
        done = run(*args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
        assert not (tmp_path / "runs").exists()


# -- with an LLM (a real local server) ------------------------------------------------------


def test_an_improving_version_is_accepted_and_a_worse_one_is_not(
        llm: FakeLLMServer, tmp_path: Path) -> None:
    llm.texts.extend([fenced(forager_source()), fenced(IDLER, "Rest more.")])
    trainer, messages = run_with(gather_request(tmp_path, iterations=2, generator="llm"),
                                 llm_config(llm, tmp_path), tmp_path / "run")
    start, better, worse = trainer.versions
    assert better.status == "accepted" and better.score > start.score
    assert worse.status == "kept" and "does not beat" in worse.reason
    assert trainer.best is better
    assert better.parent == "idler_v1@1" and worse.parent == "idler_v2@2"
    kinds = [m["type"] for m in messages]
    assert kinds.count("critique") == 2 and kinds[-1] == "done"
    assert kinds.count("episode_summary") == 9  # three versions, three episodes each
    # The LLM was given the contract, the examples, the best source and its bundle.
    first = llm.requests[0]["body"]["messages"]
    system, prompt = first[0]["content"], first[1]["content"]
    assert contract_text().strip()[:200] in system and "Example policy forager" in system
    assert 'NAME = "idler"' not in prompt and "NAME = 'idler_v1'" in prompt
    assert '"mistakes"' in prompt and '"score"' in prompt
    second = llm.requests[1]["body"]["messages"][1]["content"]
    assert "NAME = 'idler_v2'" in second and "accepted" in second


def test_a_hostile_version_is_rejected_and_the_reason_fed_back(
        llm: FakeLLMServer, tmp_path: Path) -> None:
    llm.texts.extend([fenced(HOSTILE, "Look around the host."), fenced(forager_source())])
    trainer, _messages = run_with(gather_request(tmp_path, iterations=2, generator="llm"),
                                  llm_config(llm, tmp_path), tmp_path / "run")
    hostile = trainer.versions[1]
    assert hostile.status == "rejected" and "import is not allowed" in hostile.reason.lower()
    assert hostile.score is None  # never run in an episode
    assert not (Path(hostile.folder) / "episodes").exists()
    told = llm.requests[1]["body"]["messages"][1]["content"]
    assert "rejected" in told and "import is not allowed" in told.lower()
    assert trainer.versions[2].status == "accepted"


def test_a_failing_or_slow_llm_does_not_stop_the_run(llm: FakeLLMServer,
                                                     tmp_path: Path) -> None:
    llm.script.extend(["500", "slow"])
    llm.delay_s = 3.0  # past request_timeout_s
    llm.texts.append(fenced(forager_source()))
    trainer, messages = run_with(gather_request(tmp_path, iterations=3, generator="llm"),
                                 llm_config(llm, tmp_path), tmp_path / "run")
    statuses = [v.status for v in trainer.versions]
    assert statuses == ["start", "failed", "failed", "accepted"]
    assert all("generator: the LLM failed" in v.reason for v in trainer.versions[1:3])
    assert messages[-1]["type"] == "done" and messages[-1]["best"] == "idler_v4"


# -- over HTTP and WebSocket ---------------------------------------------------------------


async def _messages(ws: aiohttp.ClientWebSocketResponse) -> list[dict[str, Any]]:
    got = []
    async for msg in ws:
        got.append(json.loads(msg.data))
    return got


def test_a_run_over_the_web_api_streams_its_progress_and_serves_its_best(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        config = web_config(tmp_path).replace(paths={"runs": str(tmp_path / "runs")})
        async with served(tmp_path, config=config) as s:
            bad = await s.http.post(s.url + "/api/train", json={"scenario": "nowhere"})
            assert bad.status == 400 and "unknown scenario" in (await bad.json())["error"]
            bad = await s.http.post(s.url + "/api/train",
                                    json={"scenario": "foraging", "episodes": "two"})
            assert bad.status == 400 and "'episodes' must be a whole number, got 'two'" in (
                await bad.json())["error"]
            started = await s.http.post(s.url + "/api/train", json={
                "scenario": "foraging", "iterations": 1, "episodes": 1, "ticks": 200})
            assert started.status == 202
            run = await started.json()
            busy = await s.http.post(s.url + "/api/train", json={"scenario": "foraging"})
            assert busy.status == 409
            async with s.http.ws_connect(s.url + run["watch"]) as ws:
                got = await asyncio.wait_for(_messages(ws), 300)
            kinds = [m["type"] for m in got]
            assert kinds[0] == "step" and kinds[-1] == "done"
            assert {"episode_summary", "critique"} <= set(kinds)
            async with s.http.get(s.url + run["code"]) as resp:
                code = await resp.json()
            assert code["name"] in ("forager_v0", "forager_v1") and "def decide" in code[
                "source"]
            async with s.http.get(s.url + "/api/train/" + run["run_id"]) as resp:
                state = await resp.json()
            assert state["state"] == "done" and len(state["versions"]) == 2
            # A late watcher gets the whole story, then the socket closes.
            async with s.http.ws_connect(s.url + run["watch"]) as ws:
                again = await asyncio.wait_for(_messages(ws), 30)
            assert [m["type"] for m in again] == kinds

    asyncio.run(scenario())


def test_terminate_needs_the_token_and_stops_the_run(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        config = web_config(tmp_path).replace(paths={"runs": str(tmp_path / "runs")})
        async with served(tmp_path, config=config, token="s3cret") as s:
            refused = await s.http.post(s.url + "/api/train", json={"scenario": "foraging"})
            assert refused.status == 401
            auth = {"Authorization": "Bearer s3cret"}
            started = await s.http.post(s.url + "/api/train", headers=auth, json={
                "scenario": "foraging", "iterations": 50, "episodes": 2, "ticks": 300})
            assert started.status == 202
            run = await started.json()
            async with s.http.ws_connect(s.url + run["watch"]) as ws:
                await ws.send_str(json.dumps({"type": "terminate"}))
                reply = json.loads((await ws.receive()).data)
                while reply["type"] != "error":
                    reply = json.loads((await ws.receive()).data)
                assert "needs the access token" in reply["error"]
                await ws.send_str(json.dumps({"type": "terminate", "token": "s3cret"}))
                rest = await asyncio.wait_for(_messages(ws), 300)
            assert any(m["type"] == "terminating" for m in rest)
            done = rest[-1]
            assert done["type"] == "done" and done["stopped"] is True
            assert done["versions"] < 51

    asyncio.run(scenario())


def test_a_run_stops_when_told_between_episodes(tmp_path: Path) -> None:
    stop = threading.Event()
    messages: list[dict[str, Any]] = []

    def hear(message: dict[str, Any]) -> None:
        messages.append(message)
        if message["type"] == "critique":  # the first new version is judged: stop
            stop.set()

    trainer = prepare(gather_request(tmp_path, iterations=20, episodes=2, code=None,
                                     start="forager"),
                      Config().replace(paths={"runs": str(tmp_path)}), tmp_path / "run",
                      on_message=hear, stop=stop)
    best = trainer.run()
    assert best is not None
    assert messages[-1] == {**messages[-1], "type": "done", "stopped": True}
    assert len(trainer.versions) == 2
