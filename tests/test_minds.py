"""Minds that last: what brains remember is saved beside every snapshot and given back on
resume, crash recovery and fork (real save folders, real worker threads and processes, a
real HTTP server standing in for the LLM); a mind that cannot be read costs its agent only."""

from __future__ import annotations

import asyncio
import gzip
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.agents import (
    EmbeddingMemory,
    NoEmbeddings,
    RetrievalMemory,
    SummaryMemory,
    WindowMemory,
    within_tokens,
)
from agent_world.app import Session
from agent_world.config import Config
from agent_world.persistence import SaveFolder, fork_world, open_world
from agent_world.persistence.minds import bound_state, encode_minds, mind_files, read_minds
from agent_world.userbrains.registry import load_brains
from tests.llm_helpers import KEY, KEY_ENV
from tests.llm_server import FakeLLMServer, fake_llm_server
from tests.persistence_helpers import records, saving_config

BRAINS = '''
from agent_world.agents import Brain, Decision, LLMBrain

class Counter(Brain):
    """Counts its decisions and remembers who it saw: state it opts to keep."""
    def __init__(self):
        self.count = 0
        self.seen = []
    def decide(self, obs, actions):
        self.count += 1
        self.seen = (self.seen + [a.name for a in obs.agents[:1]])[-50:]
        return Decision("wander", {"ticks": 3}, reasoning=f"decision {self.count}")
    def get_state(self):
        return {"count": self.count, "seen": self.seen}
    def set_state(self, state):
        self.count = state["count"]
        self.seen = list(state["seen"])

class Forgetful(Brain):
    """Keeps no state: nothing of it is saved."""
    def decide(self, obs, actions):
        return Decision("rest", {"ticks": 3})

class Picky(Counter):
    """Saves a state it then refuses to take back."""
    def set_state(self, state):
        raise ValueError("not my kind of state")

class Thinker(LLMBrain):
    """The reflective example's habit: the latest lessons head every prompt."""
    reflect_every_ticks = 10
    def build_prompt(self, obs, recalled):
        lessons = [m for m in self.memory.entries() if m.kind == "reflection"][-2:]
        prompt = super().build_prompt(obs, recalled)
        if lessons:
            prompt = "What you have learned so far:\\n" + "\\n".join(
                f"- {m.text}" for m in lessons) + "\\n" + prompt
        return prompt
'''

LESSON = "Keep away from the river at night."
REFLECTING = "learned that should guide"  # in the reflection's question


def minds_config(tmp_path: Path, module: str, *, processes: dict[str, int] | None = None,
                 llm: dict[str, Any] | None = None, **registered: str) -> Config:
    folder = tmp_path / "brains"
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text(BRAINS)
    config = saving_config(tmp_path).replace(brains={
        "registered": {k: f"{module}:{v}" for k, v in registered.items()},
        "processes": processes or {}, "path": str(folder), "deadline_ms": 3000,
        "min_gap_ticks": 2, "think_interval_ticks": 6})
    if llm is not None:
        config = config.replace(llm=llm)
    return config


@pytest.fixture(autouse=True)
def forget_modules() -> Iterator[None]:
    yield
    for name in [n for n in sys.modules if n.startswith("mt_")]:
        del sys.modules[name]


def open_session(config: Config, *spawns: tuple[str, str]) -> Session:
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder, resumed=opened.resumed,
                      brains=load_brains(config.brains, llm=config.llm.enabled))
    for name, brain in spawns:
        session.world.inbox.submit("spawn", {"kind": "agent", "name": name, "brain": brain},
                                   source="console")
    return session


def run(session: Session, ticks: int, until: Callable[[], bool] | None = None,
        wall_s: float = 60.0) -> int:
    began = time.monotonic()

    async def drive() -> int:
        for n in range(ticks):
            await session.loop.run(max_ticks=1, paced=False)
            if until is not None and until():
                return n + 1
            await asyncio.sleep(0.001)  # room for the worker threads
            if time.monotonic() - began > wall_s:
                return n + 1
        return ticks

    return asyncio.run(drive())


def newest_minds(config: Config) -> dict[int, dict[str, Any]]:
    folder = Path(config.paths.saves) / config.world.name / "minds"
    return read_minds(folder, 10**9).records


def agent_named(session: Session, name: str) -> int:
    eid = session.world.population.find(name)
    assert eid is not None, name
    return eid


