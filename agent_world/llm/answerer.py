"""LLM agents: the decision pipeline's answerer with a model as the brain.

On the main thread it takes each request's ``Observation`` (frozen data) as the request
goes out and hands the request to the model's ``Transport`` without waiting. The transport's
event-loop thread does the rest: it renders the prompt (from the observation and the
agent's memory, or answers from the response cache), and a coroutine there calls the model
within a deadline, checks the answer and replies with a decision or a fault. The agents'
memories live on the loop thread too: the main thread hands each tick's events, each
decision and each capture for a snapshot over in order, so a prompt rendered for tick ``t``
holds the memory as of ``t``. The pipeline runs no worker thread for this kind;
``llm.max_concurrent`` requests are in flight at once. A request the pipeline gives up or
withdraws is cancelled, its slot and connection freed. The circuit breakers and the hourly
budget say when no request can be made. Replay and resume never build a pipeline, so they
never call a model.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_world.config import KindPace, LLMConfig, llm_brain
from agent_world.contract.answer import DecisionError, TextDecision, decide_from_text
from agent_world.contract.observation import Observation, observe
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.decisions.answerer import Answer, Answering, Fault, Pace, Reply
from agent_world.decisions.interview import Question, Said, Spoken
from agent_world.decisions.keeping import MindCapture, Record
from agent_world.decisions.metrics import Metrics, percentile
from agent_world.decisions.mind import Mind
from agent_world.decisions.requests import Job, Outcome
from agent_world.llm.brainllm import BrainLLM
from agent_world.llm.cache import ResponseCache, cache_key
from agent_world.llm.gates import Gates, LLMUnavailable
from agent_world.llm.http import estimate_tokens
from agent_world.llm.interview import ask_model, interview_request
from agent_world.llm.memory import MemoryBook
from agent_world.llm.promptlog import PromptLog
from agent_world.llm.prompts import PROMPT_VERSION, PromptBuilder, WorldFacts
from agent_world.llm.redact import Redactor
from agent_world.llm.transport import EndpointFactory, Transport, TransportClosed
from agent_world.types import (
    Clock,
    LLMRequest,
    LLMResponse,
    ProviderError,
    TickReport,
)

__all__ = ["MAX_RAW_CHARS", "LLMAgents", "ProviderFactory"]

ProviderFactory = EndpointFactory
"""Makes the provider of one endpoint, given its base URL (once per endpoint)."""

TYPICAL_NEW_TOKENS = 350  # a decision's own part of the prompt, as measured (llm_cost bench)
TYPICAL_ANSWER_TOKENS = 60
CACHE_MIN_TOKENS = 1024  # providers cache prefixes from this length on (OpenAI)
MAX_RAW_CHARS = 2000  # of a model's answer, kept with its plan input
DEADLINE_GRACE_S = 1.0  # the pipeline gives a request up this long after its own deadline


@dataclasses.dataclass(frozen=True, slots=True)
class _Asked:
    """What a request's prompt is made from, taken on the main thread as it goes out."""

    mind: Mind  # its /debug fields get the rendered prompt
    name: str
    personality: str
    seen: Observation
    previous: Observation | None  # at the agent's last prompt: what changed since
    with_memory: bool  # False: sent without (the last prompt was too long)
    correction: str  # why its last answer was rejected ('' none)


class InvalidAnswer(Exception):
    def __init__(self, kind: str, message: str, response: LLMResponse) -> None:
        super().__init__(message)
        self.kind = kind
        self.response = response


