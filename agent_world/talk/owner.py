"""``Talk``: the interviews and surveys of one session, on the main thread.

``ask`` takes a question for one living agent (checked at once: the agent, the length, the
bounds) and ``survey`` one for every agent a filter matches; neither waits. ``pump`` (after
every tick, and whenever an answer arrives while the world is paused) sends what may go out
now: to the kind of brain that speaks for the agent (``decisions.interview.Interviewer``:
the LLM's, users' brains), within the room it leaves (never ahead of an urgent decision,
at most ``talk.in_flight`` out per kind), or else answers plainly from the agent's state
(a bounded number per pump). Waiting interviews are kept in lanes, one per kind and per
asker (the operator's own questions, surveys'), each oldest first, so a round costs what
it sends and what has expired, not the length of the waiting list (``talk.max_pending``).
An answer, or its absence (a fault, a timeout, a death), ends
the interview: it becomes an ``interview`` input (logged; with ``remember`` the agent keeps
it), its survey's row is filled in, and whoever asked is told (the console prints it, a web
client polls or waits). The world never waits for any of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_world.config import TalkConfig, llm_profile_of
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.world import World
from agent_world.decisions.interview import Interviewer, Question, Spoken
from agent_world.talk.plain import plain_answer
from agent_world.talk.surveys import Filter, Row, Survey
from agent_world.types import TickReport
from agent_world.userbrains.answerer import UserBrains

__all__ = ["PLAIN_PER_PUMP", "Interview", "Talk", "TalkError"]

PLAIN_PER_PUMP = 32  # plain answers made in one pump at most (the rest wait for the next)
PLAIN = 0  # the lane key of agents answered plainly from their state (no id() is 0)
SURVEYS_KEPT = 100  # finished surveys kept in memory (their files stay)
LISTED = 20  # interviews or surveys /ask and /survey list at most
POLL_S = 0.5  # how often a world without ticks (paused) looks at what waits


class TalkError(ValueError):
    """A question that is not taken; the message says why and what to do, on one line.
    ``status``: the HTTP status the web API answers it with (400 a bad question, 404 no
    such living agent, 429 too much already waits)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


Listener = Callable[["Interview"], None]


@dataclass(slots=True, kw_only=True)
class Interview:
    """One question to one agent, from asking to its end."""

    id: str
    agent: int
    name: str
    question: str
    remember: bool
    source: str
    asked_tick: int
    asked_at: float  # monotonic seconds
    survey: str = ""
    state: str = "waiting"  # waiting | asked | answered | failed
    answer: str = ""
    error: str = ""
    by: dict[str, Any] = field(default_factory=dict)
    latency_s: float = 0.0
    answered_tick: int | None = None
    sent_at: float = 0.0
    part: Any = None  # the interviewer it went to (None: a plain answer)
    order: int = 0  # its place among the questions asked (lanes keep this order)
    lane: tuple[int, bool] | None = None  # the lane it waits in (None: not waiting)
    listeners: list[Listener] = field(default_factory=list)
    waiters: list[asyncio.Future[Interview]] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.state in ("answered", "failed")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "agent": self.agent, "name": self.name,
                "question": self.question, "remember": self.remember,
                "source": self.source, "survey": self.survey or None, "state": self.state,
                "answer": self.answer if self.state == "answered" else None,
                "error": self.error or None, "by": dict(self.by),
                "asked_tick": self.asked_tick, "answered_tick": self.answered_tick,
                "latency_ms": round(self.latency_s * 1000, 1) if self.done else None}

    def line(self) -> str:
        """The interview's end for the operator, on one line."""
        who = f"{self.name}#{self.agent}"
        by = self.by.get("kind", "")
        model = self.by.get("model") or self.by.get("profile") or ""
        how = f"{by}{' ' + model if model else ''}"
        if self.state == "answered":
            kept = " (remembered)" if self.remember else ""
            return f"{who} answers [{self.id}, {how}]{kept}: \"{self.answer}\""
        return f"{who} did not answer [{self.id}]: {self.error}"


