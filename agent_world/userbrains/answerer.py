"""Users' brains on the decision pipeline (``agent_world.decisions``): the same triggers,
queue, coalescing, deadline, fallback, world-log lines and figures as LLM agents, with a
user's ``Brain`` (a Python class, a sandboxed policy, or either in brain processes)
answering on the pipeline's worker threads.

The main thread builds each request's ``Observation`` and the hooks due (events that name
the agent, how its last decided action ended); a worker makes the agent's brain on first
use (``on_spawn``), delivers the hooks, calls ``decide`` and checks the answer with
``as_plan``. A valid answer within ``decisions.brains.deadline_ms`` becomes a ``plan`` input (source
``brain``), applied at the next tick and logged, so replay never needs the user's code.
An exception, an invalid answer or a late one leaves the agent on its built-in brain for
that decision. A ``decide`` that never returns cannot be stopped (threads cannot be
killed): the pipeline gives its request up at the deadline, its agent thinks no more with
its brain until it returns, and a new worker thread takes the stuck one's place. A
``reflect`` past the deadline is counted here, and its worker replaced the same way.

Minds that last: at every snapshot each brain's ``get_state()`` is taken on a capture
thread, between two of its calls (each agent's calls hold its own lock), or by the worker
about to give it an observation later than the snapshot, whichever comes first; a brain in
a process answers it there. A resumed or forked world's saved states are given back
(``set_state``) when each brain is made.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import orjson

from agent_world.config import BrainsConfig, KindPace
from agent_world.contract.brains import (
    MAX_TRACE,
    MAX_TRACE_LINE,
    Brain,
    BrainFault,
    deliver_hooks,
    take_trace,
)
from agent_world.contract.decision import DecisionError, as_plan, from_json
from agent_world.contract.llmbrain import LLMBrain
from agent_world.contract.observation import observe
from agent_world.contract.schema import action_schemas
from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.actions import Action
from agent_world.core.inputs import MAX_PLAN
from agent_world.core.world import World
from agent_world.decisions.answerer import Answer, Answering, Fault, Pace, Reply
from agent_world.decisions.interview import Question, Said, Spoken, spoken_text
from agent_world.decisions.keeping import MindCapture, Record
from agent_world.decisions.metrics import percentile
from agent_world.decisions.mind import Mind
from agent_world.decisions.requests import Job, Outcome
from agent_world.policies.brain import PolicyBrain
from agent_world.policies.runner import PolicyRunner, decision_timeout_s
from agent_world.types import ENTITY_KEYS, Clock, TickReport
from agent_world.userbrains.procpool import BrainProcesses

if TYPE_CHECKING:
    from agent_world.llm.brainllm import BrainLLM

__all__ = ["MAX_HOOKS", "UserBrains"]

MAX_HOOKS = 50  # events kept for one agent's next decision (the newest)
INTERVIEW_THREADS = 2  # brains answering interviewers at once (threads of their own)
LLM_SLACK_MS = 1000  # an LLMBrain's deadline beyond one call's llm.request_timeout_s


@dataclass(frozen=True, slots=True)
class Running:
    """A brain call under way on a worker: whose, since when, until when, on which thread."""

    agent: int
    brain: str
    started: float
    deadline_s: float
    reflecting: bool = False
    thread: threading.Thread | None = None


class UserBrains(Answering):
    """The answerer of agents whose brain is a registered one (``brains.registered``) or
    a policy, and what only they have: the brains themselves, their processes and the
    policies' sandbox, fault counts per brain, reasoning traces."""

    source = "brain"
    label = "brain"

    def __init__(self, cfg: BrainsConfig, world: World, classes: Mapping[str, type[Brain]],
                 *, settings: KindPace, clock: Clock | None = None,
                 llm: BrainLLM | None = None,
                 llm_models: Mapping[str, BrainLLM] | None = None,
                 capture_wait_s: float = 10.0) -> None:
        """``settings``: ``decisions.brains`` over ``decisions``. ``llm`` is the configured
        LLM, given to every brain as ``brain.llm`` (None: the world has none, and no
        registered brain is an ``LLMBrain``); an ``LLMBrain`` that names a model profile
        (its class's ``model``) gets that profile's from ``llm_models`` instead.
        ``capture_wait_s`` (``minds.capture_wait_s``): how long a snapshot waits for a
        brain busy in a call before it keeps that brain's previous mind."""
        super().__init__(pace=Pace(interval=settings.think_interval_ticks,
                                   min_gap=settings.min_gap_ticks, round_size=settings.workers,
                                   workers=settings.workers),
                         brains=frozenset(classes), clock=clock)
        self.world = world
        self.cfg = cfg
        self.settings = settings
        self.classes = dict(classes)
        self.llm = llm
        self.llm_models = dict(llm_models or {})
        self.deadlines = {name: self._deadline_ms(cls) / 1000 for name, cls in classes.items()}
        self.actions: Mapping[str, Any] = MappingProxyType(action_schemas())
        self.faults: dict[tuple[str, str], int] = {}  # (brain, kind) -> count
        self._starting: dict[str, Mapping[str, Any]] = {}  # main thread: by agent name
        self._hooks: dict[int, list[tuple[str, Any]]] = {}  # main thread: due for the next
        self._last_action: dict[int, str] = {}  # main thread: the last decided action
        self._lock = threading.Lock()
        self._brains: dict[int, Brain] = {}  # agent -> its brain (worker threads)
        self._running: dict[int, Running] = {}  # rid (negative: a reflection) -> call
        self._reflected: dict[int, int] = {}  # agent -> tick of its last reflection (workers)
        self._traces: dict[int, tuple[int, list[str]]] = {}  # agent -> tick, its last trace
        # brains.processes: those brains run in worker processes, not on the threads.
        self.pools = {name: BrainProcesses(name, f"{cls.__module__}:{cls.__qualname__}",
                                           cfg.processes[name])
                      for name, cls in classes.items() if name in cfg.processes}
        self._pooled: dict[int, BrainProcesses] = {}  # agent -> the processes its brain is in
        # Policies (brain=policy:NAME) run in the sandbox's worker processes, started when
        # the first policy agent asks for a decision. Their calls are killed at 80% of the
        # deadline, so that a worker thread is never stuck in one.
        self.policies: PolicyRunner | None = None
        if any(issubclass(cls, PolicyBrain) for cls in classes.values()):
            self.policies = PolicyRunner(
                world.config.sandbox, steps=cfg.policy_steps,
                memory_bytes=cfg.policy_memory_bytes,
                timeout_s=decision_timeout_s(settings.deadline_ms))
        self._expired: set[int] = set()  # reflections given up at their deadline
        self._deaths: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._interviews_out = 0  # interview threads running (at most INTERVIEW_THREADS)
        # One call at a time per brain (all under self._lock): a decision, an interview and
        # the taking of its mind (minds that last) never overlap.
        self._calls: dict[int, threading.Lock] = {}
        self._restore: dict[int, Record] = {}  # saved states not yet given back
        self._kept: dict[int, Record] = {}  # each mind as the last snapshot saved it
        self._labels: dict[int, tuple[str, str]] = {}  # agent -> (name, brain) at capture
        self._captures: list[MindCapture] = []  # being taken
        self.capture_wait_s = capture_wait_s

    def llm_of(self, cls: type[Brain]) -> BrainLLM | None:
        """The LLM a brain of ``cls`` calls: its ``model`` profile's, or the default's."""
        model = getattr(cls, "model", "") if issubclass(cls, LLMBrain) else ""
        return self.llm_models.get(model, self.llm) if model else self.llm

    def names(self) -> list[str]:
        """The brains' names: the registered ones, then the policies (``policy:NAME``)."""
        return sorted(self.classes, key=lambda name: (name.startswith("policy:"), name))

    def _deadline_ms(self, cls: type[Brain]) -> float:
        if cls.deadline_ms is not None:
            return cls.deadline_ms
        llm = self.llm_of(cls)
        if issubclass(cls, LLMBrain) and llm is not None:
            return llm.cfg.request_timeout_s * 1000 + LLM_SLACK_MS
        return self.settings.deadline_ms

    # -- the pipeline's hooks (main thread) ----------------------------------------------------

    def on_events(self, tick: int, report: TickReport) -> None:
        watching = bool(self.minds)  # none (every policy registered, none used): cheap
        for event in report.events:
            dead = event.get("agent") if event.get("type") == ev.DEATH else None
            if isinstance(dead, int):  # its mind is gone already; its brain (if any, even
                self._hooks.pop(dead, None)  # one being made now) hears of it on a worker
                self._last_action.pop(dead, None)
                self._deaths.put(dead)
            if not watching:
                continue
            for key in ENTITY_KEYS:
                named = event.get(key)
                if isinstance(named, int) and named in self.minds:
                    due = self._hooks.setdefault(named, [])
                    due.append(("event", {"tick": tick, **event}))
                    del due[:-MAX_HOOKS]
        self._give_up_late_reflections()

    def prepare(self, eid: int, mind: Mind, rid: int, reasons: tuple[str, ...],
                priority: int) -> Job:
        world = self.world
        name = world.store.get(eid, c.Agent).brain
        if self.policies is not None and issubclass(self.classes[name], PolicyBrain):
            # Once per run: starts the policies' workers (about a tenth of a second, between
            # ticks) so that no decision waits for them against its deadline.
            self.policies.start()
        obs = observe(world, eid)
        hooks = self._hooks.pop(eid, [])
        starting = self._starting.pop(world.name_of(eid), None) if self._starting else None
        if starting is not None:  # before anything else the brain hears of its episode
            hooks.insert(0, ("episode_start", {**starting, "agent": eid}))
        last = self._last_action.pop(eid, None)
        if last is not None:
            hooks.append(("result", (last, obs.me.last_result or "ok")))
        # A brain in processes is held to its deadline there (its process is replaced).
        return Job(rid=rid, agent=eid, tick=world.tick, priority=priority, reasons=reasons,
                   payload=(name, obs, tuple(hooks)),
                   deadline_s=None if name in self.pools else self.deadlines[name])

    # -- episodes (main thread) -------------------------------------------------------------

    def begin_episode(self, episodes: Mapping[str, Mapping[str, Any]]) -> None:
        """``on_episode_start`` for the brains of the agents named in ``episodes`` (about to
        be spawned), before their first decision, with their ``agent`` id added."""
        self._starting.update(episodes)

    def end_episode(self, episodes: Mapping[int, Mapping[str, Any]]) -> None:
        """``on_episode_end`` for the brain of each agent of ``episodes`` that has one: in
        its process, else on a thread of its own once the agent's last call has returned,
        each held to the brain's deadline (a hook that hangs is counted and left)."""
        for eid, episode in episodes.items():
            hook = (("episode_end", dict(episode)),)
            with self._lock:
                pool = self._pooled.get(eid)
                brain = self._brains.get(eid)
            if pool is not None:
                pool.tell(eid, hook)
            elif brain is not None:
                self._end_on_thread(eid, brain, hook)

    def _end_on_thread(self, eid: int, brain: Brain, hook: tuple[tuple[str, Any], ...]
                       ) -> None:
        name = self._brain_of(eid)
        deadline_s = self.deadlines.get(name, self.settings.deadline_ms / 1000)
        waiting = time.perf_counter() + deadline_s
        while time.perf_counter() < waiting:  # one call at a time per brain
            with self._lock:
                if not any(call.agent == eid for call in self._running.values()):
                    break
            time.sleep(0.001)
        failed: list[str] = []

        def run() -> None:
            try:
                deliver_hooks(brain, hook)
            except Exception as exc:  # the user's code
                failed.append(f"{type(exc).__name__}: {str(exc)[:200]}")

        worker = threading.Thread(target=run, name=f"episode-end-{eid}", daemon=True)
        worker.start()
        worker.join(deadline_s)
        if worker.is_alive():
            self._count_fault(name, "episode_end timeout", eid, f"{name}.on_episode_end() "
                              f"took over {deadline_s * 1000:.0f} ms")
        elif failed:
            self._count_fault(name, "episode_end exception", eid, failed[0])

    def on_decided(self, eid: int, tick: int, actions: str, thought: str) -> None:
        self._last_action[eid] = actions.rsplit(", ", 1)[-1].split("(", 1)[0]

    def on_failed(self, tick: int, outcome: Outcome, mind: Mind) -> bool:
        """Counted per brain and kind; one world-log line for each (the rest are counted)."""
        key = (self._brain_of(outcome.agent), outcome.error_kind)
        with self._lock:
            n = self.faults[key] = self.faults.get(key, 0) + 1
        return n <= 1

    def _count_fault(self, brain: str, kind: str, agent: int, error: str) -> None:
        """A fault outside a decision (in ``reflect``): counted, and said once per brain
        and kind; the agent's decisions go on."""
        with self._lock:
            n = self.faults[(brain, kind)] = self.faults.get((brain, kind), 0) + 1
        if n == 1:
            self.pipeline.note(f"{self.label:<8} {brain} (agent #{agent}): {kind}: {error}")

    def _brain_of(self, eid: int) -> str:
        agent = self.world.store.try_get(eid, c.Agent)
        return agent.brain if agent is not None else "?"

    def late(self, job: Job, waited_s: float) -> Fault:
        name = job.payload[0]
        deadline_s = self.deadlines[name]
        return Fault(kind="timeout", latency_s=waited_s, where=f"brain {name}: decide()",
                     error=f"{name}.decide() took over {deadline_s * 1000:.0f} ms (the "
                           "brain's deadline_ms, else decisions.brains.deadline_ms)")

    def _give_up_late_reflections(self) -> None:
        """A ``reflect`` past the deadline is counted (its decision was applied already)
        and said once; the worker stuck in it is replaced."""
        now = time.perf_counter()
        late = []
        with self._lock:
            for key, call in self._running.items():
                if (call.reflecting and key not in self._expired
                        and now - call.started > call.deadline_s):
                    self._expired.add(key)
                    late.append((call, now - call.started))
        for call, waited in late:
            self._count_fault(call.brain, "reflect timeout", call.agent,
                              f"{call.brain}.reflect() took over "
                              f"{call.deadline_s * 1000:.0f} ms (the brain's deadline_ms, "
                              "else decisions.brains.deadline_ms)")
            if call.thread is not None:
                self.pipeline.worker_stuck(call.thread, where=f"brain {call.brain}: reflect()",
                                           agent=call.agent, waited_s=waited)

    # -- answering (the pipeline's worker threads) --------------------------------------------

    def between_jobs(self) -> None:
        self._deliver_deaths()

    def thread_done(self) -> None:
        for llm in (self.llm, *self.llm_models.values()):
            if llm is not None:
                llm.close_thread()

    def answer(self, job: Job, reply: Reply) -> None:
        name = job.payload[0]
        pool = self.pools.get(name)
        started = reply.started
        result = (self._decide_in_process(job, pool, started) if pool is not None
                  else self._decide(job, started))
        if not reply(result):
            return  # given up at its deadline already: the late decision is dropped
        if isinstance(result, Fault):
            self.metrics.error(result.kind)
            return
        self.metrics.answered(result.latency_s)
        # Before the agent's next request can be taken: calls never overlap.
        self._reflect_if_due(job)

    def _deliver_deaths(self) -> None:
        while True:
            try:
                eid = self._deaths.get_nowait()
            except queue.Empty:
                return
            with self._lock:
                if any(call.agent == eid for call in self._running.values()):
                    self._deaths.put(eid)  # its last decision is still running: later
                    return
                brain = self._brains.pop(eid, None)
            with self._lock:
                self._traces.pop(eid, None)
                pool = self._pooled.pop(eid, None)
                self._restore.pop(eid, None)
                self._kept.pop(eid, None)
                self._calls.pop(eid, None)
            self._reflected.pop(eid, None)
            if pool is not None:
                pool.death(eid)
            if brain is not None:
                # The agent is gone; what its brain does about it changes nothing.
                with contextlib.suppress(Exception):
                    brain.on_death()

    def _call_lock(self, eid: int) -> threading.Lock:
        """The lock a call of agent ``eid``'s brain holds (a decision, an interview, the
        taking of its mind)."""
        with self._lock:
            return self._calls.setdefault(eid, threading.Lock())

    def _decide(self, job: Job, started: float) -> Answer | Fault:
        name = job.payload[0]
        calling = self._call_lock(job.agent)
        left = self.deadlines[name] - (time.perf_counter() - started)
        if not calling.acquire(timeout=max(0.0, left)):
            return self._fault(job, started, "busy", f"{name} was answering an interviewer "
                               "(or its mind was being saved) until the decision's deadline")
        try:
            return self._decide_holding(job, started)
        finally:
            calling.release()

    def _decide_holding(self, job: Job, started: float) -> Answer | Fault:
        name, obs, hooks = job.payload
        with self._lock:
            self._running[job.rid] = Running(job.agent, name, started, self.deadlines[name],
                                             thread=threading.current_thread())
            brain = self._brains.get(job.agent)
        self._take_due(job.agent, job.tick)
        try:
            # A ``brain`` input may have given the agent another registered brain since.
            if brain is None or type(brain) is not self.classes[name]:
                brain = self._made(job.agent, name)
                with self._lock:
                    self._brains[job.agent] = brain
            deliver_hooks(brain, hooks)
            answer = brain.decide(obs, self.actions)
            actions, reasoning = as_plan(answer, max_actions=MAX_PLAN)
        except DecisionError as exc:
            return self._fault(job, started, "invalid", str(exc))
        except BrainFault as exc:  # a fault the brain names (a policy's limit ...)
            return self._fault(job, started, exc.kind, str(exc)[:300])
        except Exception as exc:  # the user's code: anything can go wrong in it
            return self._fault(job, started, "exception",
                               f"{type(exc).__name__}: {str(exc)[:200]}")
        finally:
            with self._lock:
                self._running.pop(job.rid, None)
            trace = take_trace(brain) if brain is not None else []
            if trace:
                with self._lock:
                    self._traces[job.agent] = (job.tick, trace)
        return self._answer(name, actions, reasoning, started, trace)

    def _decide_in_process(self, job: Job, pool: BrainProcesses,
                           started: float) -> Answer | Fault:
        """The decision from the brain's process; its answer is checked again here."""
        name, obs, hooks = job.payload
        with self._calls_of(job.agent):
            with self._lock:
                self._pooled[job.agent] = pool
                record = self._restore.pop(job.agent, None)
            self._take_due(job.agent, job.tick)
            saved = record["state"] if record is not None and record.get("brain") == name \
                else None
            kind, payload, raw_trace, notes = pool.decide(
                job.agent, obs, hooks, started + self.deadlines[name], saved=saved)
        if notes:
            self._cannot_restore(job.agent, name, notes[0])
        trace = ([" ".join(str(line).split())[:MAX_TRACE_LINE] for line in raw_trace]
                 [-MAX_TRACE:] if isinstance(raw_trace, list) else [])
        if trace:
            with self._lock:
                self._traces[job.agent] = (job.tick, trace)
        if kind == "ok":
            try:
                actions, reasoning = as_plan(from_json(payload), max_actions=MAX_PLAN)
            except DecisionError as exc:
                kind, payload = "invalid", str(exc)
        if kind != "ok":
            return self._fault(job, started, kind, str(payload)[:300])
        return self._answer(name, actions, reasoning, started, trace)

    @staticmethod
    def _answer(name: str, actions: tuple[Action, ...], reasoning: str, started: float,
                trace: list[str]) -> Answer:
        return Answer(actions=actions, thought=reasoning,
                      latency_s=time.perf_counter() - started,
                      by={"brain": name, **({"trace": trace} if trace else {})})

    def _reflect_if_due(self, job: Job) -> None:
        """``reflect()`` after a decision (already on its way to the world), once
        ``reflect_every_ticks`` have passed since the last."""
        name, obs, _hooks = job.payload
        tick = obs.tick
        with self._lock:
            brain = self._brains.get(job.agent)
        if brain is None or not brain.reflect_every_ticks:
            return
        last = self._reflected.setdefault(job.agent, tick)
        if tick - last < brain.reflect_every_ticks:
            return
        self._reflected[job.agent] = tick
        key = -job.rid
        with self._lock:
            self._running[key] = Running(job.agent, name, time.perf_counter(),
                                         self.deadlines[name], reflecting=True,
                                         thread=threading.current_thread())
        try:
            with self._calls_of(job.agent):
                brain.reflect()
        except Exception as exc:  # the user's code
            self._count_fault(name, "reflect exception", job.agent,
                              f"{type(exc).__name__}: {str(exc)[:200]}")
        finally:
            with self._lock:
                self._running.pop(key, None)
                self._expired.discard(key)
            trace = take_trace(brain)
            if trace:
                with self._lock:
                    self._traces[job.agent] = (tick, self._traces.get(job.agent, (tick, []))[1]
                                               + trace)

    # -- interviews (decisions/interview.py) ---------------------------------------------------

    def speaks_for(self, eid: int) -> bool:
        """Whether agent ``eid``'s brain answers interviewers itself: a registered brain
        whose class has an ``interview`` (policies answer plainly)."""
        agent = self.world.store.try_get(eid, c.Agent)
        cls = self.classes.get(agent.brain) if agent is not None else None
        return (eid in self.minds and cls is not None and not issubclass(cls, PolicyBrain)
                and cls.interview is not Brain.interview)

    def interview_room(self) -> int:
        with self._lock:
            return INTERVIEW_THREADS - self._interviews_out

    def interview(self, question: Question, said: Said) -> None:
        """Ask agent ``question.agent``'s brain on an interview thread, between its calls
        (its observation is made here, on the main thread)."""
        eid = question.agent
        name = self._brain_of(eid)
        obs = observe(self.world, eid)
        by = {"kind": "brain", "brain": name, "model": self.model_of(name)}
        with self._lock:
            self._interviews_out += 1
        # A daemon thread each (at most INTERVIEW_THREADS, the asker keeps to the room):
        # a brain that never answers cannot hold up the program's exit.
        threading.Thread(target=self._interview_on_thread, args=(question, name, obs, by, said),
                         name=f"brain-interview-{question.agent}", daemon=True).start()

    def model_of(self, name: str) -> str:
        """The model profile a brain called ``name`` asks ('' for none): an ``LLMBrain``'s
        ``model``, ``default`` for the default profile."""
        cls = self.classes.get(name)
        if cls is None or not issubclass(cls, LLMBrain):
            return ""
        llm = self.llm_of(cls)
        return (cls.model or "default") if llm is not None else ""

    def _interview_on_thread(self, question: Question, name: str, obs: Any,
                             by: dict[str, Any], said: Said) -> None:
        started = time.perf_counter()
        deadline = started + question.deadline_s
        try:
            pool = self.pools.get(name)
            if pool is not None:
                with self._lock:
                    record = self._restore.pop(question.agent, None)
                saved = record["state"] if record is not None and record.get("brain") == name \
                    else None
                kind, text, _trace, notes = pool.interview(question.agent, question.text, obs,
                                                           deadline, saved=saved)
                if notes:
                    self._cannot_restore(question.agent, name, notes[0])
                if kind != "ok":
                    raise BrainFault(kind, str(text))
            else:
                text = self._interview_here(question, name, obs, deadline)
        except BrainFault as exc:
            said(Spoken(text=None, error=f"{exc.kind}: {exc}", by=by,
                        latency_s=time.perf_counter() - started))
        except Exception as exc:  # the user's code
            said(Spoken(text=None, error=f"exception: {type(exc).__name__}: "
                                         f"{str(exc)[:200]}", by=by,
                        latency_s=time.perf_counter() - started))
        else:
            answer = spoken_text(text, question.max_chars) if isinstance(text, str) else None
            said(Spoken(text=answer or None, by=by,
                        latency_s=time.perf_counter() - started))
        finally:
            with self._lock:
                self._interviews_out -= 1

    def _interview_here(self, question: Question, name: str, obs: Any,
                        deadline: float) -> str | None:
        calling = self._call_lock(question.agent)
        if not calling.acquire(timeout=max(0.0, deadline - time.perf_counter())):
            raise BrainFault("busy", f"{name} was deciding until the interview's deadline")
        try:
            with self._lock:
                brain = self._brains.get(question.agent)
            if brain is None or type(brain) is not self.classes[name]:
                brain = self._made(question.agent, name)
                with self._lock:
                    self._brains[question.agent] = brain
            return brain.interview(question.text, obs)
        finally:
            calling.release()

    @staticmethod
    def _fault(job: Job, started: float, kind: str, error: str) -> Fault:
        return Fault(kind=kind, error=error, latency_s=time.perf_counter() - started)

    # -- minds that last -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _calls_of(self, eid: int) -> Iterator[None]:
        """Held around each call of the agent's brain (and while its mind is taken)."""
        with self._call_lock(eid):
            yield

    def _made(self, eid: int, name: str) -> Brain:
        """A new brain for agent ``eid`` (worker thread, holding its calls), given back its
        saved state if it has one; a state it cannot take is one warning, and a fresh
        brain."""
        cls = self.classes[name]

        def fresh() -> Brain:
            brain = cls()
            brain.llm = self.llm_of(cls)
            if isinstance(brain, PolicyBrain):
                brain.runner = self.policies
            brain.on_spawn(eid)
            return brain

        brain = fresh()
        with self._lock:
            record = self._restore.pop(eid, None)
        if record is None or record.get("brain") != name:
            return brain
        try:
            brain.set_state(record["state"])
        except Exception as exc:  # the user's code, or a damaged state
            self._cannot_restore(eid, name, f"{type(exc).__name__}: {str(exc)[:200]}")
            return fresh()
        return brain

    def _cannot_restore(self, eid: int, name: str, why: str) -> None:
        with self._lock:
            self._kept.pop(eid, None)
            label = self._labels.get(eid, ("", name))[0]
        who = f"agent {eid}" + (f" ({label})" if label else "")
        self.pipeline.report(f"the mind of {who} cannot be restored ({name}.set_state: "
                             f"{why}); it starts with an empty memory")

    def restore_minds(self, records: Mapping[int, Record],
                      warn: Callable[[str], None]) -> None:
        """The minds a resumed or forked world saved, for its agents on these brains: each
        is given back (``set_state``) when its brain is made, before its first decision;
        until then, every snapshot saves it as it was."""
        world = self.world
        with self._lock:
            for eid in sorted(self.minds):
                record = records.get(eid)
                if record is None or record.get("kind") != "brain":
                    continue
                brain = world.store.get(eid, c.Agent).brain
                if record.get("brain") != brain:
                    warn(f"the mind of agent {eid} ({world.name_of(eid)}) was saved for brain "
                         f"{record.get('brain')!r}, and it now has {brain!r}; it starts with "
                         "an empty memory")
                    continue
                self._restore[eid] = record
                self._kept[eid] = record
                self._labels[eid] = (world.name_of(eid), brain)

    def capture_minds(self, tick: int) -> MindCapture:
        """The minds of its agents as of the snapshot of ``tick`` (main thread): taken on a
        capture thread, each between two of its brain's calls, within
        ``capture_wait_s``."""
        world = self.world
        labels = {eid: (world.name_of(eid), world.store.get(eid, c.Agent).brain)
                  for eid in sorted(self.minds)}
        with self._lock:
            self._labels.update(labels)
            held = [eid for eid in labels if eid in self._brains or eid in self._pooled
                    or eid in self._restore or eid in self._kept]
            capture = MindCapture(tick, held, {eid: self._kept[eid] for eid in held
                                               if eid in self._kept})
            if held:
                self._captures.append(capture)
        if held:
            threading.Thread(target=self._sweep, args=(capture,), name="minds-capture",
                             daemon=True).start()
        return capture

    def _sweep(self, capture: MindCapture) -> None:
        """Take every mind of ``capture``: first those whose brains are between calls now,
        then the rest as their calls end, until ``capture_wait_s`` has passed."""
        deadline = time.monotonic() + self.capture_wait_s
        try:
            for patient in (False, True):
                for eid in capture.waiting():
                    with self._lock:
                        lock = self._calls.setdefault(eid, threading.Lock())
                    left = deadline - time.monotonic()
                    if not lock.acquire(timeout=max(0.0, left)) if patient else \
                            not lock.acquire(blocking=False):
                        continue
                    try:
                        self._take(eid, capture, deadline)
                    finally:
                        lock.release()
                if capture.done() or time.monotonic() >= deadline:
                    break
        finally:
            with self._lock:
                if capture in self._captures:
                    self._captures.remove(capture)

    def _take_due(self, eid: int, tick: int) -> None:
        """Before a call on the observation of ``tick`` (holding the agent's calls): its
        mind for every snapshot taken before that tick, if still to be taken."""
        with self._lock:
            due = [c for c in self._captures if c.tick < tick]
        for capture in due:
            if capture.wants(eid):
                self._take(eid, capture, time.monotonic() + self.capture_wait_s)

    def _take(self, eid: int, capture: MindCapture, deadline: float) -> None:
        """The agent's mind into ``capture`` (holding the agent's calls)."""
        if not capture.wants(eid):
            return
        with self._lock:
            brain = self._brains.get(eid)
            pool = self._pooled.get(eid)
            waiting = self._restore.get(eid)
            kept = self._kept.get(eid)
            name, brain_name = self._labels.get(eid, ("", ""))
        record: Record | None = kept
        if waiting is not None:
            record = waiting  # not given back yet: saved as it was
        elif brain is not None and type(brain) is self.classes.get(brain_name):
            record = self._state_record(eid, name, brain_name, brain)
        elif pool is not None and pool.name == brain_name and pool.holds(eid):
            got = pool.get_state(eid, time.perf_counter() + max(
                0.0, deadline - time.monotonic()))
            if got is not None:
                data, error = got
                if error:
                    self._count_fault(brain_name, "get_state exception", eid, error)
                else:
                    record = None if data is None else {
                        "agent": eid, "name": name, "brain": brain_name, "kind": "brain",
                        "state": orjson.loads(data)}
        if not capture.put(eid, record):
            return
        with self._lock:
            if record is None:
                self._kept.pop(eid, None)
            else:
                self._kept[eid] = record

    def _state_record(self, eid: int, name: str, brain_name: str, brain: Brain
                      ) -> Record | None:
        """The brain's ``get_state()`` as a record; its previous one when it fails (counted
        as a ``get_state`` fault)."""
        try:
            state = brain.get_state()
            if state is None:
                return None
            # A copy, checked now: JSON data, and none of the brain's own objects, which
            # its next call may change while the writer still has them.
            state = orjson.loads(orjson.dumps(state))
        except Exception as exc:  # the user's code
            self._count_fault(brain_name, "get_state exception", eid,
                              f"{type(exc).__name__}: {str(exc)[:200]}")
            with self._lock:
                return self._kept.get(eid)
        return {"agent": eid, "name": name, "brain": brain_name, "kind": "brain",
                "state": state}

    # -- figures and lifecycle -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        m = self.metrics
        figures = m.figures()
        with self._lock:
            faults = {f"{b} {k}": n for (b, k), n in sorted(self.faults.items())}
        return {
            "brains": ", ".join(sorted(self.classes)),
            "agents": len(self.minds),
            "decisions applied": m.applied,
            "fallbacks": m.fallbacks,
            "faults": faults or "none",
            "coalesced": m.coalesced,
            "deferred": m.deferred,
            "in flight": self.in_flight,
            "queue": self.queue.depth,
            "p50": f"{figures['p50_ms']:g} ms",
            "p95": f"{figures['p95_ms']:g} ms",
            "deadline": f"{self.settings.deadline_ms} ms",
            "main thread p99": f"{percentile(list(self.pipeline.main_ms), 0.99):.2f} ms",
            "workers": f"{len(self.pipeline.workers)} ({self.pipeline.stuck} stuck in a "
                       f"brain; {self.pipeline.replaced} started in place of stuck ones)",
            **({"processes": ", ".join(
                f"{name} {len(pool.slots)} ({pool.restarts} restarted)"
                for name, pool in sorted(self.pools.items()))} if self.pools else {}),
            **({"policy sandbox": self._policy_figures()}
               if self.policies is not None and self.policies.started else {}),
        }

    def _policy_figures(self) -> str:
        assert self.policies is not None
        figures = self.policies.stats()
        per_call = figures.get("ms_per_call", {})
        return (f"{figures.get('calls', 0)} calls, p50 {per_call.get('p50', 0):g} ms, "
                f"p99 {per_call.get('p99', 0):g} ms, {figures.get('kills', 0)} killed")

    def describe_entity(self, eid: int) -> list[str]:
        """The console's /debug seam: the agent's brain, its state and last decision."""
        mind = self.minds.get(eid)
        if mind is None:
            return []
        lines = [f"brain {self._brain_of(eid)}: {self.state_of(eid)}; "
                 f"{mind.decisions} decisions, {mind.errors} faults"]
        lines.extend(self.pipeline.last_lines(mind))
        with self._lock:
            tick, trace = self._traces.get(eid, (0, []))
            brain = self._brains.get(eid)
        if isinstance(brain, PolicyBrain):
            lines.extend(brain.describe())
        if trace:
            lines.append(f"reasoning trace (asked at t={tick}):")
            lines.extend(f"  {line}" for line in trace)
        return lines

    def stopped(self) -> None:
        for pool in self.pools.values():
            pool.close()
        if self.policies is not None:
            self.policies.close()
