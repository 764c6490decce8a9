"""Talking to agents (issue 33 items 3, 4, 6): /ask and /survey through the command surface,
the web API, every kind of brain answering in its own voice (an LLM against a real fake
server on 127.0.0.1, a user's Brain and LLMBrain, plain answers), interviews as logged
inputs that replay exactly, survey tables on disk, and bad input refused in one line."""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_world.app import Session
from agent_world.commands import Console
from agent_world.config import Config
from agent_world.contract.brains import Brain
from agent_world.contract.decision import Decision
from agent_world.contract.llmbrain import LLMBrain
from agent_world.contract.observation import Observation
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.world import World
from agent_world.decisions.interview import Question, Spoken, spoken_text
from agent_world.decisions.requests import NORMAL, URGENT, Job, RequestQueue
from agent_world.persistence import SaveFolder, open_world, replay
from agent_world.persistence.snapshots import load_first_snapshot
from agent_world.talk import Filter, FilterError, TalkError
from agent_world.talk.plain import plain_answer
from agent_world.types import FakeClock
from tests.llm_helpers import KEY, KEY_ENV, llm_config, run_until, wait_for
from tests.llm_server import FakeLLMServer
from tests.persistence_helpers import records, saving_config
from tests.web_helpers import served

ANSWER = "I am well, thank you. I found apples by the river and I mean to keep them."


class InterviewServer(FakeLLMServer):
    """The fake model, answering interviews in prose and decisions with the usual plan."""

    def _content(self, mode: str, body: dict[str, Any], key: str) -> str:
        system = str(next((m.get("content", "") for m in body.get("messages", [])
                           if m.get("role") == "system"), ""))
        if "interviewing you" in system:
            return ANSWER
        return super()._content(mode, body, key)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[InterviewServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    s = InterviewServer().start()
    try:
        yield s
    finally:
        s.stop()


def _console(session: Session) -> tuple[Console, list[str]]:
    told: list[str] = []
    return Console(session, notify=told.append), told


def _run(console: Console, line: str) -> list[str]:
    return asyncio.run(console.execute(line))


def _interview_inputs(folder: Path) -> list[dict[str, Any]]:
    return [r for r in records(folder) if r.get("kind") == "input"
            and r.get("type") == "interview"]


def _plain_session(tmp_path: Path, **talk: Any) -> Session:
    config = Config().replace(world={"size": [32, 32], "starting_agents": 6, "seed": 3},
                              paths={"logs": str(tmp_path / "logs"),
                                     "saves": str(tmp_path / "saves")}, talk=talk)
    session = Session(config, World.create(config), clock=FakeClock())
    session.loop.pause()
    return session


async def _settle(session: Session, ticks: int = 1) -> None:
    """Let call_soon'd pumps run, then step (the interview inputs apply)."""
    await asyncio.sleep(0)
    session.talk.pump()
    await session.loop.step(ticks)


# -- built-in brains: a plain answer from their state ------------------------------------------


def test_ask_a_builtin_agent_gets_a_plain_answer_printed_and_logged(tmp_path: Path) -> None:
    session = _plain_session(tmp_path)
    console, told = _console(session)
    eid = session.world.agents()[0][0]
    name = session.world.name_of(eid)
    memory_before = list(session.world.store.get(eid, c.Memory).recent)
    seen: list[Any] = []
    session.loop.observers.append(type("Obs", (), {"on_tick": lambda _s, r: seen.append(r)})())

    async def go() -> list[str]:
        reply = await console.execute(f'/ask {name} "are you hungry?"')
        await _settle(session)
        return reply

    try:
        reply = asyncio.run(go())
        assert reply[0].startswith(f"asked {name}#{eid} [") and "remember=no" in reply[0]
        assert len(told) == 1 and told[0].startswith(f"{name}#{eid} answers [")
        assert "plain" in told[0] and "hunger" in told[0]
        inputs = [i for r in seen for i in r.inputs if i.type == "interview"]
        assert len(inputs) == 1
        data = inputs[0].data
        assert data["agent"] == eid and data["question"] == "are you hungry?"
        assert data["answer"].startswith(f"I am {name}") and data["remember"] is False
        assert data["by"]["kind"] == "plain" and inputs[0].source == "console"
        # remember=no leaves the agent's memory as it was, and no interview event
        assert session.world.store.get(eid, c.Memory).recent == memory_before
        assert not [e for r in seen for e in r.events if e["type"] == ev.INTERVIEW]
        assert _run(console, "/ask")[0] == told[0]  # the latest interviews
    finally:
        session.close()


def test_plain_answers_are_deterministic_and_follow_the_question(tmp_path: Path) -> None:
    session = _plain_session(tmp_path)
    try:
        world = session.world
        eid = world.agents()[0][0]
        world.store.get(eid, c.Inventory).gold = 17
        first = plain_answer(world, eid, "How much gold do you have?")
        assert first == plain_answer(world, eid, "How much gold do you have?")
        assert "17 gold" in first and "hunger" not in first  # the topic asked only
        everything = plain_answer(world, eid, "tell me about yourself")
        assert "hunger" in everything and "17 gold" in everything and "Right now" in everything
    finally:
        session.close()


# -- remember=yes: a logged input, and replay stays exact --------------------------------------


def test_remembered_interviews_replay_exactly(tmp_path: Path) -> None:
    config = saving_config(tmp_path, "talk")
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder, clock=FakeClock())
    console, told = _console(session)
    eid = session.world.agents()[1][0]

    async def go() -> None:
        await session.loop.run(max_ticks=15, paced=False)
        await console.execute(f"/ask {eid} what happened lately? remember=yes")
        await console.execute(f"/ask {eid} and who do you trust? remember=no")
        await asyncio.sleep(0)
        await session.loop.run(max_ticks=40, paced=False)

    try:
        asyncio.run(go())
        memory = session.world.store.get(eid, c.Memory).recent
        kept = [m["text"] for m in memory if m["text"].startswith("I was asked")]
        assert len(kept) == 1 and "what happened lately?" in kept[0]
        assert len(told) == 2
    finally:
        session.close()
    folder = tmp_path / "saves" / "talk"
    logged = _interview_inputs(folder)
    assert [r["data"]["remember"] for r in logged] == [True, False]
    assert next(r for r in records(folder) if r.get("kind") == "event"
            and r.get("type") == ev.INTERVIEW)["agent"] == eid
    start = load_first_snapshot(SaveFolder.open(folder), config)
    result = replay(start.world, SaveFolder.open(folder))
    assert result.checks > 0 and result.inputs >= 2  # every state hash agreed
    start.world.close()


