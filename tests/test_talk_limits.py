"""Talking to agents at the edges (issue 33 items 3, 4, 6): an interview answered inside a
``brains.processes`` child, LLM interviews that wait out a spent budget and then fail
saying so (a real aiohttp fake model on 127.0.0.1), a survey that stops spending at the
budget, an agent that dies while its brain composes the answer, and the Talk owner's
lanes (the operator's questions first, ``talk.in_flight`` per kind, deaths ended at once).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent_world.app import Session
from agent_world.config import Config
from agent_world.contract.brains import Brain
from agent_world.contract.decision import Decision
from agent_world.contract.observation import Observation
from agent_world.core.world import World
from agent_world.decisions.interview import Question, Said, Spoken
from agent_world.persistence import open_world
from agent_world.talk import Filter, Talk
from agent_world.types import FakeClock, TickReport
from tests.llm_helpers import KEY, KEY_ENV, llm_config, run_until, wait_for
from tests.persistence_helpers import saving_config, session_with
from tests.test_talk import ANSWER, InterviewServer, _plain_session
from tests.test_user_brains import run

CALL_TOKENS = 340  # what the fake server charges a call (usage_mode "fixed")


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[InterviewServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    s = InterviewServer().start()
    try:
        yield s
    finally:
        s.stop()


def _interview_requests(server: InterviewServer) -> list[dict[str, Any]]:
    return [r for r in server.requests
            if "interviewing you" in str(r["body"]["messages"][0]["content"])]


# -- a user's brain in a process of its own (brains.processes) ---------------------------------

PROCESS_BRAINS = '''
import os
from agent_world.agents import Brain, Decision

class Talker(Brain):
    """Counts its decisions; its interview says where it runs and how many it made."""
    def __init__(self):
        self.count = 0
    def decide(self, obs, actions):
        self.count += 1
        return Decision("wander", {"ticks": 3})
    def interview(self, question, obs):
        return f"pid {os.getpid()}, {self.count} decisions, {obs.me.name} heard: {question}"
'''


def test_an_interview_is_answered_inside_the_brains_process(tmp_path: Path) -> None:
    folder = tmp_path / "brains"
    folder.mkdir()
    (folder / "talk_proc.py").write_text(PROCESS_BRAINS)
    config = saving_config(tmp_path).replace(brains={
        "registered": {"talker": "talk_proc:Talker"}, "processes": {"talker": 1},
        "path": str(folder), "deadline_ms": 2000, "min_gap_ticks": 2,
        "think_interval_ticks": 6})
    session = session_with(config, ("Proc", "talker"))
    brains = session.brains
    assert brains is not None
    try:
        run(session, 2, lambda: False)  # the spawn applies
        eid = session.world.population.find("Proc")
        assert eid is not None
        run(session, 3000, lambda: (m := brains.minds.get(eid)) is not None
            and m.decisions >= 2)
        assert brains.minds[eid].decisions >= 2, brains.stats()
        interview = session.talk.ask(eid, "where do you live?")
        assert wait_for(lambda: (session.talk.pump(), interview.done)[1], 20.0), interview
        assert interview.state == "answered", interview.error
        assert interview.by == {"kind": "brain", "brain": "talker", "model": ""}
        pid, decisions, said = interview.answer.split(", ", 2)
        # Answered by the brain object that decided, in its own process (not this one).
        assert pid.startswith("pid ") and int(pid[4:]) != os.getpid()
        assert int(decisions.split()[0]) >= 2
        assert said == "Proc heard: where do you live?"
        assert brains.pools["talker"].restarts == 0
    finally:
        session.close()


# -- the LLM's budget -----------------------------------------------------------------------------


def test_llm_interviews_wait_out_a_spent_budget_then_fail_saying_why(
        tmp_path: Path, server: InterviewServer) -> None:
    # Four agents' first decisions spend far more than 100 tokens: the budget is spent.
    config = llm_config(tmp_path, server, name="broke", tokens_per_hour=100,
                        budget_burst_minutes=60).replace(talk={"max_wait_s": 1})
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder)
    try:
        llm = session.llm
        assert llm is not None
        run_until(session, 400, lambda: llm.budget.exhausted() and not llm.in_flight)
        assert llm.budget.exhausted() and "LLM budget spent" in llm.unavailable()
        ticked = session.world.tick
        for _attempt in range(3):  # an agent may die while it waits: ask another then
            thinker = next(eid for eid, row in session.world.agents()
                           if row.agent.brain == "llm")
            interview = session.talk.ask(thinker, "can you still talk?")
            run_until(session, 10_000, lambda asked=interview: asked.done, wall_s=30.0,
                      pause_s=0.005)
            if interview.error != "died before answering":
                break
        assert interview.state == "failed", interview.to_dict()
        assert interview.error.startswith("not asked: it waited 1 s (talk.max_wait_s): LLM "
                                          "budget spent"), interview.error
        assert interview.by["kind"] == "" or interview.by.get("brain") == "llm"
        assert session.world.tick > ticked + 5  # the world went on while it waited
        assert _interview_requests(server) == []  # it never reached the model
    finally:
        session.close()


def test_a_survey_stops_spending_at_the_budget(tmp_path: Path,
                                              server: InterviewServer) -> None:
    """A paused world (no decisions spend anything), four LLM agents surveyed, a budget
    that pays for two calls: two answer, the other two wait talk.max_wait_s and fail with
    the budget's reason, and the model got exactly the two calls the budget paid for."""
    allowed = 2
    config = llm_config(tmp_path, server, name="poll", agents=4,
                        tokens_per_hour=allowed * CALL_TOKENS, budget_burst_minutes=60,
                        cache_size=0).replace(world={"starting_agents": 8},
                                              talk={"max_wait_s": 1, "in_flight": 1})
    opened = open_world(config)
    session = Session(config, opened.world, folder=opened.folder)
    session.loop.pause()
    llm = session.llm
    assert llm is not None

    async def collect() -> None:
        survey = session.talk.survey("what do you want most?",
                                     Filter.parse({"brain": "llm"}))
        for _ in range(400):  # nothing ticks: answers and the talk's own timer pump it
            if survey.done:
                break
            await asyncio.sleep(0.05)

    try:
        asyncio.run(collect())
        survey = next(iter(session.talk.surveys.values()))
        assert survey.done and session.world.tick == 0, survey.counts()
        rows = sorted(survey.rows.values(), key=lambda r: r.interview)
        assert len(rows) == 4
        assert [r.status for r in rows] == ["answered"] * allowed + ["failed"] * 2
        assert all(r.answer == ANSWER and r.answered_by == "llm" for r in rows[:allowed])
        for row in rows[allowed:]:
            assert row.error.startswith("not asked: it waited 1 s (talk.max_wait_s): LLM "
                                        "budget spent"), row.error
        # The model got exactly what the budget paid for, and nothing more was spent.
        assert len(server.requests) == len(_interview_requests(server)) == allowed
        assert llm.budget.spent()[0] == allowed * CALL_TOKENS == config.llm.tokens_per_hour
        assert llm.budget.exhausted()
    finally:
        session.close()