def brain_of(session: Session, eid: int) -> Any:
    assert session.brains is not None
    return session.brains._brains.get(eid)


def thoughts(config: Config, brain: str) -> list[str]:
    folder = Path(config.paths.saves) / config.world.name
    return [r["data"]["thought"] for r in records(folder) if r.get("kind") == "input"
            and r.get("type") == "plan" and r["data"].get("brain") == brain]


# -- tier 3: the reflection is remembered ------------------------------------------------------


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as fake:
        yield fake


def llm_section(server: FakeLLMServer, **more: Any) -> dict[str, Any]:
    return {"provider": "openai", "base_url": server.base_url, "model": "test-model",
            "api_key_env": KEY_ENV, "agents": 0, "request_timeout_s": 3.0, **more}


def test_an_llm_brain_that_reflected_remembers_the_lesson_after_a_restart(
        tmp_path: Path, server: FakeLLMServer) -> None:
    server.when = {REFLECTING: LESSON}  # the reflection's question gets the lesson
    config = minds_config(tmp_path, "mt_think", llm=llm_section(server), thinker="Thinker")
    session = open_session(config, ("Sage", "thinker"))
    try:
        def reflected() -> bool:
            brains = session.brains
            assert brains is not None
            return any(m.kind == "reflection" for b in list(brains._brains.values())
                       for m in b.memory.entries())

        run(session, 3000, reflected)
        assert reflected(), "the brain never reflected"
        sage = agent_named(session, "Sage")
    finally:
        session.close()
    # The minds file of the final snapshot holds the lesson, beside the snapshot of its tick.
    saves = Path(config.paths.saves) / "w"
    tick = orjson.loads((saves / "world_state.json").read_bytes())["tick"]
    assert mind_files(saves / "minds")[-1][0] == tick
    record = newest_minds(config)[sage]
    assert record["brain"] == "thinker" and record["name"] == "Sage"
    assert any(e["kind"] == "reflection" and LESSON in e["text"]
               for e in record["state"]["memory"]["entries"]), orjson.dumps(record).decode()

    server.requests.clear()
    again = open_session(config)
    try:
        def asked_again() -> bool:
            return any(r["path"].endswith("/chat/completions") and REFLECTING not in
                       str(r["body"]["messages"][-1]["content"]) for r in server.requests)

        run(again, 3000, asked_again)
        brain = brain_of(again, sage)
        assert brain is not None
        lessons = [m.text for m in brain.memory.entries() if m.kind == "reflection"]
        assert any(LESSON in text for text in lessons), lessons
        decided = [r for r in server.requests if r["path"].endswith("/chat/completions")
                   and REFLECTING not in str(r["body"]["messages"][-1]["content"])]
        prompt = decided[0]["body"]["messages"][-1]["content"]
        assert f"- lesson: {LESSON}" in prompt  # its very next prompt, after the restart
        assert "I decided" in prompt or "lesson" in prompt
    finally:
        again.close()


# -- tier 2: brains that opt in, on threads and in processes ------------------------------------


def test_brains_that_opt_in_keep_their_state_across_a_restart_on_threads_and_in_processes(
        tmp_path: Path) -> None:
    config = minds_config(tmp_path, "mt_count", processes={"pooled": 1},
                          counter="Counter", pooled="Counter", forgetful="Forgetful")
    session = open_session(config, ("Tally", "counter"), ("Pool", "pooled"),
                           ("Lethe", "forgetful"))
    brains = session.brains
    assert brains is not None
    try:
        def each_decided(n: int) -> Callable[[], bool]:
            return lambda: len(brains.minds) == 3 and all(
                m.decisions >= n for m in brains.minds.values())

        run(session, 4000, each_decided(3))
        assert each_decided(3)(), brains.stats()
        tally, pool, lethe = (agent_named(session, n) for n in ("Tally", "Pool", "Lethe"))
    finally:
        session.close()
    saved = newest_minds(config)
    assert set(saved) == {tally, pool}  # Forgetful keeps nothing: nothing is saved
    assert saved[tally]["kind"] == "brain" and saved[pool]["brain"] == "pooled"
    counts = {eid: saved[eid]["state"]["count"] for eid in (tally, pool)}
    assert all(n >= 3 for n in counts.values()), counts

    again = open_session(config)
    brains = again.brains
    assert brains is not None
    try:
        before = {b: len(thoughts(config, b)) for b in ("counter", "pooled")}
        run(again, 4000, lambda: len(brains.minds) == 3 and all(
            m.decisions >= 2 for m in brains.minds.values()))
    finally:
        again.close()
    for brain, eid in (("counter", tally), ("pooled", pool)):
        said = thoughts(config, brain)
        resumed = said[before[brain]:]
        assert resumed, brain
        # It counts on from what it saved, in its thread or in its process.
        assert resumed[0] == f"decision {counts[eid] + 1}", (brain, said)
    assert lethe not in newest_minds(config)