# -- surveys -----------------------------------------------------------------------------------


def test_a_survey_writes_its_table_as_csv_and_json(tmp_path: Path) -> None:
    config = saving_config(tmp_path, "poll")
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder, clock=FakeClock())
    session.loop.pause()
    console, told = _console(session)
    world = session.world
    traders = [eid for eid, row in world.agents() if row.agent.personality == "trader"]
    assert traders

    async def go() -> list[str]:
        reply = await console.execute('/survey "what do you need most?" personality=trader')
        await _settle(session)
        return reply

    try:
        reply = asyncio.run(go())
        assert reply[0].startswith("survey s") and f"asking {len(traders)} agent" in reply[0]
        sid = reply[0].split()[1].rstrip(":")
        assert told and told[-1].startswith(f"survey {sid} finished: {len(traders)} of")
        progress = _run(console, f"/surveys {sid}")
        assert progress[0].startswith(f"{sid} done: {len(traders)} answered")
    finally:
        session.close()
    folder = tmp_path / "saves" / "poll" / "surveys"
    rows = list(csv.DictReader(io.StringIO((folder / f"{sid}.csv").read_text())))
    assert sorted(int(r["agent"]) for r in rows) == sorted(traders)
    assert {r["personality"] for r in rows} == {"trader"}
    assert all(r["status"] == "answered" and r["answered_by"] == "plain"
               and r["brain"] == "builtin" and r["answer"].startswith("I am ") for r in rows)
    doc = orjson.loads((folder / f"{sid}.json").read_bytes())
    assert doc["question"] == "what do you need most?" and doc["filter"] == {
        "personality": ["trader"]}
    assert doc["answered"] == len(traders) and doc["done"] and len(doc["rows"]) == len(rows)
    logged = _interview_inputs(tmp_path / "saves" / "poll")
    assert {r["data"]["survey"] for r in logged} == {sid}