class LLMAgents(Answering):
    """The answerer of agents with ``brain: llm``, and what only they have: prompts, the
    response cache, memories, the gates' figures, the cost estimate and /debug's view."""

    source = "llm"
    label = "LLM"
    prepares_late = True  # the prompt is built as the request goes out, never stale

    def __init__(self, cfg: LLMConfig, world: World, *, settings: KindPace,
                 transport: Transport,
                 identity: dict[str, Any], redactor: Redactor, clock: Clock | None = None,
                 report: Callable[[str], None] = print,
                 prompt_log: Path | None = None, owns_transport: bool = False,
                 profile: str = "") -> None:
        """``settings``: ``decisions.llm`` over ``decisions`` (its ``workers`` do not apply:
        requests are answered on the transport's loop thread). ``transport``: the model,
        with its gates, shared with the angel and users' brains; their figures are this
        kind's. ``owns_transport``: close it when this kind stops. ``profile``: the model
        profile (``llm.models``) whose agents, brain ``llm:NAME``, this answers; '' the
        default's, brain ``llm``."""
        # No worker threads: ``answer`` hands the request to the transport and returns.
        # At most ``max_concurrent`` are handed over at once; more would only wait there.
        super().__init__(pace=Pace(interval=settings.think_interval_ticks,
                                   min_gap=settings.min_gap_ticks,
                                   round_size=cfg.max_concurrent,
                                   workers=0,
                                   per_agent_hour=settings.decisions_per_agent_hour,
                                   per_hour=settings.decisions_per_hour),
                         brains=frozenset({llm_brain(profile)}), clock=clock)
        self.profile = profile
        if profile:
            self.label = f"LLM {profile}"
        self.world = world
        self.report = report
        self.cfg = cfg
        self.redact = redactor
        self.identity = identity
        self.prompt_log = PromptLog(prompt_log, redactor) if prompt_log is not None else None
        self.prompts = PromptBuilder(facts=WorldFacts.of(world), max_actions=cfg.plan_actions,
                                     temperature=cfg.temperature,
                                     max_tokens=cfg.max_tokens, seed=cfg.seed or None,
                                     structured=cfg.structured)
        self._ability_names: tuple[str, ...] = ()
        # Every call of this world's LLM passes these: its agents', users' brains' and
        # the angel's.
        self.transport = transport
        self._owns_transport = owns_transport
        self.gates: Gates = transport.gates
        self.own_metrics: Metrics | None = self.gates.metrics
        self.breaker = self.gates.breaker
        self.budget = self.gates.budget
        self.price = self.gates.price
        self.cache = ResponseCache(cfg.cache_size)
        self.memory = MemoryBook(cfg.memory_window)
        # Requests on the transport, by request id: cancelled when the pipeline abandons one.
        self._flying: dict[int, concurrent.futures.Future[Answer | Fault]] = {}
        self._flying_lock = threading.Lock()
        self._interviews: set[concurrent.futures.Future[Spoken]] = set()  # on the transport

    def __repr__(self) -> str:
        return (f"LLMAgents({self.profile_name}: {self.identity.get('provider')} "
                f"{self.identity.get('model')}, {len(self.minds)} agents)")

    @property
    def profile_name(self) -> str:
        """The model profile's name as figures and the event log give it."""
        return self.profile or "default"

    # -- the pipeline's hooks (main thread) --------------------------------------------------

    def on_events(self, tick: int, report: TickReport) -> None:
        self._in_memory(self.memory.on_events, tick, report.events, frozenset(self.minds))

    def _in_memory(self, work: Callable[..., object], *args: Any) -> None:
        """Run ``work(*args)`` where the memories live: on the loop thread, after all that
        was handed over before (main thread). Once the transport is closed its thread is
        gone, so the work runs here."""
        try:
            self.transport.call_soon(functools.partial(work, *args))
        except TransportClosed:
            work(*args)

    def unavailable(self) -> str:
        if self.breaker.state == "stopped":
            return f"LLM calls stopped ({self.breaker.reason}); fix it and restart"
        if not self.breaker.would_allow():
            return (f"LLM endpoint failing, circuit breaker open ({self.breaker.reason}); "
                    f"next try in {self.breaker.seconds_left():.0f} s")
        every = self.transport.unavailable()
        if every:
            return every
        if self.budget.exhausted():
            wait = self.budget.refills_in()
            when = f"{wait / 60:.0f} min" if wait >= 90 else f"{wait:.0f} s"
            return (f"LLM budget spent (llm.tokens_per_hour / cost_per_hour, paced over the "
                    f"hour); more is available in {when}")
        return ""

    def _sync_abilities(self) -> None:
        book = getattr(self.world, "abilities", None)
        catalog = [a for a in book.catalog() if "disabled" not in a] if book is not None else []
        names = tuple(a["name"] for a in catalog)
        if names != self._ability_names:
            self._ability_names = names
            self.prompts.set_abilities(catalog)

    def prepare(self, eid: int, mind: Mind, rid: int, reasons: tuple[str, ...],
                priority: int) -> Job:
        """Main thread, as the request goes out: what the agent sees now (frozen). The
        prompt is rendered on the loop thread (``_render``): it is most of a request's
        cost, and none of it needs the world."""
        world = self.world
        self._sync_abilities()
        agent = world.store.get(eid, c.Agent)
        seen = observe(world, eid)
        # After a "context too long" answer the next prompt goes without the memory, once.
        asked = _Asked(mind=mind, name=agent.name, personality=agent.personality, seen=seen,
                       previous=mind.last_observation, with_memory=not mind.trim_next,
                       correction=mind.last_error)
        mind.trim_next = False
        mind.last_observation = seen
        return Job(rid=rid, agent=eid, tick=world.tick, priority=priority, reasons=reasons,
                   payload=asked, deadline_s=self.cfg.request_timeout_s + DEADLINE_GRACE_S)

    def _render(self, job: Job) -> Job | Answer:
        """Loop thread, as the request is handed over: its prompt, from what ``prepare``
        took and the agent's memory as of the request's tick; or the answer when the
        response cache knows it."""
        asked: _Asked = job.payload
        memory = self.memory.of(job.agent).render(job.tick) if asked.with_memory else {}
        prompt = self.prompts.user(
            name=asked.name, observation=asked.seen.prompt_view(asked.previous),
            memory=memory, correction=asked.correction)
        request = self.prompts.request(prompt,
                                       system=self.prompts.system_for(asked.personality))
        # For /debug only: plain attribute stores, read whole on the main thread.
        asked.mind.last_prompt_tokens = estimate_tokens(request.system + prompt)
        asked.mind.last_prompt = prompt
        key = cache_key(self.identity, request, PROMPT_VERSION)
        hit = self.cache.get(key)
        if hit is not None:
            try:
                decision = decide_from_text(hit.text, max_actions=self.cfg.plan_actions)
            except DecisionError:
                pass  # asked again
            else:
                self.metrics.request()
                return _answer(decision, hit, cached=True, profile=self.profile_name)
        return dataclasses.replace(job, payload=request, key=key)

    # -- answering (the main thread hands over; the transport's loop thread answers) ------

    def answer(self, job: Job, reply: Reply) -> None:
        self.answer_all([(job, reply)])

    def answer_all(self, calls: Sequence[tuple[Job, Reply]]) -> None:
        """Hand the jobs to the transport together and return at once; each ``reply`` is
        called from the transport's loop thread when its answer (or fault) is known."""
        futures: list[concurrent.futures.Future[Answer | Fault]] = [
            concurrent.futures.Future() for _ in calls]
        try:
            self.transport.call_soon(functools.partial(self._hand_over, calls, futures))
        except TransportClosed:  # the program is stopping
            for _job, reply in calls:
                reply(Fault(kind="connect", error="the LLM transport is closed"))
            return
        with self._flying_lock:
            for (job, _reply), future in zip(calls, futures, strict=True):
                self._flying[job.rid] = future
        for (job, reply), future in zip(calls, futures, strict=True):
            future.add_done_callback(functools.partial(self._finished, job, reply))

    def _hand_over(self, calls: Sequence[tuple[Job, Reply]],
                   futures: Sequence[concurrent.futures.Future[Answer | Fault]]) -> None:
        """Loop thread: render each request's prompt (in the order the main thread handed
        work over, so with the memory as of its tick) and start its call."""
        for (job, _reply), future in zip(calls, futures, strict=True):
            if future.cancelled():  # given up or withdrawn before it was handed over
                continue
            try:
                rendered = self._render(job)
            except Exception as exc:  # a bug: ``_finished`` reports it
                if future.set_running_or_notify_cancel():
                    future.set_exception(exc)
                continue
            if isinstance(rendered, Answer):
                if future.set_running_or_notify_cancel():
                    future.set_result(rendered)
                continue
            self.transport.start(self._process(rendered), future)

    def _finished(self, job: Job, reply: Reply,
                  future: concurrent.futures.Future[Answer | Fault]) -> None:
        with self._flying_lock:
            self._flying.pop(job.rid, None)
        if future.cancelled():
            return  # abandoned by the pipeline: nobody waits for it
        result: Answer | Fault
        try:
            result = future.result()
        except Exception:  # a bug: say so loudly, count it, keep going
            self.metrics.error("internal")
            self.report(self.redact(f"LLM worker bug (the agent falls back; please report "
                                    f"it):\n{traceback.format_exc()}"))
            result = Fault(kind="internal", error="internal error")
        reply(result)

    def abandon(self, job: Job) -> None:
        """The pipeline gave ``job`` up or withdrew it: cancel its coroutine (which frees
        its slot and its connection); an answer that still comes is dropped."""
        with self._flying_lock:
            future = self._flying.pop(job.rid, None)
        if future is not None:
            future.cancel()

    async def _process(self, job: Job) -> Answer | Fault:
        try:
            self.gates.admit()
        except LLMUnavailable as exc:
            return Fault(kind=exc.kind, error=str(exc))
        self.metrics.request()
        flying = self.cache.claim(job.key)
        if flying is not None:  # the same call is in flight: share its answer
            try:  # shielded: this one given up must not cancel the call it shares
                shared = await asyncio.shield(asyncio.wrap_future(flying))
            except asyncio.CancelledError:
                self.gates.breaker.release()
                raise
            if shared is not None:
                self.gates.succeeded()
                decision = decide_from_text(shared.text, max_actions=self.cfg.plan_actions)
                return self._deliver(job, decision, shared, cached=True)
        try:
            response, decision = await self._ask(job)
        except ProviderError as exc:
            if flying is None:
                self.cache.release(job.key, None)
            return self._failed(job, exc)
        except asyncio.CancelledError:  # given up or withdrawn: nothing to say of it
            if flying is None:
                self.cache.release(job.key, None)
            self.gates.breaker.release()
            raise
        except InvalidAnswer as exc:
            if flying is None:
                self.cache.release(job.key, None)
            self.gates.succeeded()  # the endpoint works; the model erred
            self.metrics.error(exc.kind)
            self._log(job, exc.response, error=f"{exc.kind}: {exc}")
            return Fault(kind=exc.kind, error=self.redact(str(exc)),
                         raw=self.redact(exc.response.text[:300]), usage=exc.response.usage,
                         latency_s=exc.response.latency_s)
        self.gates.succeeded()
        if flying is None:
            self.cache.put(job.key, response)
            self.cache.release(job.key, response)
        return self._deliver(job, decision, response, cached=False)

    async def _ask(self, job: Job) -> tuple[LLMResponse, TextDecision]:
        """Call (with transport retries inside one deadline), then validate; one more try
        for a malformed, empty, cut-off or schema-breaking answer."""
        request: LLMRequest = job.payload
        deadline = self.clock.now() + self.cfg.request_timeout_s
        second_chance = True
        metrics = self.metrics

        def on_retry(exc: ProviderError, _wait: float) -> None:
            metrics.retry(exc.kind)
            metrics.call()

        while True:
            metrics.call()
            try:
                response = await self.transport.complete(request, deadline=deadline,
                                                         on_retry=on_retry)
            except ProviderError as exc:
                if (exc.kind in ("malformed", "empty") and second_chance
                        and self.clock.now() < deadline):
                    second_chance = False
                    metrics.retry(exc.kind)
                    continue
                raise
            response = self.gates.answered(response)
            try:
                if response.finish_reason == "length":
                    raise InvalidAnswer("length", "the answer was cut off at max_tokens "
                                        "before the JSON was complete; keep the thought "
                                        "short", response)
                try:
                    return response, decide_from_text(response.text,
                                                      max_actions=self.cfg.plan_actions)
                except DecisionError as exc:
                    raise InvalidAnswer("schema", str(exc), response) from None
            except InvalidAnswer as exc:
                if not second_chance or self.clock.now() >= deadline:
                    raise
                second_chance = False
                metrics.retry(exc.kind)
                request = dataclasses.replace(
                    request, temperature=0.0,
                    max_tokens=request.max_tokens * 2 if exc.kind == "length"
                    else request.max_tokens)

    def _log(self, job: Job, response: LLMResponse | None, *, error: str = "",
             cached: bool = False) -> None:
        """The call in the prompt log (``llm.log_prompts``), if one is kept."""
        log = self.prompt_log
        if log is None:
            return
        extra: dict[str, Any] = {"cached": cached} if cached else {}
        if response is not None:
            extra |= {"model": response.model, "usage": response.usage.to_dict(),
                      "latency_ms": round(response.latency_s * 1000, 1)}
        log.record(tick=job.tick, agent=job.agent, request=job.rid,
                   system=job.payload.system, prompt=job.payload.prompt,
                   answer=response.text if response is not None else None, error=error,
                   **extra)

    def _deliver(self, job: Job, decision: TextDecision, response: LLMResponse, *,
                 cached: bool) -> Answer:
        self._log(job, response, cached=cached)
        return _answer(decision, response, cached=cached, profile=self.profile_name)

    def _failed(self, job: Job, exc: ProviderError) -> Fault:
        message = self.gates.failed(exc)
        self._log(job, None, error=f"{exc.kind}: {message}")
        too_long = exc.kind == "bad_request" and (
            exc.status == 413 or "context" in message.lower() or "too long" in message.lower())
        return Fault(kind=exc.kind, error=message, too_long=too_long)

    # -- interviews (decisions/interview.py) ---------------------------------------------------

    def speaks_for(self, eid: int) -> bool:
        return eid in self.minds

    def interview_room(self) -> int:
        """Free slots of the model, when no urgent decision waits and calls may go out:
        interviews take only what decisions leave."""
        if self.unavailable() or self.queue.urgent_waiting() or self.transport.waiting:
            return 0
        with self._flying_lock:
            out = len(self._interviews)
        return max(0, self.cfg.max_concurrent - self.transport.in_flight - out)

    def interview(self, question: Question, said: Said) -> None:
        """Ask agent ``question.agent`` through its model (main thread: the prompt is made
        here, from its observation and memory, and handed to the transport)."""
        world = self.world
        eid = question.agent
        agent = world.store.get(eid, c.Agent)
        by = {"kind": "llm", "brain": agent.brain, "profile": self.profile_name,
              "model": str(self.identity.get("model", ""))}
        request = interview_request(
            name=agent.name, personality=agent.personality,
            observation=observe(world, eid).prompt_view(None),
            memory=self.memory.view_of(eid).render(world.tick), question=question,
            temperature=self.cfg.temperature, seed=self.cfg.seed or None)
        try:
            future = self.transport.submit(ask_model(self.transport, self.gates, request,
                                                     question, by))
        except TransportClosed:
            said(Spoken(text=None, error="connect: the LLM transport is closed", by=by))
            return
        with self._flying_lock:
            self._interviews.add(future)
        future.add_done_callback(functools.partial(self._interviewed, said, by))

    def _interviewed(self, said: Said, by: dict[str, Any],
                     future: concurrent.futures.Future[Spoken]) -> None:
        with self._flying_lock:
            self._interviews.discard(future)
        if future.cancelled():
            said(Spoken(text=None, error="cancelled: the LLM stopped", by=by))
            return
        try:
            said(future.result())
        except Exception as exc:  # a bug: say so, the interview ends without an answer
            self.report(self.redact(f"LLM interview bug (please report it):\n"
                                    f"{traceback.format_exc()}"))
            said(Spoken(text=None, error=f"internal: {type(exc).__name__}", by=by))

    def on_decided(self, eid: int, tick: int, actions: str, thought: str) -> None:
        self._in_memory(self.memory.note, eid, tick,
                        f"I decided: {actions}" + (f" ({thought})" if thought else ""),
                        "own decision")

    def estimate(self, agents: int, others: Sequence[tuple[str, int, float]] = ()) -> str:
        """What ``agents`` LLM agents, and ``others`` (label, agents, calls an hour each:
        agents on users' brains that ask this LLM, such as an ``LLMBrain``), may spend in an
        hour, in words (for the start-up banner). The budget (``llm.tokens_per_hour``,
        ``llm.cost_per_hour``) caps them all together."""
        cfg, pace = self.cfg, self.pace
        hourly = 3600 * self.world.config.world.tick_rate
        per_agent = pace.per_agent_hour or hourly / max(pace.min_gap, 1)
        if pace.per_hour:
            per_agent = min(per_agent, pace.per_hour / max(agents, 1))
        shared = estimate_tokens(self.prompts.system_for("trader"))
        new, answer = TYPICAL_NEW_TOKENS, TYPICAL_ANSWER_TOKENS
        cached = shared if shared >= CACHE_MIN_TOKENS else 0
        tokens = f"~{shared} shared + ~{new} new prompt tokens, ~{answer} answer tokens"
        callers = " + ".join([f"{agents} LLM agents x {per_agent:g} decisions/hour",
                              *(f"{n} {label} x ~{rate:,.0f} calls/hour"
                                for label, n, rate in others if n)])
        if self.price is None:
            return (f"{callers} x ({tokens}); no price known for {cfg.model!r}: add it to "
                    f"llm.prices, e.g. {{{cfg.model}: '0.15/0.075/0.6'}}")
        one = self.price.cost(shared + new, cached, answer)
        calls = agents * per_agent + sum(n * rate for _label, n, rate in others)
        caps = []
        if cfg.tokens_per_hour:
            caps.append((cfg.tokens_per_hour / (shared + new + answer) * one,
                         f"llm.tokens_per_hour {cfg.tokens_per_hour:,}"))
        if cfg.cost_per_hour:
            caps.append((cfg.cost_per_hour, f"llm.cost_per_hour {cfg.cost_per_hour:g}"))
        cap = min(caps, default=None)
        spend = calls * one
        # LLM agents are paced to their rate; other brains' figures are their schedule
        # (they may ask more when things happen), so for them only the budget is a bound.
        said = "at most " if not any(n for _label, n, _rate in others) else ""
        if cap is not None and cap[0] < spend:
            head = f"at most ~${cap[0]:.2f}/hour (held there by {cap[1]}; unheld ~${spend:.2f})"
        elif cap is not None and said == "":
            head = f"~${spend:.2f}/hour ({cap[1]} caps it at ~${cap[0]:.2f})"
        else:
            head = f"{said}~${spend:.2f}/hour"
        return f"{head}: {callers} x ${one:.5f} ({tokens}; {self.price.describe()})"

    def on_failed(self, tick: int, outcome: Outcome, mind: Mind) -> bool:
        mind.trim_next = outcome.too_long
        if outcome.error_kind in ("schema", "length"):
            mind.last_error = outcome.error  # the model can fix its own mistakes
            self._in_memory(self.memory.note, outcome.agent, tick,
                            f"my answer was invalid: {outcome.error}", "invalid answer")
        return True

    def for_brains(self) -> BrainLLM:
        """The LLM as users' brains call it (``Brain.llm``): within this manager's budget
        and breaker, its calls counted in its figures."""
        return BrainLLM(self.cfg, self.transport, rules=lambda: self.prompts.system)

    # -- figures -----------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        m = self.metrics
        figures = m.figures()
        left = self.budget.left()
        budget = ", ".join(f"{v} {k}" for k, v in left.items() if v is not None) or "no limit"
        return {
            "profile": self.profile_name,
            "model": f"{self.identity.get('provider')} {self.identity.get('model')}",
            "agents": len(self.minds),
            "requests": m.requests,
            **self.attention(),
            "cache hit rate": f"{self.cache.hit_rate:.0%}",
            "p50": f"{figures['p50_ms']:g} ms",
            "p95": f"{figures['p95_ms']:g} ms",
            "timeouts": m.timeouts,
            "errors": dict(sorted(m.errors.items())),
            "retries": m.retries,
            "tokens/h": figures["tokens_per_hour"],
            "cost/h": f"${figures['cost_per_hour']:.4f}",
            "budget left": budget,
            "breaker": self.breaker.describe(),
            "endpoints": {e.url: e.describe() for e in self.transport.endpoint_stats()},
            "applied": m.applied,
            "paced": m.paced,
            "invalid": m.invalid,
            "fallbacks": m.fallbacks,
            "prompt tokens/decision": (
                f"{figures['prompt_tokens_per_decision']} ("
                f"{figures['cached_tokens_per_decision']} cached, "
                f"{figures['prompt_tokens_per_decision'] - figures['cached_tokens_per_decision']}"
                f" new) + {figures['answer_tokens_per_decision']} answer"),
            "calls/agent, last hour": (round(figures["calls_last_hour"]
                                             / max(1, len(self.minds)), 1)),
            "main thread p99": f"{percentile(list(self.pipeline.main_ms), 0.99):.2f} ms",
            **({"prompt log": f"{self.prompt_log.path} ({self.prompt_log.lines} calls"
                + (f", {self.prompt_log.failed} not written" if self.prompt_log.failed
                   else "") + ")"} if self.prompt_log is not None else {}),
        }

    def capacity_per_s(self) -> float:
        """Requests a second the endpoints answer at this concurrency, by Little's law: the
        requests allowed in flight at once (``llm.max_concurrent``, over every endpoint)
        over the mean latency of recent answers (0.0 before any). With the queue full this
        is what the endpoints serve; below it, what they would if latency held."""
        latency = self.metrics.mean_latency_s()
        return self.transport.max_concurrent / latency if latency > 0 else 0.0

    def attention(self) -> dict[str, Any]:
        """How the agents' requests fare (issue 32): in flight and queued by urgency, the
        time they wait in the queue and until answered, by the line they were taken from,
        decisions a second against the endpoints' capacity, urgent requests that went stale
        (waited longer than about one answer's latency: answered in their routine turn),
        requests merged (a newer one replaced it in the queue) and dropped (never sent),
        and the main thread's time per request sent."""
        m = self.metrics
        figures = m.attention()
        urgent, routine = self.queue.depths()
        rate, capacity = m.decisions_per_s(), self.capacity_per_s()

        def line(name: str) -> str:
            if not figures[f"{name}_requests"]:
                return "none yet"
            return (f"queued p50 {figures[f'{name}_wait_p50_ms']:g} / p95 "
                    f"{figures[f'{name}_wait_p95_ms']:g} ms, answered p50 "
                    f"{figures[f'{name}_answered_p50_ms']:g} / p95 "
                    f"{figures[f'{name}_answered_p95_ms']:g} ms")

        return {
            "in flight": f"{self.in_flight} of {self.transport.max_concurrent}",
            "queue": f"{urgent} urgent, {routine} routine",
            "urgent": line("urgent"),
            "of which danger": (f"answered p50 {figures['danger_answered_p50_ms']:g} / p95 "
                                f"{figures['danger_answered_p95_ms']:g} ms"
                                if figures["danger_answered_p95_ms"] else "none yet"),
            "routine": line("routine"),
            "decisions/s": (f"{rate:.2f} of ~{capacity:.1f} the endpoints serve "
                            f"({rate / capacity:.0%})" if capacity else f"{rate:.2f}"),
            "urgent gone stale": (f"{self.queue.stale} ({self.queue.stale_danger} of "
                                  "danger)"),
            "merged": m.coalesced,
            "dropped": m.dropped,
            "main thread/request": (f"{figures['main_ms_per_request']:g} ms (p95 "
                                    f"{figures['main_ms_per_request_p95']:g})"),
        }

    def debug(self, agent_id: int) -> list[str]:
        """Lines for /debug: thinking state, last prompt size, last decision, last error,
        memory, and the last prompt itself."""
        mind = self.minds.get(agent_id)
        if mind is None:
            return ["not an LLM agent of this model (spawn one with /spawn agent brain=llm)"]
        status = self.state_of(agent_id)
        usage = mind.last_usage
        spent = (f"{usage.prompt_tokens} prompt tokens ({usage.cached_tokens} cached, "
                 f"{usage.prompt_tokens - usage.cached_tokens} new) + "
                 f"{usage.completion_tokens} answer"
                 + (f", ${usage.cost:.5f}" if usage.cost is not None else "")
                 if usage is not None else "no call answered yet")
        lines = [f"state: {status}",
                 f"model: {self.profile_name} profile ({self.identity.get('provider')} "
                 f"{self.identity.get('model')})",
                 f"last prompt: ~{mind.last_prompt_tokens} tokens; last call: {spent}; "
                 f"{mind.decisions} decisions, {mind.errors} errors"]
        lines.extend(self.pipeline.last_lines(mind, "error"))
        summary = self.memory.view_of(agent_id).summary()
        if summary:
            lines.append(f"memory: {summary}")
        if mind.next_ask_tick > self.world.tick:
            lines.append(f"asked to be asked again at t={mind.next_ask_tick} (ask_again_s)")
        if mind.last_prompt:
            agent = self.world.store.get(agent_id, c.Agent)
            rules = estimate_tokens(self.prompts.system_for(agent.personality))
            lines.append(f"last prompt (t={mind.asked_tick}), after the block every "
                         f"{agent.personality} agent shares (~{rules} tokens, cached by the "
                         "provider):")
            lines.extend(f"  {line}" for line in mind.last_prompt.splitlines())
        return [self.redact(line) for line in lines]

    def describe_entity(self, eid: int) -> list[str]:
        """The console's /debug seam (lines appear as ``llm: ...``)."""
        return self.debug(eid) if eid in self.minds else []

    # -- lifecycle ---------------------------------------------------------------------------

    def capture_minds(self, tick: int) -> MindCapture:
        """The memories of its agents as of now (the snapshot of ``tick``): taken on the
        loop thread, where they live, after the events handed over before (copies of small
        lists)."""
        world = self.world
        names = {eid: world.name_of(eid) for eid in sorted(self.minds)}
        capture = MindCapture(tick, names)
        brain = llm_brain(self.profile)

        def take() -> None:
            for eid, name in names.items():
                state = self.memory.state_of(eid)
                capture.put(eid, None if state is None else {
                    "agent": eid, "name": name, "brain": brain, "kind": "llm",
                    "state": {"memory": state}})

        self._in_memory(take)
        return capture

    def restore_minds(self, records: Mapping[int, Record],
                      warn: Callable[[str], None]) -> None:
        """Its agents' memories as a resumed or forked world saved them (as the session
        starts, before any work on the memories is handed to the loop thread)."""
        for eid in sorted(self.minds):
            record = records.get(eid)
            if record is None or record.get("kind") != "llm":
                continue
            try:
                self.memory.restore(eid, record["state"]["memory"])
            except Exception as exc:  # a damaged state: that agent starts afresh
                warn(f"the mind of agent {eid} ({self.world.name_of(eid)}) cannot be "
                     f"restored ({type(exc).__name__}: {exc}); it starts with an empty "
                     "memory")

    def stopped(self) -> None:
        """After the pipeline stopped: the requests still in flight cancelled, the
        transport closed if it is this kind's own."""
        with self._flying_lock:
            flying, self._flying = list(self._flying.values()), {}
            asking, self._interviews = list(self._interviews), set()
        for future in flying:
            future.cancel()
        for spoken in asking:
            spoken.cancel()
        if self._owns_transport:
            self.transport.close()


def _answer(decision: TextDecision, response: LLMResponse, *, cached: bool,
            profile: str) -> Answer:
    """An LLM decision as the pipeline takes it: the model profile and model, its usage,
    the raw answer and the model's "ask me again" hint travel with it for inspection (the
    core ignores them)."""
    return Answer(
        actions=decision.actions, thought=decision.thought, latency_s=response.latency_s,
        usage=response.usage, cached=cached,
        by={"profile": profile, "model": response.model, "usage": response.usage.to_dict(),
            "raw": response.text[:MAX_RAW_CHARS], "cached": cached,
            **({"ask_again_s": decision.ask_again_s} if decision.ask_again_s is not None
               else {})})