def test_a_fork_gets_the_minds_of_the_snapshot_at_or_before_its_tick(tmp_path: Path) -> None:
    config = minds_config(tmp_path, "mt_fork", counter="Counter")
    config = config.replace(persistence={"snapshot_interval_ticks": 50})
    session = open_session(config, ("Tally", "counter"))
    try:
        run(session, 120)
        tally = agent_named(session, "Tally")
    finally:
        session.close()
    source = SaveFolder.open(Path(config.paths.saves) / "w")
    at_100 = read_minds(source.minds_dir, 100).records[tally]["state"]["count"]
    assert read_minds(source.minds_dir, 100).tick == 100
    forked = fork_world(source, 120, "branch", config)
    assert any("as of tick 120" in note for note in forked.notes), forked.notes
    forked.close()
    # Between two snapshots: the minds of the one before, and the notes say so.
    between = fork_world(source, 110, "between", config)
    assert any("as of tick 100" in n and "101..110" in n for n in between.notes), \
        between.notes
    session = Session(config.replace(world={"name": "between"}), between.world,
                      folder=between.folder, brains=load_brains(config.brains))
    try:
        run(session, 200, lambda: len(thoughts(config.replace(world={"name": "between"}),
                                               "counter")) >= 1)
    finally:
        session.close()
    said = thoughts(config.replace(world={"name": "between"}), "counter")
    assert said and said[0] == f"decision {at_100 + 1}", (at_100, said)


def test_crash_recovery_restores_the_minds_of_the_last_snapshot(tmp_path: Path) -> None:
    config = minds_config(tmp_path, "mt_crash", counter="Counter")
    session = open_session(config, ("Tally", "counter"))
    try:
        run(session, 150)  # snapshots every 100 ticks: minds at 100
        tally = agent_named(session, "Tally")
        assert session.persistence is not None
        # The process dies: no final snapshot, the writer just stops with the log on disk.
        session.persistence.close(final_snapshot=False)
        session.persistence = None
    finally:
        session.close()
    saves = Path(config.paths.saves) / "w"
    assert [t for t, _p in mind_files(saves / "minds")] == [100]
    at_100 = read_minds(saves / "minds", 100).records[tally]["state"]["count"]
    again = open_session(config)
    try:
        assert again.world.tick == 150  # the log replayed past the snapshot
        run(again, 100, lambda: brain_of(again, tally) is not None)
        assert brain_of(again, tally) is not None
        counted = brain_of(again, tally).count
        assert counted >= at_100 + 1
    finally:
        again.close()
    log = (tmp_path / "logs" / "world.log").read_text()
    assert "as of tick 100; the world is at tick 150" in log


# -- what cannot be read costs its agent only ---------------------------------------------------