def test_survey_filters(tmp_path: Path) -> None:
    session = _plain_session(tmp_path)
    try:
        world = session.world
        eid, row = world.agents()[0]
        pos = world.store.get(eid, c.Position)
        around = Filter.parse({"area": f"{pos.x},{pos.y},{pos.x},{pos.y}"})
        assert around.match(world, eid, session.talk.model_of)
        assert Filter.parse({"brain": ["builtin"], "personality": row.agent.personality}).match(
            world, eid, session.talk.model_of)
        assert not Filter.parse({"model": "default"}).match(world, eid, session.talk.model_of)
        assert not Filter.parse({"team": "red"}).match(world, eid, session.talk.model_of)
        for bad, says in [({"colour": "red"}, "unknown filter"),
                          ({"personality": "grumpy"}, "unknown personality"),
                          ({"area": [3, 3, 1, 1]}, "x0 <= x1"),
                          ({"area": "1,2"}, "four whole numbers"),
                          ({"brain": ""}, "has no value")]:
            with pytest.raises(FilterError, match=says):
                Filter.parse(bad)
    finally:
        session.close()


# -- bad input: one clear line, nothing queued without bound ----------------------------------


def test_bad_questions_are_refused_in_one_line(tmp_path: Path) -> None:
    session = _plain_session(tmp_path, per_agent=2, max_pending=3, max_question_chars=40)
    console, _told = _console(session)
    world = session.world
    first, second = world.agents()[0][0], world.agents()[1][0]
    cases = [
        ("/ask 99999 hello", "no entity #99999"),
        ("/ask Nobody hello", "no living agent named 'Nobody'"),
        (f"/ask {first}", "name the agent and the question"),
        (f"/ask {first} remember=yes", "the question is empty"),
        (f"/ask {first} {'x' * 41}", "41 characters long; the limit is 40"),
        (f"/ask {first} hi remember=perhaps", "remember= takes yes or no"),
        ('/survey "hi" personality=aggressive team=nobody', "matches no living agent"),
        ('/survey "hi" colour=red', "unknown filter 'colour'"),
        ("/survey", "give the question"),
        ("/surveys s9-9", "no survey 's9-9'"),
    ]
    try:
        for line, says in cases:
            reply = _run(console, line)
            assert len(reply) == 1 and reply[0].startswith("error: ") and says in reply[0], (
                line, reply)
        # a flood: per agent, then overall, then a survey past the room left
        for _ in range(2):
            assert not _run(console, f"/ask {first} hello?")[0].startswith("error")
        flood = _run(console, f"/ask {first} hello?")[0]
        assert "already has 2 questions waiting" in flood and "talk.per_agent" in flood
        assert not _run(console, f"/ask {second} hello?")[0].startswith("error")
        full = _run(console, f"/ask {world.agents()[2][0]} hello?")[0]
        assert "3 interviews already wait" in full and "talk.max_pending" in full
        assert "talk.max_pending" in _run(console, '/survey "hi"')[0]
        assert session.talk.pending == 3 and session.talk.refused == 3
        # a dead agent: the id is refused at once; a question it cannot answer ends so
        victim = world.agents()[3][0]
        world.inbox.submit("kill", {"target": victim})
        asyncio.run(session.loop.step(1))
        assert "no entity" in _run(console, f"/ask {victim} hi")[0] or \
            "not a living agent" in _run(console, f"/ask {victim} hi")[0]
        with pytest.raises(TalkError, match="not a living agent") as caught:
            session.talk.ask(victim, "hi")
        assert caught.value.status == 404
    finally:
        session.close()