# -- death while the brain answers --------------------------------------------------------------

RELEASE = threading.Event()
ASKED = threading.Event()


class SlowTalker(Brain):
    def decide(self, obs: Observation, actions: Mapping[str, Any]) -> Decision:
        return Decision("idle", {})

    def interview(self, question: str, obs: Observation) -> str | None:
        ASKED.set()
        RELEASE.wait(10)
        return "I was alive when I began to answer."


def test_an_agent_that_dies_while_its_brain_answers_ends_without_an_answer(
        tmp_path: Path) -> None:
    RELEASE.clear()
    ASKED.clear()
    config = Config().replace(world={"size": [32, 32], "starting_agents": 3, "seed": 5},
                              paths={"logs": str(tmp_path / "logs")},
                              persistence={"enabled": False})
    session = Session(config, World.create(config), clock=FakeClock(),
                      brains={"slow": SlowTalker})
    seen: list[Any] = []
    session.loop.observers.append(type("Obs", (), {"on_tick": lambda _s, r: seen.append(r)})())
    try:
        session.world.inbox.submit("spawn", {"kind": "agent", "name": "Mort", "brain": "slow"})
        asyncio.run(session.loop.run(max_ticks=2, paced=False))
        session.loop.pause()
        mort = session.world.population.find("Mort")
        assert mort is not None
        interview = session.talk.ask(mort, "how long will you live?", remember=True)
        session.talk.pump()
        assert interview.state == "asked" and ASKED.wait(5)
        session.world.inbox.submit("kill", {"target": mort})
        asyncio.run(session.loop.step(1))
        assert interview.state == "asked"  # its brain is still composing the answer
        RELEASE.set()
        assert wait_for(lambda: (session.talk.pump(), interview.done)[1])
        assert interview.state == "failed" and interview.error == "died before answering"
        assert interview.by["kind"] == "brain"
        assert session.talk.pending == 0 and session.talk.per_agent == {}
        asyncio.run(session.loop.step(1))
        logged = [i.data for r in seen for i in r.inputs if i.type == "interview"]
        assert len(logged) == 1 and logged[0]["answer"] == "" and \
            logged[0]["error"] == "died before answering"
        assert not [r for r in seen for i in r.inputs if i.type == "interview"
                    and getattr(i, "rejected", None)]
    finally:
        RELEASE.set()
        session.close()