def test_a_damaged_mind_or_one_set_state_refuses_is_one_warning_naming_the_agent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = minds_config(tmp_path, "mt_bad", counter="Counter", picky="Picky")
    session = open_session(config, ("Tally", "counter"), ("Torn", "counter"),
                           ("Fussy", "picky"))
    brains = session.brains
    assert brains is not None
    try:
        run(session, 4000, lambda: len(brains.minds) == 3 and all(
            m.decisions >= 2 for m in brains.minds.values()))
        tally, torn, fussy = (agent_named(session, n) for n in ("Tally", "Torn", "Fussy"))
    finally:
        session.close()
    saves = Path(config.paths.saves) / "w"
    _tick, path = mind_files(saves / "minds")[-1]
    lines = gzip.decompress(path.read_bytes()).split(b"\n")
    damaged = [line[:len(line) // 2] if line.startswith(b'{"agent":%d,' % torn) else line
               for line in lines]
    path.write_bytes(gzip.compress(b"\n".join(damaged)))
    capsys.readouterr()
    again = open_session(config)
    try:
        run(again, 400, lambda: all(brain_of(again, e) is not None
                                    for e in (tally, torn, fussy)))
        assert brain_of(again, tally).count >= 2  # the others are restored
        assert brain_of(again, torn).count <= 1  # a fresh brain: an empty memory
        assert brain_of(again, fussy).count <= 1
    finally:
        again.close()
    err = capsys.readouterr().err
    assert err.count(f"the mind of agent {torn} (Torn") == 1, err
    assert f"its line in minds/{path.name} is damaged" in err
    assert err.count(f"the mind of agent {fussy} (Fussy") == 1, err
    assert "picky.set_state: ValueError: not my kind of state" in err
    assert f"agent {tally}" not in err


def test_a_minds_file_that_cannot_be_read_at_all_falls_back_to_the_one_before(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = minds_config(tmp_path, "mt_torn", counter="Counter").replace(
        persistence={"snapshot_interval_ticks": 50})
    session = open_session(config, ("Tally", "counter"))
    try:
        run(session, 120)
        tally = agent_named(session, "Tally")
    finally:
        session.close()
    saves = Path(config.paths.saves) / "w"
    (at, _older), (last, path) = mind_files(saves / "minds")[-2:]
    path.write_bytes(path.read_bytes()[:20])  # cut inside the gzip stream: nothing readable
    counted = read_minds(saves / "minds", at).records[tally]["state"]["count"]
    capsys.readouterr()
    again = open_session(config)
    try:
        run(again, 200, lambda: brain_of(again, tally) is not None)
        assert again.world.tick >= last
        assert brain_of(again, tally).count >= counted  # the minds of the file before
    finally:
        again.close()
    err = capsys.readouterr().err
    assert f"minds/{path.name} cannot be read" in err and "the snapshot before it" in err


# -- the bound -----------------------------------------------------------------------------------


def test_a_mind_over_the_bound_loses_its_oldest_memories_first() -> None:
    entries = [{"tick": t, "kind": "note", "text": f"memory number {t} " + "x" * 40}
               for t in range(200)]
    state = {"name": "Ada", "memory": {"summary": "s", "entries": entries}}
    bounded = bound_state(state, 2048)
    assert bounded.data is not None and len(bounded.data) <= 2048
    kept = bounded.state["memory"]["entries"]
    assert kept == entries[-len(kept):] and 0 < len(kept) < 200  # the newest survive
    assert bounded.dropped == 200 - len(kept)
    assert state["memory"]["entries"] is entries and len(entries) == 200  # not the caller's
    # Objects lose their first keys (the oldest added); nothing left to cut: not saved.
    facts = bound_state({"facts": {f"fact {i}": i for i in range(300)}}, 1024)
    assert facts.data is not None and "fact 299" in facts.state["facts"]
    assert "fact 0" not in facts.state["facts"]
    assert bound_state({"text": "y" * 5000}, 1024).state == {}  # the state itself is cut
    assert bound_state("y" * 5000, 1024).state is None
    data, cut = encode_minds(7, [{"agent": 3, "name": "Ada", "brain": "b", "kind": "brain",
                                  "state": state},
                                 {"agent": 4, "name": "Bo", "brain": "b", "kind": "brain",
                                  "state": {"ok": True}}], 2048)
    lines = gzip.decompress(data).splitlines()
    assert orjson.loads(lines[0]) == {"format": 1, "tick": 7, "agents": [3, 4]}
    assert orjson.loads(lines[1])["dropped"] == bounded.dropped
    assert cut == [(3, "Ada", bounded.dropped)]


def test_the_bound_applies_to_saved_minds_and_is_said_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = minds_config(tmp_path, "mt_big", counter="Counter").replace(
        minds={"max_bytes_per_agent": 1024}, persistence={"snapshot_interval_ticks": 50})
    session = open_session(config, ("Tally", "counter"))
    try:
        tally = agent_named_after(session, "Tally")
        brains = session.brains
        assert brains is not None
        run(session, 400, lambda: brain_of(session, tally) is not None)
        brain = brain_of(session, tally)
        brain.seen = [f"someone with a long name number {i}" for i in range(200)]
        run(session, 120)
    finally:
        session.close()
    record = newest_minds(config)[tally]
    assert record["dropped"] > 0 and len(orjson.dumps(record["state"])) <= 1024
    assert record["state"]["seen"][-1] == brain.seen[-1]  # the newest kept
    err = capsys.readouterr().err
    assert err.count(f"the mind of agent {tally} (Tally) is over minds.max_bytes_per_agent") \
        == 1, err


def agent_named_after(session: Session, name: str) -> int:
    """The agent spawned by the first tick."""
    run(session, 1)
    return agent_named(session, name)


# -- LLM agents ---------------------------------------------------------------------------------


def test_llm_agents_memories_are_saved_with_each_snapshot_and_restored(
        tmp_path: Path, server: FakeLLMServer) -> None:
    config = saving_config(tmp_path).replace(llm=llm_section(
        server, agents=2, min_gap_ticks=5, think_interval_ticks=40, max_concurrent=2))
    session = open_session(config)
    try:
        assert session.llm is not None
        llm = session.llm
        run(session, 3000, lambda: llm.metrics.applied >= 2)
        agents = sorted(llm.minds)
    finally:
        session.close()
    saved = newest_minds(config)
    assert set(saved) <= set(agents) and saved
    eid, record = next(iter(saved.items()))
    assert record["kind"] == "llm" and record["brain"] == "llm"
    recent = record["state"]["memory"]["recent"]
    assert any("I decided" in line["text"] for line in recent)
    again = open_session(config)
    try:
        assert again.llm is not None
        assert list(again.llm.memory.of(eid).recent) == recent
    finally:
        again.close()
    saves = Path(config.paths.saves) / "w"
    assert not (saves / "memories").exists()  # none written any more

    # A folder written before minds/ existed keeps LLM agents' memories/<id>.json alone.
    for _tick, path in mind_files(saves / "minds"):
        path.unlink()
    (saves / "memories").mkdir()
    (saves / "memories" / f"{eid}.json").write_bytes(orjson.dumps(
        {"agent": eid, "name": "?", "memory": {"window": 5, "recent": [
            {"tick": 3, "text": "ate an apple", "fact": "eat"}], "facts": {"attack": 2}}}))
    other = next(a for a in agents if a != eid)
    (saves / "memories" / f"{other}.json").write_bytes(b"{not json")
    old = open_session(config)
    try:
        assert old.llm is not None
        assert [m["text"] for m in old.llm.memory.of(eid).recent] == ["ate an apple"]
        assert old.llm.memory.of(eid).facts == {"attack": 2}
        assert not old.llm.memory.of(other).recent  # unreadable: it starts afresh
        run(old, 5)
    finally:
        old.close()
    log = (tmp_path / "logs" / "world.log").read_text()
    assert f"the mind of agent {other} (" in log and "memories/" in log


# -- memory by meaning ---------------------------------------------------------------------------


def on_worker(call: Callable[[], Any]) -> Any:
    """Run ``call`` on a thread of its own, as a brain's worker would (embeddings are never
    asked for on the main thread)."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(call())
        except Exception as exc:
            out.append(exc)

    worker = threading.Thread(target=target)
    worker.start()
    worker.join(30)
    return out[0]


def embedding_session(tmp_path: Path, server: FakeLLMServer, **minds: Any) -> Session:
    llm = llm_section(server, models={"embed": {"model": "fake-embed"}},
                      breaker_failures=2, breaker_cooldown_s=60)
    config = minds_config(tmp_path, "mt_embed", llm=llm, thinker="Thinker").replace(
        minds={"embeddings": "embed", "recall_deadline_ms": 300, **minds})
    return open_session(config)


MEMORIES = ["the river was cold and full of fish", "traded two apples with Bo for gold",
            "Wren attacked me near the rocks", "slept under the old oak tree"]


def test_recall_by_meaning_ranks_by_similarity_through_a_real_embeddings_endpoint(
        tmp_path: Path, server: FakeLLMServer) -> None:
    session = embedding_session(tmp_path, server)
    try:
        brains = session.brains
        assert brains is not None and brains.llm is not None
        assert brains.llm.embedder is not None
        brain = sys.modules["mt_embed"].Thinker()
        brain.llm = brains.llm
        assert isinstance(brain.memory, EmbeddingMemory)
        for tick, text in enumerate(MEMORIES):
            brain.memory.store(text, tick=tick)
        # BM25 finds nothing for "water" (no shared word); by meaning the river comes first.
        words = RetrievalMemory()
        for tick, text in enumerate(MEMORIES):
            words.store(text, tick=tick)
        assert words.retrieve("where can I find water", 1)[0].text == MEMORIES[-1]  # newest
        found = on_worker(lambda: brain.memory.retrieve("where can I find water", 2))
        assert found[0].text == MEMORIES[0], found
        danger = on_worker(lambda: brain.memory.retrieve("danger", 1))
        assert danger[0].text == MEMORIES[2]
        assert brain.memory.by_meaning == 2 and brain.memory.failures == 0
        calls = [r for r in server.requests if r["path"].endswith("/embeddings")]
        assert calls[0]["body"]["model"] == "fake-embed"
        # Each entry is embedded once: the second recall sent only its query.
        assert [len(c["body"]["input"]) for c in calls] == [1 + len(MEMORIES), 1]
        # On the main thread it is refused (and recall goes by words, counted).
        brain.memory.retrieve("water", 1)
        assert brain.memory.failures == 1 and "main thread" in str(brain.memory.last_error)
        # The recall budget: the recalled text of a prompt stays within recall_tokens.
        brain.recall_tokens = 5
        assert sum(len(e.text) for e in within_tokens(found, 5)) <= 5 * 4
    finally:
        session.close()


def test_recall_falls_back_to_bm25_when_the_endpoint_fails_is_late_or_its_breaker_opens(
        tmp_path: Path, server: FakeLLMServer) -> None:
    session = embedding_session(tmp_path, server)
    try:
        brains = session.brains
        assert brains is not None and brains.llm is not None
        memory = EmbeddingMemory(brains.llm.embed)
        for tick, text in enumerate(MEMORIES):
            memory.store(text, tick=tick)
        server.embed_mode = "500"
        got = on_worker(lambda: memory.retrieve("apples gold", 1))
        assert got[0].text == MEMORIES[1]  # BM25's answer
        assert memory.failures == 1 and "HTTP 500" in str(memory.last_error)
        server.embed_mode = "hang"  # past minds.recall_deadline_ms (300 ms)
        got = on_worker(lambda: memory.retrieve("oak tree", 1))
        assert got[0].text == MEMORIES[3] and memory.failures == 2
        assert "no embeddings within 300 ms" in str(memory.last_error), memory.last_error
        # Two failures open the profile's breaker: no call is made, recall stays lexical.
        sent = len([r for r in server.requests if r["path"].endswith("/embeddings")])
        got = on_worker(lambda: memory.retrieve("Wren attacked", 1))
        assert got[0].text == MEMORIES[2] and "breaker" in str(memory.last_error)
        assert len([r for r in server.requests if r["path"].endswith("/embeddings")]) == sent
        assert memory.by_words == 3 and memory.by_meaning == 0
        assert session.embedder is not None and session.embedder.failures == 2
    finally:
        server.open_gate()
        session.close()


def test_without_an_endpoint_recall_is_bm25_and_nothing_is_counted() -> None:
    memory = EmbeddingMemory(None)
    for tick, text in enumerate(MEMORIES):
        memory.store(text, tick=tick)
    assert memory.retrieve("fish river", 1)[0].text == MEMORIES[0]

    def none(_texts: Any) -> Any:
        raise NoEmbeddings("none configured")

    quiet = EmbeddingMemory(none)
    quiet.set_state(memory.get_state())  # a memory restored from a save
    assert [e.text for e in quiet.entries()] == MEMORIES
    assert quiet.retrieve("fish river", 1)[0].text == MEMORIES[0]
    assert quiet.failures == 0 and quiet.by_words == 1


@pytest.mark.parametrize("make", [lambda: WindowMemory(3), lambda: RetrievalMemory(10),
                                  lambda: SummaryMemory(lambda _p: "folded", window=3, fold=2),
                                  lambda: EmbeddingMemory(None, 10)])
def test_every_memory_round_trips_through_a_real_file(tmp_path: Path,
                                                      make: Callable[[], Any]) -> None:
    memory = make()
    for tick, text in enumerate(MEMORIES * 2):
        memory.store(text, tick=tick, kind="seen")
    path = tmp_path / "memory.json"
    path.write_bytes(orjson.dumps(memory.get_state()))
    again = make()
    again.set_state(orjson.loads(path.read_bytes()))
    assert again.entries() == memory.entries()
    assert again.summarize() == memory.summarize()
    assert again.retrieve("apples", 2) == memory.retrieve("apples", 2)
    with pytest.raises(ValueError, match="entries"):
        again.set_state({"entries": [{"text": 3}]})