def test_a_question_to_an_agent_that_dies_ends_without_an_answer(tmp_path: Path) -> None:
    session = _plain_session(tmp_path)
    try:
        eid = session.world.agents()[0][0]
        interview = session.talk.ask(eid, "are you there?")
        session.world.inbox.submit("kill", {"target": eid})
        asyncio.run(session.loop.step(1))  # dies before the (tick-less) pump ran
        session.talk.pump()
        assert interview.state == "failed" and interview.error == "died before answering"
        assert session.talk.pending == 0
    finally:
        session.close()


# -- users' brains: their own interview(), or the plain answer --------------------------------


class Chatty(Brain):
    def decide(self, obs: Observation, actions: Mapping[str, Any]) -> Decision:
        return Decision("idle", {})

    def interview(self, question: str, obs: Observation) -> str | None:
        return f"  Chatty {obs.me.name} heard: {question}\n"


class Quiet(Brain):
    def decide(self, obs: Observation, actions: Mapping[str, Any]) -> Decision:
        return Decision("idle", {})


def test_a_users_brain_answers_through_its_interview_hook(tmp_path: Path) -> None:
    config = Config().replace(world={"size": [32, 32], "starting_agents": 0, "seed": 5},
                              paths={"logs": str(tmp_path / "logs")},
                              persistence={"enabled": False})
    session = Session(config, World.create(config), clock=FakeClock(),
                      brains={"chatty": Chatty, "quiet": Quiet})
    try:
        for name, brain in (("Cat", "chatty"), ("Mute", "quiet")):
            session.world.inbox.submit("spawn", {"kind": "agent", "name": name,
                                                 "brain": brain})
        asyncio.run(session.loop.run(max_ticks=2, paced=False))
        cat, mute = (session.world.population.find(n) for n in ("Cat", "Mute"))
        assert cat is not None and mute is not None
        talk = session.talk
        asked = [talk.ask(cat, "do you like fish?"), talk.ask(mute, "hello?")]
        assert wait_for(lambda: (talk.pump(), all(i.done for i in asked))[1])
        assert asked[0].answer == "Chatty Cat heard: do you like fish?"
        assert asked[0].by == {"kind": "brain", "brain": "chatty", "model": ""}
        assert asked[1].by["kind"] == "plain" and asked[1].answer.startswith("I am Mute")
    finally:
        session.close()


class FakeLLM:
    """``Brain.llm`` as a test sees it: remembers the prompts, answers a fixed line."""

    def __init__(self) -> None:
        self.prompts: list[tuple[str, str]] = []

    def rules(self) -> str:
        return "rules"

    def complete(self, prompt: str, *, system: str = "", max_tokens: int | None = None,
                 temperature: float | None = None) -> str:
        self.prompts.append((system, prompt))
        return "I remember the apples."


def test_llmbrain_interview_uses_its_memory(tmp_path: Path) -> None:
    session = _plain_session(tmp_path)
    try:
        from agent_world.contract.observation import observe
        brain = LLMBrain()
        llm = FakeLLM()
        brain.llm = llm  # type: ignore[assignment]
        brain.remember(3, "found apples under the old oak", "note")
        eid = session.world.agents()[0][0]
        text = brain.interview("where are the apples?", observe(session.world, eid))
        assert text == "I remember the apples."
        system, prompt = llm.prompts[0]
        assert "interviewing you" in system
        assert "found apples under the old oak" in prompt and "where are the apples?" in prompt
    finally:
        session.close()


# -- LLM agents: their model, their memory, off the tick ---------------------------------------


