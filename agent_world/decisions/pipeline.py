"""The decision pipeline: the one way any brain that is not built in decides, off the tick.

A ``Pipeline`` is a ``TickObserver`` that the session runs after each tick, while the loop
waits for the next one (so its work never lengthens a tick, and the world is still as the
tick left it). On the main thread it keeps a ``Mind`` for each agent its kind serves,
looks at what happened to it (``triggers``: attacked, spoken to, an offer, a plan finished,
the interval), paces the unprompted asks, and asks for a decision when it should. It looks
only at the agents something may concern (the tick's events, the starving, a mind free to
ask in its slot of ticks: ``_looks``), so its work after a tick follows what happened, not
how many agents it serves. The request goes to a queue (urgent first, with a share kept
for routine work so none starves: ``requests.py``; one per agent, a newer one replacing a
queued one; at most one in flight), and its answerer answers it (on the pipeline's worker
threads, or later from elsewhere). A decision comes back only as a ``plan`` input through
the world's inbox, built here (``PlanInput``) and applied at the first tick after it is
ready. A request not answered by its deadline is given up, and a worker stuck in it
replaced. A failure of any kind leaves the agent on its built-in brain, counted (a
``decision_fault`` input, when the world keeps agent metrics) and logged once per agent.
The world never waits: replay and resume read the ``plan`` inputs from the log and never
build a pipeline.

What differs between kinds of brain (the LLM, a user's code, a remote client) is only how a
request is made and answered: the ``Answerer`` (``answerer.py``). There is one pipeline
class, composed with an answerer, never subclassed.

An answerer that sends requests on from the main thread (``pace.workers`` 0, the LLM's) may
prepare them late (``prepares_late``): what is queued is then only the agent, its reasons
and its urgency, and the observation and prompt are built when the request goes out. So
every ask can wait in line, in order, however far the model is behind, without a prompt
built in vain or sent stale; the main thread's time per request sent is measured
(``Metrics.main_thread``).
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, final

from agent_world.contract.plan import PlanInput
from agent_world.core import events as ev
from agent_world.core.inbox import Inbox
from agent_world.core.world import World
from agent_world.decisions.answerer import Answer, Answerer, Fault
from agent_world.decisions.metrics import Metrics
from agent_world.decisions.mind import (
    APPLY_GRACE_TICKS,
    PRESSING,
    REACTIVE,
    STARVING,
    Mind,
    pressed,
    triggers,
)
from agent_world.decisions.requests import (
    DANGER,
    NORMAL,
    URGENT,
    Job,
    Outcome,
    RequestQueue,
)
from agent_world.types import TickReport

__all__ = ["MAX_STUCK", "TRIGGER_CHECK_TICKS", "Digest", "Pipeline", "describe_action"]

TRIGGER_CHECK_TICKS = 5
QUIET_FAILURES = ("budget", "breaker")  # no request was made: nothing to count against it
BURST = 3.0  # unprompted decisions an agent may ask for in a row before its pace holds it
PENDING_TICKS = 100  # a reaction that could not be asked for at once is kept this long
MAX_FAULT_TEXT = 200  # characters of a fault's error kept in its decision_fault input (the log)
DIGEST_SECONDS = 60  # world time a world-log digest of decisions covers
DIGEST_ACTIONS = 6  # actions named in a digest line, most frequent first
MAX_STUCK = 8  # worker threads that may hang in an answer before no more are started
FRESH_LATENCIES = 1.0  # urgent news is stale after waiting this many answers' latency
FRESH_MIN_S = 0.5  # ... or this long, whichever is longer
SPREAD_TICKS = 4  # a full round of requests goes out over at least this many ticks ...
SEND_FLOOR = 8  # ... but at least this many may go out after any one tick
POLL_S = 0.2  # a worker with nothing to do looks up this often (answerer.between_jobs)


@dataclass(slots=True)
class Digest:
    """The decisions applied since tick ``since``: how many, by which agents, which
    actions (the world log's summary line)."""

    since: int
    decisions: int = 0
    agents: set[int] = field(default_factory=set)
    actions: Counter[str] = field(default_factory=Counter)

    def add(self, agent: int, actions: list[str]) -> None:
        self.decisions += 1
        self.agents.add(agent)
        self.actions.update(actions)

    def line(self, label: str, tick: int) -> str | None:
        if not self.decisions:
            return None
        top = ", ".join(f"{name} {n}" for name, n in self.actions.most_common(DIGEST_ACTIONS))
        more = len(self.actions) - DIGEST_ACTIONS
        return (f"{label:<8} {self.decisions} decision{'s' * (self.decisions != 1)} by "
                f"{len(self.agents)} agent{'s' * (len(self.agents) != 1)} in ticks "
                f"{self.since + 1}..{tick}: {top}" + (f" and {more} more" if more > 0 else "")
                + " (log.everything logs each one)")


class _Call:
    """A request given to the answerer, until it is answered, given up or withdrawn. Its
    ``__call__`` is the ``Reply`` the answerer answers through."""

    __slots__ = ("job", "line", "owner", "queued", "started", "state", "thread")

    def __init__(self, owner: Pipeline, job: Job, thread: threading.Thread | None,
                 line: int = NORMAL, queued: float | None = None) -> None:
        self.owner = owner
        self.job = job
        self.started = time.perf_counter()
        self.line = line  # the queue's line it came from (URGENT or NORMAL)
        self.queued = self.started if queued is None else queued  # when it entered it
        self.state = "open"  # open | answered | expired | withdrawn
        self.thread = thread  # the worker inside ``answer`` (None: answered from elsewhere)

    @property
    def open(self) -> bool:
        return self.state == "open"

    def __call__(self, result: Answer | Fault) -> bool:
        return self.owner._reply(self, result)

    def withdraw(self) -> None:
        self.owner._withdraw(self)


@final
class Pipeline:
    """The main thread's share of deciding off the tick, and the worker threads, for the
    agents whose brain is one of ``answerer.brains``, answered by ``answerer``."""

    def __init__(self, world: World, answerer: Answerer, *,
                 report: Callable[[str], None] = print,
                 note: Callable[[str], None] = lambda _text: None) -> None:
        """``answerer.pace`` paces unprompted decisions (an interval, a plan that ended, a
        newcomer) per agent and for all together, per hour of world time (0: no pace); an
        agent attacked, starving, spoken to or offered a trade asks at once whatever its
        pace, and the decision counts against it."""
        pace = answerer.pace
        self.world = world
        self.answerer = answerer
        self.source = answerer.source
        self.label = answerer.label
        ticks_per_hour = 3600 * world.config.world.tick_rate
        self._agent_refill = pace.per_agent_hour / ticks_per_hour  # decisions per tick
        self._global_refill = pace.per_hour / ticks_per_hour
        self._global_burst = max(BURST, pace.per_hour / 60)  # a minute's worth
        self._global_allowance = self._global_burst
        self._global_tick = world.tick
        self.world_inbox: Inbox = world.inbox
        self.brains = brains = answerer.brains
        self.interval = pace.interval
        self.min_gap = pace.min_gap
        self.report = report
        self.note = note
        self.metrics: Metrics = answerer.own_metrics or Metrics(answerer.clock)
        self.queue = RequestQueue()
        # Requests queued as the agent and its reasons, prepared when they go out.
        self._late = answerer.prepares_late and not pace.workers
        self.outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self.minds: dict[int, Mind] = {}
        self.main_ms: deque[float] = deque(maxlen=1000)  # on_tick's cost on the main thread
        self._closed = False
        # The world log is for notable events: a line per decision (78 in a user's first
        # seconds) drowned them. Decisions are summed up once a minute of world time, each
        # one logged only with log.everything (the event log keeps every one anyway).
        self._each_decision = world.config.log.everything
        self._digest_ticks = max(1, round(DIGEST_SECONDS * world.config.world.tick_rate))
        self._digest = Digest(world.tick)
        self._round = pace.round_size  # requests that can be answered at once
        self._send_per_tick = max(SEND_FLOOR, -(-self._round // SPREAD_TICKS))
        self._next_rid = 1
        self._available = True
        self._lock = threading.Lock()
        self._calls: dict[int, _Call] = {}  # rid -> a request the answerer has
        self.pool_size = pace.workers
        self.workers: list[threading.Thread] = []
        self.replaced = 0  # workers started in place of stuck ones, in all
        self.stuck = 0  # workers inside an answer given up on, now
        self._stuck_threads: set[threading.Thread] = set()
        for eid, row in world.agents():
            if row.agent.brain in brains:
                self.minds[eid] = Mind(eid)
        self._new_minds = set(self.minds)  # considered at the next tick, whatever its slot
        # When to look at which mind again (``_looks``): tick -> agents.
        self._due: dict[int, set[int]] = {}
        self._looked_tick = world.tick  # the last tick whose looks were taken
        self._next_sweep = world.tick  # the next tick the needs are read for starving
        answerer.bind(self)
        for _ in range(self.pool_size):
            self._start_worker()

    # -- the agents it serves -------------------------------------------------------------------

    def serve(self, eid: int, *, interval: int = 0) -> Mind:
        """Agent ``eid`` decides here from now on (looked at the next tick, whatever its
        slot); ``interval``: its own ticks between unprompted decisions (0: the kind's)."""
        mind = self.minds[eid] = Mind(eid, interval=interval)
        self._new_minds.add(eid)
        return mind

    def forget(self, eid: int) -> None:
        """Agent ``eid`` no longer decides here; a request of it still queued is dropped."""
        self.minds.pop(eid, None)
        self._new_minds.discard(eid)
        if self.queue.cancel(eid):
            self.metrics.count("dropped")
        self._withdraw_agent(eid)

    def consider_now(self, eid: int) -> None:
        """Look at agent ``eid`` at the next tick rather than in its slot of ticks."""
        self._new_minds.add(eid)

    # -- when to look at a mind ---------------------------------------------------------------
    #
    # A look (``_consider``) runs ``triggers`` for one agent. Which agents are looked at in
    # a tick follows from what happened, not from how many agents there are:
    # - a new mind, and one given back by a person, at once (``_new_minds``);
    # - the agents the tick's events may have brought pressing news (``pressed``:
    #   attacked, spoken to, offered a trade), at once;
    # - starving agents, read from the needs every TRIGGER_CHECK_TICKS (a threshold, not
    #   an event: hunger only grows, and an ability or a test may raise it);
    # - a mind free to ask (idle, or acting on a plan) or holding pending news, in its slot
    #   of every TRIGGER_CHECK_TICKS: what it sees, a plan that ended, the interval;
    # - a mind whose answer is being applied, when its grace runs out.
    # A mind that waits for its answer (queued, in flight) is looked at only for pressing
    # news: nothing else could make it ask. Each state change that frees it (an answer,
    # a fault, a plan applied) puts it back in its slot (``_wake``).

    def _slot_from(self, eid: int, tick: int) -> int:
        """The first tick from ``tick`` on in agent ``eid``'s slot of ticks."""
        return tick + (-eid - tick) % TRIGGER_CHECK_TICKS

    def _look_at(self, eid: int, tick: int) -> None:
        self._due.setdefault(max(tick, self._looked_tick + 1), set()).add(eid)

    def _reschedule(self, eid: int, mind: Mind, earliest: int) -> None:
        """Agent ``eid``'s next look, from tick ``earliest`` on, by what its mind does."""
        pending = mind.pending and earliest - mind.pending_since <= PENDING_TICKS
        if mind.status in ("idle", "acting") or pending:
            self._look_at(eid, self._slot_from(eid, earliest))
        elif mind.status == "applying":
            self._look_at(eid, max(earliest, mind.answered_tick + APPLY_GRACE_TICKS + 1))

    def _wake(self, eid: int, mind: Mind) -> None:
        """The mind's state changed outside a look (an answer, a fault, a plan applied):
        its next look as for its new state, from the first tick not yet looked at."""
        self._reschedule(eid, mind, self._looked_tick + 1)

    def _looks(self, report: TickReport) -> set[int]:
        """The agents to look at after this tick (some may be gone since)."""
        tick = report.tick
        looks = self._new_minds
        self._new_minds = set()
        due = self._due
        if tick - self._looked_tick <= len(due):
            for past in range(self._looked_tick + 1, tick + 1):
                looks |= due.pop(past, set())
        else:  # far behind (a pipeline called now and then): only the ticks scheduled
            for past in [t for t in due if t <= tick]:
                looks |= due.pop(past)
        self._looked_tick = max(self._looked_tick, tick)
        looks |= pressed(self.world, report.events, self.minds)
        if tick >= self._next_sweep:
            self._next_sweep = tick + TRIGGER_CHECK_TICKS
            looks.update(self._starving(tick))
        return looks

    def _starving(self, tick: int) -> list[int]:
        """The served agents that are starving and may ask about it again (a pass over
        the needs of the living, no look at any mind that is not)."""
        columns = self.world.agent_columns()
        minds = self.minds
        out = []
        for eid, needs in zip(columns.ids, columns.needs, strict=True):
            if needs.hunger >= STARVING and eid in minds:
                mind = minds[eid]
                if mind.asked_tick < tick - (mind.interval or self.interval) // 3:
                    out.append(eid)
        return out

    # -- the main thread's part, after every tick --------------------------------------------

    def on_tick(self, report: TickReport) -> None:
        started = time.perf_counter()
        try:
            self._on_tick(report)
        finally:
            self.main_ms.append((time.perf_counter() - started) * 1000)
            self.queue.wake()

    def _on_tick(self, report: TickReport) -> None:
        world = self.world
        tick = report.tick
        for inp in report.inputs:
            if inp.type == "plan" and inp.source == self.source:
                self._applied(tick, inp.data)
        for event in report.events:
            kind = event.get("type")
            if kind == ev.SPAWN and event.get("brain") in self.brains:
                eid = int(event["agent"])
                if eid not in self.minds:
                    self.minds[eid] = Mind(eid)
                    self._new_minds.add(eid)
            elif kind == ev.DEATH and event.get("agent") in self.minds:
                eid = int(event["agent"])
                del self.minds[eid]
                self._new_minds.discard(eid)
                if self.queue.cancel(eid):
                    self.metrics.count("dropped")
                self._withdraw_agent(eid)
            elif kind == ev.BRAIN_CHANGED:  # a ``brain`` input: this kind gains or loses it
                eid = int(event["agent"])
                if event.get("brain") in self.brains:
                    if eid not in self.minds:
                        self.serve(eid)
                elif eid in self.minds:
                    self.forget(eid)
            elif kind == ev.PLAYED and event.get("agent") in self.minds:
                # A person plays it: its brain pauses. Nothing is asked for it, and a
                # request under way is dropped (its plan would be refused anyway).
                eid = int(event["agent"])
                self.queue.cancel(eid)
                self._withdraw_agent(eid)
                self.minds[eid].status = "idle"
                self.minds[eid].pending = ()
            elif kind == ev.RELEASED and event.get("agent") in self.minds:
                self._new_minds.add(int(event["agent"]))  # back: it thinks at once
        self.answerer.on_events(tick, report)
        self._give_up_late()
        while True:
            try:
                outcome = self.outcomes.get_nowait()
            except queue.Empty:
                break
            self._answered(tick, outcome)
        available = self._check_available()
        latency = self.metrics.mean_latency_s()
        if latency > 0:  # none known yet: nothing goes stale
            self.queue.fresh_s = max(FRESH_MIN_S, FRESH_LATENCIES * latency)
        played = world.players.seats
        for eid in sorted(self._looks(report)):
            mind = self.minds.get(eid)
            if mind is None or not world.alive(eid) or eid in played:
                continue  # gone (its death is news of this tick or the next), or played
            self._consider(eid, mind, available)
            self._reschedule(eid, mind, tick + 1)
        if not self.pool_size:
            self._dispatch(self._send_per_tick)
        if tick - self._digest.since >= self._digest_ticks:
            self._flush_digest(tick)

    def _flush_digest(self, tick: int) -> None:
        """One world-log line for the decisions applied since the last (none: no line)."""
        digest, self._digest = self._digest, Digest(tick)
        line = digest.line(self.label, tick)
        if line is not None:
            self.note(line)

    def _consider(self, eid: int, mind: Mind, available: bool) -> None:
        tick = self.world.tick
        if mind.status == "applying" and tick - mind.answered_tick > APPLY_GRACE_TICKS:
            mind.status = "idle"
        reasons, urgent = triggers(self.world, mind, interval=mind.interval or self.interval,
                                   source=self.source)
        if mind.last_error and mind.status == "idle":
            reasons.append("correcting its last answer")
        fresh = mind.pending if tick - mind.pending_since <= PENDING_TICKS else ()
        if fresh:
            reasons = [*fresh, *(r for r in reasons if r not in fresh)]
        pressing = bool(PRESSING.intersection(reasons))
        if not self._may_ask(eid, mind, tick, reasons, urgent=urgent, pressing=pressing,
                             available=available):
            if pressing:  # a trigger is seen once: kept until it is asked, with news before it
                kept = tuple(r for r in reasons if r in PRESSING)  # the fresh pending first
                if set(kept) - set(fresh):
                    mind.pending_since = tick
                mind.pending = kept
            return
        mind.pending = ()
        # Attacked, starving, spoken to, offered a trade: ahead of routine work.
        if urgent or pressing:
            self.metrics.urgent_reasons.update(r for r in reasons if r in PRESSING)
        self._ask(eid, mind, tuple(reasons), URGENT if urgent or pressing else NORMAL)

    def _may_ask(self, eid: int, mind: Mind, tick: int, reasons: list[str], *, urgent: bool,
                 pressing: bool, available: bool) -> bool:
        if (not reasons or not available or mind.status == "applying"
                or self.queue.state_of(eid) == "in flight"):
            return False  # at most one request per agent outstanding
        if mind.status == "queued" and not pressing:
            return False  # a queued request is replaced only by a more pressing one
        if not pressing and not self._late and self.queue.depth >= self._round:
            # A full round of work already waits: a request built now would be stale by
            # the time a worker takes it (and built in vain if a newer one replaced it).
            # (A request prepared late waits in line instead: it is built as it goes out.)
            self.metrics.count("deferred")
            return False
        if tick - mind.asked_tick < self.min_gap and not urgent:
            return False
        if not REACTIVE.intersection(reasons) and not self._paced(mind, tick):
            self.metrics.count("paced")
            return False
        return True

    def _paced(self, mind: Mind, tick: int) -> bool:
        """Whether the pace lets this agent ask now, unprompted (tops the allowances up)."""
        if self._agent_refill:
            if mind.allowance_tick >= 0:
                mind.allowance = min(BURST, mind.allowance
                                     + (tick - mind.allowance_tick) * self._agent_refill)
            mind.allowance_tick = tick
            if mind.allowance < 1:
                return False
        if self._global_refill:
            self._global_allowance = min(
                self._global_burst,
                self._global_allowance + (tick - self._global_tick) * self._global_refill)
            self._global_tick = tick
            if self._global_allowance < 1:
                return False
        return True

    def _ask(self, eid: int, mind: Mind, reasons: tuple[str, ...], priority: int) -> None:
        rid = self._next_rid
        if self._late:  # prepared when it goes out (``_dispatch``)
            job = Job(rid=rid, agent=eid, tick=self.world.tick, priority=priority,
                      reasons=reasons, payload=None)
        else:
            job = self.answerer.prepare(eid, mind, rid, reasons, priority)
        placed = self.queue.put(job, wake=False)  # woken after the tick (on_tick)
        if placed == "busy":
            return
        if placed == "replaced":
            self.metrics.count("coalesced")
        mind.status = "queued"
        self._next_rid += 1
        mind.rid = rid
        mind.asked_tick = self.world.tick
        mind.reasons = reasons
        mind.next_ask_tick = 0  # asked now: an earlier "ask me at" is spent
        mind.allowance -= 1  # reactive asks too: the pace makes up for them later
        self._global_allowance -= 1

    def _applied(self, tick: int, data: Any) -> None:
        eid = data.get("agent")
        mind = self.minds.get(eid) if isinstance(eid, int) else None
        if mind is None:
            return
        rid = int(data.get("request", 0) or 0)
        mind.applied_rid = max(mind.applied_rid, rid)
        if rid >= mind.rid:
            mind.status = "acting"
            self._wake(eid, mind)
        actions = ", ".join(describe_action(a) for a in data.get("actions", []))
        thought = str(data.get("thought", ""))
        mind.last_decision = f"t={tick}: {actions}" + (f" — “{thought}”" if thought else "")
        mind.last_decision_tick = tick
        hint = data.get("ask_again_s")
        if isinstance(hint, int) and not isinstance(hint, bool) and hint > 0:
            mind.next_ask_tick = tick + round(hint * self.world.config.world.tick_rate)
        mind.last_error = ""
        mind.decisions += 1
        self.metrics.decided()
        self.answerer.on_decided(eid, tick, actions, thought)
        self._digest.add(eid, [str(a.get("name", "?")) for a in data.get("actions", [])
                               if isinstance(a, dict)])
        if self._each_decision:
            self.note(f"{self.label:<8} {self.world.name_of(eid)}#{eid} decides: {actions}"
                      + (f" — “{thought}”" if thought else ""))

    def _answered(self, tick: int, outcome: Outcome) -> None:
        mind = self.minds.get(outcome.agent)
        if mind is None or outcome.rid != mind.rid:
            return
        mind.answered_tick = tick
        if outcome.usage is not None:
            mind.last_usage = outcome.usage
        if outcome.ok:
            if mind.applied_rid < outcome.rid:
                mind.status = "applying"
                self._wake(outcome.agent, mind)
            return
        self.metrics.count("fallbacks")
        mind.status = "idle"
        self._wake(outcome.agent, mind)
        if outcome.error_kind in QUIET_FAILURES:
            self.metrics.count("dropped")  # never sent
            return
        mind.errors += 1
        mind.last_error_tick = tick
        if self.world.metrics.enabled:  # the agent's metrics count it, and so replay it
            self.world_inbox.submit("decision_fault", {
                "agent": outcome.agent, "kind": outcome.error_kind, "source": self.source,
                "error": str(outcome.error)[:MAX_FAULT_TEXT]}, source=self.source)
        noted = self.answerer.on_failed(tick, outcome, mind)
        text = f"{outcome.error_kind}: {outcome.error}"
        mind.notes.append(text)
        del mind.notes[:-3]
        if noted:
            self.note(f"{self.label:<8} {self.world.name_of(outcome.agent)}#"
                      f"{outcome.agent} falls back to its built-in brain: {text}")

    def _check_available(self) -> bool:
        """Say so once when agents fall back for want of a brain, and once when it is back."""
        reason = self.answerer.unavailable()
        available = not reason
        if available != self._available:
            self._available = available
            if available:
                self.note(f"{self.label} available again: {self.label} agents think with it")
            else:
                self.report(f"{reason}. {self.label} agents use their built-in brains "
                            "meanwhile.")
        return available

    # -- requests and answers (any thread) -----------------------------------------------------

    def send_queued(self) -> None:
        """Main thread: send what waits queued while the round has room, as after a tick.
        A stage that waits within its tick for every decision (``eval.stage.tick_settled``)
        calls it as answers come in, so queued requests go out in the same tick, in queue
        order, instead of waiting for a tick that the stage will not run until they are
        answered."""
        if not self.pool_size:
            self._dispatch(None)

    def _dispatch(self, limit: int | None) -> None:
        """With no worker threads, requests go to the answerer on the main thread after the
        tick, urgent first (the answerer sends them on; the answers come later), while
        fewer than a round (``pace.round_size``) are in flight: the rest wait queued, where
        a newer observation may still replace them. At most ``limit`` go out (None: no
        limit): a batched model server finishes a whole batch at once, and preparing a
        round of requests in one tick would stretch that tick's work by the round, so after
        a tick they go out over a few ticks (``_send_per_tick``)."""
        taken = 0
        calls: list[tuple[Job, _Call]] = []
        prepared_ms: list[float] = []
        while ((limit is None or taken < limit) and self.queue.in_flight < self._round
               and (job := self.queue.get(timeout=0)) is not None):
            taken += 1
            began = time.perf_counter()
            if self._late:
                prepared = self._prepare(job)
                if prepared is None:
                    continue
                job = prepared
            calls.append((job, self._open(job, None)))
            prepared_ms.append((time.perf_counter() - began) * 1000)
        if not calls:
            return
        began = time.perf_counter()
        self.answerer.answer_all(calls)  # handed on together (the LLM's: one wake-up)
        share = (time.perf_counter() - began) * 1000 / len(calls)
        for ms in prepared_ms:
            self.metrics.main_thread(ms + share)

    def _prepare(self, queued: Job) -> Job | None:
        """The request of ``queued`` (taken from the queue just now) as it goes out, with
        the agent's observation as of now; None when the agent is gone."""
        eid = queued.agent
        mind = self.minds.get(eid)
        if mind is None or not self.world.alive(eid):  # its death is news of the next tick
            self.queue.done(eid)
            self.metrics.count("dropped")
            if mind is not None:
                mind.status = "idle"
                self._wake(eid, mind)
            return None
        line, since = self.queue.entered(eid)
        self.metrics.waited(line, time.perf_counter() - since)
        return self.answerer.prepare(eid, mind, queued.rid, queued.reasons, queued.priority)

    def _open(self, job: Job, thread: threading.Thread | None) -> _Call:
        line, since = self.queue.entered(job.agent)
        if not self._late:
            self.metrics.waited(line, time.perf_counter() - since)
        call = _Call(self, job, thread, line, since)
        with self._lock:
            self._calls[job.rid] = call
        return call

    def _reply(self, call: _Call, result: Answer | Fault) -> bool:
        job = call.job
        with self._lock:
            if call.state != "open":
                return False  # given up at its deadline, or withdrawn: dropped
            call.state = "answered"
            if call.thread is None:  # nothing runs on it any more
                del self._calls[job.rid]
        if call.thread is None:
            self.queue.done(job.agent)
        self.metrics.reacted(call.line, time.perf_counter() - call.queued,
                             danger=call.line == URGENT and not DANGER.isdisjoint(job.reasons))
        if isinstance(result, Answer):
            self._plan(job.agent, job.rid, job.tick, job.reasons, result).submit(
                self.world_inbox)
            self.outcomes.put(Outcome(
                rid=job.rid, agent=job.agent, ok=True,
                decision=", ".join(str(a) for a in result.actions), thought=result.thought,
                usage=result.usage, latency_s=result.latency_s, cached=result.cached))
        else:
            self.outcomes.put(Outcome(
                rid=job.rid, agent=job.agent, ok=False, error_kind=result.kind,
                error=result.error, raw=result.raw, usage=result.usage,
                latency_s=result.latency_s, too_long=result.too_long))
        return True

    def _plan(self, agent: int, rid: int, asked_tick: int, reasons: tuple[str, ...],
              answer: Answer) -> PlanInput:
        """The decision as the world takes it, whoever answered (the one place a brain's
        plan input is made)."""
        return PlanInput(agent=agent, actions=answer.actions, source=self.source,
                         thought=answer.thought, request=rid, reasons=reasons,
                         latency_s=answer.latency_s, asked_tick=asked_tick, by=answer.by)

    def _withdraw(self, call: _Call) -> None:
        with self._lock:
            if call.state != "open":
                return
            call.state = "withdrawn"
            if call.thread is None:
                del self._calls[call.job.rid]
        if call.thread is None:
            self.queue.done(call.job.agent)
            self.answerer.abandon(call.job)

    def _withdraw_agent(self, eid: int) -> None:
        """Agent ``eid`` died or left the kind: its request answered from elsewhere, if one
        is out, is withdrawn (a worker's finishes; its answer no longer matters)."""
        with self._lock:
            out = [call for call in self._calls.values()
                   if call.job.agent == eid and call.thread is None and call.state == "open"]
        for call in out:
            call.withdraw()

    def _give_up_late(self) -> None:
        """Requests past their deadline are answered as faults now (their agents fall back
        at once; a late answer is dropped), and a worker stuck in one is replaced."""
        now = time.perf_counter()
        with self._lock:
            late = [call for call in self._calls.values()
                    if call.state == "open" and call.job.deadline_s is not None
                    and now - call.started > call.job.deadline_s]
            for call in late:
                call.state = "expired"
                if call.thread is None:
                    del self._calls[call.job.rid]
        for call in late:
            job, waited = call.job, now - call.started
            if call.thread is None:
                self.queue.done(job.agent)
                self.answerer.abandon(job)
            fault = self.answerer.late(job, waited)
            self.outcomes.put(Outcome(rid=job.rid, agent=job.agent, ok=False,
                                      error_kind=fault.kind, error=fault.error,
                                      latency_s=waited))
            if call.thread is not None:
                self.worker_stuck(call.thread, where=fault.where or self.label,
                                  agent=job.agent, waited_s=waited)

    def worker_stuck(self, thread: threading.Thread, *, where: str, agent: int,
                     waited_s: float) -> None:
        """``thread`` is inside a call given up on (threads cannot be killed): a new worker
        takes its place while the pool has room (at most ``MAX_STUCK`` extra threads)."""
        with self._lock:
            if thread in self._stuck_threads:
                return
            self._stuck_threads.add(thread)
            self.stuck += 1
            working = len(self.workers) - self.stuck
            room = len(self.workers) < self.pool_size + MAX_STUCK
        if working < self.pool_size and room and not self._closed:
            self.replaced += 1
            self._start_worker()
            self.report(f"{where} has not returned after {waited_s:.1f} s (agent #{agent}); "
                        "a new worker thread takes the stuck one's place")

    # -- worker threads ------------------------------------------------------------------------

    def _start_worker(self) -> None:
        with self._lock:
            worker = threading.Thread(target=self._work,
                                      name=f"{self.source}-worker-{len(self.workers)}",
                                      daemon=True)
            self.workers.append(worker)
        worker.start()

    def _work(self) -> None:
        try:
            while not self._closed:
                self.answerer.between_jobs()
                job = self.queue.get(timeout=POLL_S)
                if job is not None and self._serve(job):
                    return  # back from a call given up on, and another took its place
        finally:
            self.answerer.thread_done()

    def _serve(self, job: Job) -> bool:
        """Answer one job on this worker; True if the worker leaves the pool after it."""
        call = self._open(job, threading.current_thread())
        try:
            self.answerer.answer(job, call)
        except Exception:  # a bug of ours, not a brain's: say so, keep the worker
            self.report(f"{self.label} worker bug (the agent falls back; please report "
                        f"it):\n{traceback.format_exc()}")
            call(Fault(kind="internal", error="internal error"))
        finally:
            # Only now: an answerer's work after its reply (a brain's reflection) never
            # overlaps the agent's next request.
            with self._lock:
                self._calls.pop(job.rid, None)
            self.queue.done(job.agent)
        return self._spare()

    def _spare(self) -> bool:
        """A worker back from a call given up on leaves if the pool is full without it (the
        one started in its place stays)."""
        me = threading.current_thread()
        with self._lock:
            if me not in self._stuck_threads:
                return False
            self._stuck_threads.discard(me)
            self.stuck -= 1
            if len(self.workers) - self.stuck > self.pool_size:
                self.workers.remove(me)
                return True
            return False

    def stop_workers(self, timeout: float) -> bool:
        """Stop taking work and give the workers ``timeout`` in all to finish; one in the
        middle of an answer finishes or is abandoned (daemon threads: a brain or an
        endpoint that hangs cannot hold up the shutdown). False if already stopped."""
        if self._closed:
            return False
        self._closed = True
        self._flush_digest(self.world.tick)  # the decisions of the last, unfinished minute
        self.queue.close()
        with self._lock:
            workers = list(self.workers)
        for worker in workers:
            worker.join(timeout / max(1, len(workers)))
        return True

    def close(self, timeout: float = 2.0) -> None:
        """Stop the workers, then let the answerer release what it holds."""
        if self.stop_workers(timeout):
            self.answerer.stopped()

    # -- figures -----------------------------------------------------------------------------

    @property
    def requests_made(self) -> int:
        """Requests made since the pipeline started (each answered, failed or replaced)."""
        return self._next_rid - 1

    @property
    def in_flight(self) -> int:
        return self.queue.in_flight

    def thinking(self) -> int:
        """Agents waiting for an answer (queued or in flight)."""
        return self.queue.depth + self.queue.in_flight

    def state_of(self, agent_id: int) -> str:
        """What agent ``agent_id``'s mind is doing, in words (for /debug)."""
        mind = self.minds[agent_id]
        state = self.queue.state_of(agent_id)
        if state is not None:
            return (f"thinking ({state}, asked {self.world.tick - mind.asked_tick} ticks ago: "
                    f"{', '.join(mind.reasons)})")
        if mind.status == "applying":
            return "answer arrived; it applies at the next tick"
        if mind.status == "acting":
            return f"acting on its {self.label} plan"
        if not self._available:
            return f"{self.label} unavailable: built-in brain"
        return "built-in brain until the next trigger"

    def last_lines(self, mind: Mind, fault: str = "fault") -> list[str]:
        """/debug's lines for a mind's last decision and last failure (if any)."""
        lines = [f"last decision {mind.last_decision}"] if mind.last_decision else []
        if mind.notes:
            lines.append(f"last {fault} (t={mind.last_error_tick}): {mind.notes[-1]}")
        return lines

    def status_line(self) -> str:
        """The console status line's part."""
        if not self._available:
            return f"{self.label} off: built-in brains"
        return f"{self.label} {self.thinking()} thinking, {self.in_flight} in flight"


def describe_action(action: Any) -> str:
    """``eat(item=apple)`` from a plan input's action."""
    if not isinstance(action, dict):
        return str(action)
    args = action.get("args") or {}
    inner = ", ".join(f"{k}={v}" for k, v in args.items())
    return f"{action.get('name')}({inner})"