# -- the owner's lanes ------------------------------------------------------------------------


class Part:
    """An Interviewer for the agents it is given: its room is set by the test, and it
    answers when the test says."""

    def __init__(self, agents: set[int]) -> None:
        self.agents = agents
        self.room = 0
        self.asked: list[tuple[Question, Said]] = []

    def speaks_for(self, eid: int) -> bool:
        return eid in self.agents

    def interview_room(self) -> int:
        return self.room

    def unavailable(self) -> str:
        return "" if self.room else "busy for the test"

    def interview(self, question: Question, said: Said) -> None:
        self.asked.append((question, said))


def test_lanes_send_the_operators_first_within_in_flight_and_end_deaths_at_once(
        tmp_path: Path) -> None:
    session = _plain_session(tmp_path, in_flight=2)
    world = session.world
    eids = [eid for eid, _row in world.agents()]
    spoken = set(eids[:4])
    part = Part(spoken)
    talk = Talk(world, session.config.talk, parts=lambda: [object(), part], save_dir=None)
    try:
        survey = talk.survey("how is it?", Filter())
        assert talk.pending == len(eids) and talk.waiting == len(eids)
        mine = talk.ask(eids[3], "and you?")
        talk.pump()
        # Plain answers need no room; the part's agents wait for it.
        assert talk.waiting == 5 and not part.asked
        assert all(survey.rows[e].status == "answered" for e in eids[4:])
        part.room = 5
        talk.pump()
        # The operator's own question first, then the survey's oldest; at most in_flight.
        assert [q.id for q, _said in part.asked] == [mine.id, survey.rows[eids[0]].interview]
        assert talk.out == {id(part): 2}
        assert all(q.routine == (q.id != mine.id) for q, _said in part.asked)
        # An agent that dies while its question waits ends at once, wherever it waits.
        reports: list[TickReport] = []
        session.loop.observers.append(type("Obs", (), {
            "on_tick": lambda _s, r: reports.append(r)})())
        world.inbox.submit("kill", {"target": eids[2]})
        asyncio.run(session.loop.step(1))
        assert talk.waiting == 3
        talk.on_tick(reports[-1])
        assert survey.rows[eids[2]].status == "failed"
        assert survey.rows[eids[2]].error == "died before answering"
        _question, said = part.asked[0]
        said(Spoken(text="Fine.", by={"kind": "brain"}))
        talk.pump()
        assert mine.state == "answered" and mine.answer == "Fine."
        assert [q.id for q, _said in part.asked][2:] == [survey.rows[eids[1]].interview]
        assert talk.waiting == 1 and talk.out == {id(part): 2}
    finally:
        session.close()