def test_an_llm_agent_answers_through_its_model_and_replays_without_it(
        tmp_path: Path, server: InterviewServer) -> None:
    config = llm_config(tmp_path, server, name="llmtalk")
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder)
    console, told = _console(session)
    try:
        run_until(session, 200, lambda: session.world.tick >= 10)
        thinker = next(eid for eid, row in session.world.agents() if row.agent.brain == "llm")

        async def ask() -> list[str]:
            return await console.execute(f"/ask {thinker} how is your day? remember=yes")

        reply = asyncio.run(ask())
        assert "remember=yes" in reply[0]
        assert session.llm is not None
        llm_memory = session.llm.memory

        def kept() -> bool:  # the interview input applies at a tick after its answer came
            return any("ASKED" in line for line in llm_memory.of(thinker).render(
                session.world.tick).get("recent", []))

        run_until(session, 3000, lambda: bool(told) and kept())
        assert told and told[0].endswith(f'"{ANSWER}"'), told
        assert "llm test-model" in told[0]
        asked = [r for r in server.requests
                 if "interviewing you" in str(r["body"]["messages"][0]["content"])]
        assert len(asked) == 1
        user = asked[0]["body"]["messages"][1]["content"]
        assert "how is your day?" in user and "What you perceive now" in user
        assert asked[0]["body"]["max_tokens"] == config.talk.max_answer_tokens
        memory = session.world.store.get(thinker, c.Memory).recent
        assert any(ANSWER[:40] in m["text"] for m in memory)
        assert kept()
        run_until(session, 3000, lambda: session.world.tick >= 60)  # a logged state hash
    finally:
        session.close()
    folder = tmp_path / "saves" / "llmtalk"
    logged = _interview_inputs(folder)
    assert len(logged) == 1 and logged[0]["data"]["answer"] == ANSWER
    assert logged[0]["data"]["by"]["kind"] == "llm" and logged[0]["source"] == "console"
    server.stop()  # replay reads the answer from the log; it never asks the model
    start = load_first_snapshot(SaveFolder.open(folder), config)
    result = replay(start.world, SaveFolder.open(folder))
    assert result.checks > 0
    start.world.close()


def test_interviews_never_go_ahead_of_an_urgent_decision() -> None:
    queue = RequestQueue()
    queue.put(Job(rid=1, agent=1, tick=0, priority=NORMAL, reasons=(), payload=None))
    assert queue.urgent_waiting() == 0
    queue.put(Job(rid=2, agent=2, tick=0, priority=URGENT, reasons=(), payload=None))
    assert queue.urgent_waiting() == 1
    assert queue.get(timeout=0) is not None and queue.urgent_waiting() == 0


def test_llm_interview_room_yields_to_urgent_decisions(tmp_path: Path,
                                                       server: InterviewServer) -> None:
    session = Session(llm_config(tmp_path, server, name="room"),
                      open_world(llm_config(tmp_path, server, name="room")).world)
    try:
        llm = session.llm
        assert llm is not None and llm.interview_room() == llm.cfg.max_concurrent
        llm.queue.put(Job(rid=99, agent=1, tick=0, priority=URGENT, reasons=(),
                          payload=None), wake=False)
        assert llm.interview_room() == 0
    finally:
        session.close()


def test_spoken_text_is_bounded_and_clean() -> None:
    assert spoken_text('  "Hello\x00 there"  ', 100) == "Hello there"
    cut = spoken_text("word " * 100, 30)
    assert len(cut) <= 30 and cut.endswith("…")
    with pytest.raises(ValueError, match="must not be empty"):
        Question(id="i", agent=1, text="  ", tick=0)
    assert Spoken(text=None, error="x").error == "x"


# -- the web API -------------------------------------------------------------------------------