class Talk:
    """Interviews and surveys: bounded, off the tick, every end a logged input."""

    def __init__(self, world: World, cfg: TalkConfig, *,
                 parts: Callable[[], Iterable[Any]], save_dir: Path | None,
                 note: Callable[[str], None] = lambda _text: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``parts``: the session's kinds of brain (``Session.thinking_parts``); those that
        are ``Interviewer``s answer for their agents. ``save_dir``: where ``surveys/`` goes
        (None: surveys are kept in memory only)."""
        self.world = world
        self.cfg = cfg
        self.parts = parts
        self.save_dir = save_dir
        self.note = note
        self.clock = clock
        self.interviews: OrderedDict[str, Interview] = OrderedDict()  # open, then finished
        self.surveys: OrderedDict[str, Survey] = OrderedDict()
        # Waiting interviews by lane: (the kind's key, a survey's?) -> ids, oldest first. The
        # kind's key is id(the Interviewer), or PLAIN for agents answered from their state.
        self.lanes: dict[tuple[int, bool], deque[str]] = {}
        self._lane_parts: dict[int, Any] = {}  # kind's key -> the Interviewer
        self._sent: dict[str, Interview] = {}  # sent to a brain, not yet answered
        self._asks_of: dict[int, list[str]] = {}  # agent -> its interviews not yet ended
        self._interviewers_of: tuple[tuple[int, ...], list[Any]] = ((), [])
        self.per_agent: dict[int, int] = {}
        self.pending = 0  # interviews not yet ended
        self.out: dict[int, int] = {}  # id(part) -> interviews sent to it, not yet ended
        self.asked = 0
        self.answered = 0
        self.failed = 0
        self.refused = 0
        self._serial = 0
        self._said: queue.SimpleQueue[tuple[str, Spoken]] = queue.SimpleQueue()
        self._aio: asyncio.AbstractEventLoop | None = None
        self._wake_lock = threading.Lock()
        self._wake_due = False
        self._survey_listeners: dict[str, Callable[[Survey], None]] = {}
        self._timer: asyncio.TimerHandle | None = None

    # -- asking (main thread) ------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}{self.world.tick}-{self._serial}"

    def check_question(self, question: str) -> str:
        """The question as asked (spaces folded); TalkError when it is empty or too long."""
        text = " ".join(question.split())
        limit = self.cfg.max_question_chars
        if not text:
            raise TalkError("the question is empty; ask something, e.g. /ask Zed \"how are "
                            "you?\"")
        if len(text) > limit:
            raise TalkError(f"the question is {len(text)} characters long; the limit is "
                            f"{limit} (talk.max_question_chars): ask it shorter")
        return text

    def _living(self, eid: int) -> str:
        agent = self.world.store.try_get(eid, c.Agent)
        if agent is None or not self.world.alive(eid):
            raise TalkError(f"#{eid} is not a living agent (dead, or never was); /list "
                            "agents shows who lives", 404)
        return agent.name

    def ask(self, eid: int, question: str, *, remember: bool | None = None,
            source: str = "console", listener: Listener | None = None) -> Interview:
        """Put ``question`` to agent ``eid``; it is answered later (``listener`` is called
        then, on the main thread). TalkError says why it is not taken."""
        self._bind_loop()
        text = self.check_question(question)
        name = self._living(eid)
        held = self.per_agent.get(eid, 0)
        if held >= self.cfg.per_agent:
            self.refused += 1
            raise TalkError(f"{name}#{eid} already has {held} questions waiting (the most "
                            f"talk.per_agent allows); wait for its answers", 429)
        if self.pending >= self.cfg.max_pending:
            self.refused += 1
            raise TalkError(f"{self.pending} interviews already wait for answers (the most "
                            "talk.max_pending allows); wait for them, or raise the setting", 429)
        interview = self._open(eid, name, text, remember=self._remember(remember),
                               source=source, survey="")
        if listener is not None:
            interview.listeners.append(listener)
        self._enqueue(interview, self._part_for(eid))
        self._wake()  # plain answers need no tick: a paused world answers them too
        return interview

    @property
    def waiting(self) -> int:
        """Interviews waiting to be sent (not yet asked of a brain)."""
        return sum(len(lane) for lane in self.lanes.values())

    def _enqueue(self, interview: Interview, part: Any) -> None:
        """Into the lane of the kind that answers it (the operator's own questions go
        before the surveys' waiting ones: each kind sends its operator lane first)."""
        key = PLAIN if part is None else id(part)
        if part is not None:
            self._lane_parts[key] = part
        lane_key = (key, bool(interview.survey))
        lane = self.lanes.setdefault(lane_key, deque())
        interview.lane = lane_key
        if not lane or self.interviews[lane[-1]].order < interview.order:
            lane.append(interview.id)
            return
        at = len(lane)  # a question moved between kinds (rare): keep the lane in order
        while at > 0 and self.interviews[lane[at - 1]].order > interview.order:
            at -= 1
        lane.insert(at, interview.id)

    def _dequeue(self, interview: Interview) -> None:
        """Out of its lane, wherever it is in it."""
        if interview.lane is None:
            return
        lane = self.lanes.get(interview.lane)
        if lane is not None:
            if lane and lane[0] == interview.id:
                lane.popleft()
            else:
                with contextlib.suppress(ValueError):
                    lane.remove(interview.id)
        interview.lane = None

    def _remember(self, remember: bool | None) -> bool:
        return self.cfg.remember if remember is None else remember

    def _open(self, eid: int, name: str, text: str, *, remember: bool, source: str,
              survey: str) -> Interview:
        interview = Interview(id=self._new_id("i"), agent=eid, name=name, question=text,
                              remember=remember, source=source, asked_tick=self.world.tick,
                              asked_at=self.clock(), survey=survey, order=self._serial)
        self.interviews[interview.id] = interview
        self._asks_of.setdefault(eid, []).append(interview.id)
        self.per_agent[eid] = self.per_agent.get(eid, 0) + 1
        self.pending += 1
        self.asked += 1
        return interview

    def survey(self, question: str, filt: Filter, *, remember: bool | None = None,
               source: str = "console",
               listener: Callable[[Survey], None] | None = None) -> Survey:
        """Ask every living agent ``filt`` matches; TalkError when it matches nobody or
        would pass the bounds."""
        self._bind_loop()
        text = self.check_question(question)
        open_surveys = sum(1 for s in self.surveys.values() if not s.done)
        if open_surveys >= self.cfg.max_surveys:
            self.refused += 1
            raise TalkError(f"{open_surveys} surveys are still collecting answers (the most "
                            "talk.max_surveys allows); wait for one to finish", 429)
        world = self.world
        matched = [eid for eid, _row in world.agents()
                   if world.alive(eid) and filt.match(world, eid, self.model_of)]
        if not matched:
            raise TalkError(f"the survey matches no living agent ({filt.describe()}); "
                            "/list agents shows who lives")
        room = self.cfg.max_pending - self.pending
        if len(matched) > room:
            self.refused += 1
            raise TalkError(f"the survey matches {len(matched)} agents and only {room} more "
                            f"interviews may wait (talk.max_pending {self.cfg.max_pending}); "
                            "narrow the filter or wait", 429)
        full = [eid for eid in matched if self.per_agent.get(eid, 0) >= self.cfg.per_agent]
        if full:
            self.refused += 1
            raise TalkError(f"{len(full)} of the agents it matches (first "
                            f"{world.label(full[0])}) already have talk.per_agent "
                            f"({self.cfg.per_agent}) questions waiting; wait for them", 429)
        remembered = self._remember(remember)
        survey = Survey(id=self._new_id("s"), question=text, filter=filt,
                        remember=remembered, source=source, asked_tick=world.tick)
        self.surveys[survey.id] = survey
        interviewers = self._interviewers()
        for eid in matched:
            agent = world.store.get(eid, c.Agent)
            team = world.store.try_get(eid, c.Team)
            interview = self._open(eid, agent.name, text, remember=remembered,
                                   source=source, survey=survey.id)
            survey.rows[eid] = Row(agent=eid, name=agent.name, personality=agent.personality,
                                   team=team.name if team is not None else "",
                                   brain=agent.brain, interview=interview.id,
                                   asked_tick=world.tick)
            self._enqueue(interview, next((p for p in interviewers if p.speaks_for(eid)),
                                          None))
        if listener is not None:
            self._survey_listeners[survey.id] = listener
        self._trim_surveys()
        self._wake()  # plain answers need no tick: a paused world answers them too
        return survey

    def model_of(self, eid: int) -> str:
        """The model profile agent ``eid`` thinks with ('' for none): ``default`` for brain
        ``llm``, NAME for ``llm:NAME``, an ``LLMBrain``'s ``model``."""
        agent = self.world.store.get(eid, c.Agent)
        profile = llm_profile_of(agent.brain)
        if profile is not None:
            return profile or "default"
        for part in self.parts():
            if isinstance(part, UserBrains) and eid in part.minds:
                return part.model_of(agent.brain)
        return ""

    # -- answers (any thread), and the main thread's round ----------------------------------

    def _bind_loop(self) -> None:
        if self._aio is None:
            try:
                self._aio = asyncio.get_running_loop()
            except RuntimeError:
                self._aio = None

    def _said_by(self, iid: str) -> Callable[[Spoken], None]:
        def said(spoken: Spoken) -> None:
            self._said.put((iid, spoken))
            self._wake()
        return said

    def _wake(self) -> None:
        """An answer came: pump on the main thread soon, even while the world is paused."""
        aio = self._aio
        if aio is None:
            return
        with self._wake_lock:
            if self._wake_due:
                return
            self._wake_due = True
        with contextlib.suppress(RuntimeError):  # a closed loop: the program is stopping
            aio.call_soon_threadsafe(self._woken)

    def _woken(self) -> None:
        with self._wake_lock:
            self._wake_due = False
        self.pump()

    def on_tick(self, report: TickReport) -> None:
        """After every tick (the session's between-ticks work): questions to agents that
        died in it end so, then the round."""
        if not self.pending:
            return
        if self._asks_of:
            for event in report.events:
                if event.get("type") == ev.DEATH and event.get("agent") in self._asks_of:
                    self._died(int(event["agent"]))
        self.pump()

    def _died(self, eid: int) -> None:
        """Agent ``eid`` died: its waiting questions end (those a brain has are left to
        its answer or their timeout)."""
        for iid in list(self._asks_of.get(eid, ())):
            interview = self.interviews.get(iid)
            if interview is not None and interview.state == "waiting":
                self._dequeue(interview)
                self._end(interview, error="died before answering", by=self._by(interview))

    def pump(self) -> None:
        """Take the answers in, end what waited too long, send what may go out now."""
        while True:
            try:
                iid, spoken = self._said.get_nowait()
            except queue.Empty:
                break
            interview = self.interviews.get(iid)
            if interview is not None and interview.state == "asked":
                self._heard(interview, spoken)
        if self.pending:
            self._expire()
            self._send()
        self._poll_later()

    def _poll_later(self) -> None:
        """While questions wait to be sent or answered, look again in POLL_S even if no
        tick comes (a paused world): room frees as decisions end, and the waiting expire."""
        if self._timer is not None or not (self._sent or self.lanes) or self._aio is None:
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: the program is stopping
            self._timer = self._aio.call_later(POLL_S, self._polled)

    def _polled(self) -> None:
        self._timer = None
        self.pump()

    def _heard(self, interview: Interview, spoken: Spoken) -> None:
        if not self.world.alive(interview.agent):  # it died while its brain answered
            self._end(interview, error="died before answering", by=spoken.by,
                      latency_s=spoken.latency_s)
        elif spoken.error:
            self._end(interview, error=spoken.error, by=spoken.by,
                      latency_s=spoken.latency_s)
        elif spoken.text is None:  # the brain has nothing of its own: a plain answer
            self._plain(interview, by={**spoken.by, "kind": "plain"})
        else:
            self._end(interview, answer=spoken.text, by=spoken.by,
                      latency_s=spoken.latency_s)

    def _expire(self) -> None:
        """End what a brain has not answered within talk.answer_timeout_s, and what has
        waited to be sent longer than talk.max_wait_s (each lane's oldest first, so only
        the expired are looked at)."""
        now = self.clock()
        for interview in [i for i in self._sent.values()
                          if now - i.sent_at > self.cfg.answer_timeout_s]:
            self._end(interview, error=f"timeout: no answer within "
                      f"{self.cfg.answer_timeout_s:g} s (talk.answer_timeout_s)",
                      by=self._by(interview), latency_s=now - interview.sent_at)
        for lane in list(self.lanes.values()):
            while lane:
                interview = self.interviews[lane[0]]
                if interview.state != "waiting":
                    lane.popleft()  # ended otherwise: nothing to do
                    continue
                if now - interview.asked_at <= self.cfg.max_wait_s:
                    break
                lane.popleft()
                interview.lane = None
                why = ""
                part = self._part_for(interview.agent)
                if part is not None:
                    why = part.unavailable() or "its brain was busy with decisions"
                self._end(interview, error=f"not asked: it waited {self.cfg.max_wait_s:g} s "
                          f"(talk.max_wait_s){': ' + why if why else ''}",
                          by=self._by(interview))

    def _open_interviews(self) -> Iterable[Interview]:
        for interview in self.interviews.values():
            if not interview.done:
                yield interview

    def _by(self, interview: Interview) -> dict[str, Any]:
        if interview.by:
            return interview.by
        agent = self.world.store.try_get(interview.agent, c.Agent)
        return {"kind": "plain" if interview.part is None else "", "brain":
                agent.brain if agent is not None else ""}

    def _interviewers(self) -> list[Any]:
        """The session's kinds that answer interviews themselves (the Protocol check, slow,
        is made again only when the kinds change)."""
        parts = list(self.parts())
        ids = tuple(id(p) for p in parts)
        if ids != self._interviewers_of[0]:
            self._interviewers_of = (ids, [p for p in parts if isinstance(p, Interviewer)])
        return self._interviewers_of[1]

    def _part_for(self, eid: int) -> Interviewer | None:
        for part in self._interviewers():
            if part.speaks_for(eid):
                return part  # type: ignore[no-any-return]
        return None

    def _send(self) -> None:
        """Each kind sends its lanes' oldest (the operator's first) into the room it has;
        plain answers, at most PLAIN_PER_PUMP. Only lanes with room are looked at."""
        rooms: dict[int, int] = {}
        for key in list(dict.fromkeys(k for k, _routine in self.lanes)):  # kinds as first seen
            for routine in (False, True):
                lane = self.lanes.get((key, routine))
                while lane:
                    interview = self.interviews[lane[0]]
                    if interview.state != "waiting":
                        lane.popleft()
                        continue
                    if not self.world.alive(interview.agent):
                        lane.popleft()
                        interview.lane = None
                        self._end(interview, error="died before answering",
                                  by=self._by(interview))
                        continue
                    part = self._lane_parts.get(key)
                    now_part = (part if part is not None and part.speaks_for(interview.agent)
                                else self._part_for(interview.agent))
                    if now_part is not part:  # its brain changed while it waited
                        lane.popleft()
                        self._enqueue(interview, now_part)
                        continue
                    if key not in rooms:
                        rooms[key] = PLAIN_PER_PUMP if part is None else min(
                            part.interview_room(), self.cfg.in_flight - self.out.get(key, 0))
                    if rooms[key] <= 0:
                        break
                    rooms[key] -= 1
                    lane.popleft()
                    interview.lane = None
                    if part is None:
                        self._plain(interview, by={"kind": "plain"})
                    else:
                        self._ask_part(interview, part)
        for lane_key in [k for k, lane in self.lanes.items() if not lane]:
            del self.lanes[lane_key]

    def _ask_part(self, interview: Interview, part: Interviewer) -> None:
        interview.state = "asked"
        interview.part = part
        interview.sent_at = self.clock()
        self._sent[interview.id] = interview
        self.out[id(part)] = self.out.get(id(part), 0) + 1
        question = Question(id=interview.id, agent=interview.agent, text=interview.question,
                            tick=self.world.tick, routine=bool(interview.survey),
                            max_chars=self.cfg.max_answer_chars,
                            max_tokens=self.cfg.max_answer_tokens,
                            deadline_s=self.cfg.answer_timeout_s)
        part.interview(question, self._said_by(interview.id))

    def _plain(self, interview: Interview, *, by: dict[str, Any]) -> None:
        if not self.world.alive(interview.agent):
            self._end(interview, error="died before answering", by=by)
            return
        agent = self.world.store.get(interview.agent, c.Agent)
        text = plain_answer(self.world, interview.agent, interview.question)
        self._end(interview, answer=text[:self.cfg.max_answer_chars],
                  by={"brain": agent.brain, **by})

    def _end(self, interview: Interview, *, answer: str = "", error: str = "",
             by: dict[str, Any] | None = None, latency_s: float = 0.0) -> None:
        """The interview is over: logged as an input, its survey row filled, its asker told."""
        if interview.part is not None:
            key = id(interview.part)
            self.out[key] = max(0, self.out.get(key, 0) - 1)
            interview.part = None
        self._sent.pop(interview.id, None)
        asks = self._asks_of.get(interview.agent)
        if asks is not None:
            with contextlib.suppress(ValueError):
                asks.remove(interview.id)
            if not asks:
                del self._asks_of[interview.agent]
        interview.state = "answered" if answer else "failed"
        interview.answer = answer
        interview.error = error if not answer else ""
        interview.by = dict(by or {})
        interview.latency_s = latency_s
        interview.answered_tick = self.world.tick
        self.pending -= 1
        left = self.per_agent.get(interview.agent, 1) - 1
        if left > 0:
            self.per_agent[interview.agent] = left
        else:
            self.per_agent.pop(interview.agent, None)
        if answer:
            self.answered += 1
        else:
            self.failed += 1
        self.world.inbox.submit("interview", {
            "id": interview.id, "agent": interview.agent, "question": interview.question,
            "answer": answer, "error": interview.error, "remember": interview.remember,
            "by": interview.by, "asked_tick": interview.asked_tick,
            "latency_ms": round(latency_s * 1000, 1),
            **({"survey": interview.survey} if interview.survey else {})},
            source=interview.source)
        if not interview.survey:
            self.note(f"TALK     {interview.line()}")
        else:
            self._surveyed(interview)
        for listener in interview.listeners:
            listener(interview)
        interview.listeners.clear()
        for waiter in interview.waiters:
            if not waiter.done():
                waiter.set_result(interview)
        interview.waiters.clear()
        self._trim()

    def _surveyed(self, interview: Interview) -> None:
        survey = self.surveys.get(interview.survey)
        if survey is None:
            return
        row = survey.rows.get(interview.agent)
        if row is not None:
            row.status = interview.state
            row.answer = interview.answer
            row.error = interview.error
            row.answered_by = str(interview.by.get("kind", ""))
            row.model = str(interview.by.get("model") or interview.by.get("profile") or "")
            row.answered_tick = interview.answered_tick
            row.latency_ms = round(interview.latency_s * 1000, 1)
        if all(r.status in ("answered", "failed") for r in survey.rows.values()):
            self._finish(survey)

    def _finish(self, survey: Survey, *, why: str = "") -> None:
        survey.finished_tick = self.world.tick
        counts = survey.counts()
        if self.save_dir is None:
            survey.unwritten = "this world has no save folder"
        else:
            try:
                survey.files = survey.write(self.save_dir / "surveys")
            except OSError as exc:
                survey.unwritten = f"the table could not be written: {exc}"
        where = (f"; table in {', '.join(survey.files)}" if survey.files
                 else f" ({survey.unwritten})")
        listener = self._survey_listeners.pop(survey.id, None)
        if listener is not None:
            listener(survey)
        self.note(f"SURVEY   {survey.id} \"{survey.question}\": {counts['answered']} of "
                  f"{counts['agents']} answered{why}{where}")

    def _trim(self) -> None:
        """Finished interviews beyond ``talk.keep`` are forgotten (the event log has them)."""
        extra = len(self.interviews) - self.pending - self.cfg.keep
        if extra <= 0:
            return
        for iid in [i for i, v in self.interviews.items() if v.done][:extra]:
            del self.interviews[iid]

    def _trim_surveys(self) -> None:
        done = [sid for sid, s in self.surveys.items() if s.done]
        for sid in done[:max(0, len(done) - SURVEYS_KEPT)]:
            del self.surveys[sid]

    # -- reading ---------------------------------------------------------------------------

    def get(self, iid: str) -> Interview | None:
        return self.interviews.get(iid)

    async def wait(self, interview: Interview, timeout_s: float) -> Interview:
        """The interview once it ended, or as it is after ``timeout_s``."""
        if interview.done or timeout_s <= 0:
            return interview
        future: asyncio.Future[Interview] = asyncio.get_running_loop().create_future()
        interview.waiters.append(future)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            return interview
        finally:
            if future in interview.waiters:
                interview.waiters.remove(future)

    def recent(self, n: int = LISTED) -> list[Interview]:
        """The newest interviews not part of a survey, newest first."""
        out = [i for i in reversed(self.interviews.values()) if not i.survey]
        return out[:n]

    def stats(self) -> dict[str, Any]:
        return {"asked": self.asked, "answered": self.answered, "failed": self.failed,
                "refused": self.refused, "waiting": self.pending,
                "surveys open": sum(1 for s in self.surveys.values() if not s.done),
                "surveys": len(self.surveys)}

    def close(self) -> None:
        """The world stops: surveys still collecting are written as they are (their open
        rows say so); nothing more is logged."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for survey in self.surveys.values():
            if survey.done:
                continue
            for row in survey.rows.values():
                if row.status not in ("answered", "failed"):
                    row.status = "failed"
                    row.error = "the world stopped before it answered"
            self._finish(survey, why=" (the world stopped)")
        for interview in self._open_interviews():
            for waiter in interview.waiters:
                if not waiter.done():
                    waiter.set_result(interview)