def test_the_web_api_asks_polls_and_surveys(tmp_path: Path) -> None:
    async def go() -> None:
        async with served(tmp_path, save=True) as s:
            eid = s.world.agents()[0][0]
            url = f"{s.url}/api/agents/{eid}/ask"
            async with s.http.post(url, json={"question": "how are you?",
                                              "wait_s": 5}) as resp:
                body = await resp.json()
                assert resp.status == 200, body
            assert body["state"] == "answered" and body["answer"].startswith("I am ")
            assert body["by"]["kind"] == "plain" and body["remember"] is False
            polled = await s.get(f"/api/interviews/{body['id']}")
            assert polled["answer"] == body["answer"]
            listed = await s.get("/api/interviews")
            assert listed["interviews"][0]["id"] == body["id"]
            # without wait_s: 202 and an id to poll
            async with s.http.post(url, json={"question": "and now?"}) as resp:
                later = await resp.json()
                assert resp.status in (200, 202) and later["id"]
            # errors: JSON with a status, 4xx
            for path, payload, status, says in [
                    (f"/api/agents/{eid}/ask", {"question": ""}, 400, "empty"),
                    ("/api/agents/99999/ask", {"question": "hi"}, 404, "not a living agent"),
                    (f"/api/agents/{eid}/ask", {"question": 3}, 400, "question must be"),
                    (f"/api/agents/{eid}/ask", {"question": "hi", "wait_s": 99}, 400,
                     "wait_s must be"),
                    (f"/api/agents/{eid}/ask", {"question": "hi", "remember": "y"}, 400,
                     "remember must be"),
                    ("/api/surveys", {"question": "hi", "filter": {"team": "nobody"}}, 400,
                     "matches no living agent"),
                    ("/api/surveys", {"question": "hi", "filter": {"mood": "x"}}, 400,
                     "unknown filter")]:
                async with s.http.post(s.url + path, json=payload) as resp:
                    err = await resp.json()
                    assert resp.status == status and says in err["error"], (path, err)
            async with s.bare.post(url, json={"question": "hi"}) as resp:
                assert resp.status == 401  # a write needs the token
            await s.get("/api/interviews/i0-999", 404)
            async with s.http.post(s.url + "/api/surveys", json={
                    "question": "what do you carry?", "filter": {"brain": "builtin"},
                    "remember": True}) as resp:
                made = await resp.json()
                assert resp.status == 202 and made["agents"] == len(s.world.agents())
            await asyncio.sleep(0.05)
            s.session.talk.pump()
            table = await s.get(f"/api/surveys/{made['id']}")
            assert table["done"] and table["answered"] == made["agents"]
            assert table["columns"][:3] == ["agent", "name", "personality"]
            assert all(r["status"] == "answered" for r in table["rows"])
            assert table["files"][0].endswith(f"surveys/{made['id']}.csv")
            async with s.http.get(f"{s.url}/api/surveys/{made['id']}?format=csv") as resp:
                assert resp.status == 200 and (await resp.text()).startswith("agent,name,")
            assert (await s.get("/api/surveys"))["surveys"][0]["id"] == made["id"]
            await s.get("/api/surveys/nope", 404)
            # a flood: answers held back (no pump), the fourth question to one agent is 429
            talk = s.session.talk
            held, talk.pump = talk.pump, lambda: None  # type: ignore[method-assign]
            other = s.world.agents()[1][0]
            statuses = []
            for _ in range(4):
                async with s.http.post(f"{s.url}/api/agents/{other}/ask",
                                       json={"question": "again?"}) as resp:
                    statuses.append(resp.status)
                    flood = await resp.json()
            assert statuses == [202, 202, 202, 429] and "talk.per_agent" in flood["error"]
            talk.pump = held  # type: ignore[method-assign]
            talk.pump()
            assert talk.per_agent.get(other) is None
            # the command surface works over the web too
            reply = await s.command(f"/ask {eid} hello there")
            assert reply["reply"][0].startswith("asked ")
            await s.step(1)
    asyncio.run(go())


def test_the_console_completes_ask_and_survey(tmp_path: Path) -> None:
    from prompt_toolkit.document import Document

    from agent_world.commands import COMMANDS
    from agent_world.console.completion import WorldCompleter
    session = _plain_session(tmp_path)
    try:
        completer = WorldCompleter(session, COMMANDS)
        name = session.world.name_of(session.world.agents()[0][0])

        def complete(text: str) -> list[str]:
            return [c.text for c in completer.get_completions(Document(text), None)]  # type: ignore[arg-type]

        assert "/ask" in complete("/as") and "/survey" in complete("/surv")
        assert name in complete("/ask ")
        assert complete("/ask Zed hi rem") == ["remember="]
        assert complete("/ask Zed hi remember=") == ["remember=yes", "remember=no"]
        assert "personality=trader" in complete('/survey "hi" personality=')
        assert "area=" in complete('/survey "hi" a')
    finally:
        session.close()
