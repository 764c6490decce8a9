"""The LLM manager: decides on the main thread which LLM agents should think, hands their
observations to the worker pool, and turns answers into bookkeeping and figures.

It is a ``TickObserver``: after every tick it reads the world (main thread only), and the
world changes only when a worker's ``plan`` input is applied at a tick boundary. Replay and
resume never build a manager, so they never call a model.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_world.agents.observation import observe
from agent_world.config import LLMConfig
from agent_world.core import components as c
from agent_world.core.inbox import Inbox
from agent_world.core.world import World
from agent_world.llm.breaker import CircuitBreaker
from agent_world.llm.budget import Budget
from agent_world.llm.cache import ResponseCache, cache_key
from agent_world.llm.decision import DecisionError, decide_from_text
from agent_world.llm.http import estimate_tokens
from agent_world.llm.memory import MemoryBook
from agent_world.llm.metrics import Metrics, percentile
from agent_world.llm.mind import APPLY_GRACE_TICKS, Mind, triggers
from agent_world.llm.promptlog import PromptLog
from agent_world.llm.prompts import PROMPT_VERSION, PromptBuilder, WorldFacts
from agent_world.llm.redact import Redactor
from agent_world.llm.requests import NORMAL, URGENT, Job, RequestQueue
from agent_world.llm.retry import ProviderPause, RetryPolicy
from agent_world.llm.worker import Outcome, Worker, plan_input
from agent_world.types import Clock, LLMProvider, LLMResponse, MonotonicClock, TickReport

__all__ = ["LLMManager", "ProviderFactory"]

ProviderFactory = Callable[[], LLMProvider]
"""Makes one provider; called once in each worker thread (one HTTP session per loop)."""

MEMORY_SAVE_TICKS = 600
TRIGGER_CHECK_TICKS = 5


class LLMManager:
    def __init__(self, cfg: LLMConfig, world: World, *, provider_factory: ProviderFactory,
                 identity: dict[str, Any], redactor: Redactor, clock: Clock | None = None,
                 memories: Path | None = None, report: Callable[[str], None] = print,
                 note: Callable[[str], None] = lambda _text: None,
                 prompt_log: Path | None = None) -> None:
        self.cfg = cfg
        self.world = world
        self.world_inbox: Inbox = world.inbox
        self.clock = clock or MonotonicClock()
        self.redact = redactor
        self.identity = identity
        self.report = report
        self.note = note
        self.memories_dir = memories
        self.prompt_log = PromptLog(prompt_log, redactor) if prompt_log is not None else None
        self.prompts = PromptBuilder(facts=WorldFacts.of(world), max_actions=cfg.plan_actions,
                                     temperature=cfg.temperature,
                                     max_tokens=cfg.max_tokens, seed=cfg.seed or None,
                                     structured=cfg.structured)
        self._ability_names: tuple[str, ...] = ()
        self.policy = RetryPolicy(max_retries=cfg.max_retries,
                                  retry_after_cap_s=cfg.retry_after_cap_s)
        self.pause = ProviderPause()
        self.breaker = CircuitBreaker(failures=cfg.breaker_failures,
                                      cooldown_s=cfg.breaker_cooldown_s, clock=self.clock)
        self.budget = Budget(tokens_per_hour=cfg.tokens_per_hour,
                             cost_per_hour=cfg.cost_per_hour, clock=self.clock)
        self.cache = ResponseCache(cfg.cache_size)
        self.metrics = Metrics(self.clock)
        self.queue = RequestQueue()
        self.outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self.concurrency = threading.BoundedSemaphore(cfg.max_concurrent)
        self.memory = MemoryBook(cfg.memory_window)
        self.minds: dict[int, Mind] = {}
        self.main_ms: deque[float] = deque(maxlen=1000)  # on_tick's cost on the main thread
        self._next_rid = 1
        self._available = True
        self._closed = False
        for eid, row in world.agents():
            if row[0].brain == "llm":
                self.minds[eid] = Mind(eid)
        self._new_minds = set(self.minds)  # considered at the next tick, whatever its slot
        if memories is not None:
            self.memory.load(memories, self.minds)
        self._factory = provider_factory
        self.workers = [Worker(self, i, provider_factory) for i in range(cfg.workers)]
        self._round = min(cfg.workers, cfg.max_concurrent)  # requests that can fly at once
        for w in self.workers:
            w.start()

    def __repr__(self) -> str:
        return (f"LLMManager({self.identity.get('provider')} {self.identity.get('model')}, "
                f"{len(self.minds)} agents)")

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
            if inp.type == "plan" and inp.source == "llm":
                self._applied(tick, inp.data)
        for event in report.events:
            kind = event.get("type")
            if kind == "spawn" and event.get("brain") == "llm":
                eid = int(event["agent"])
                if eid not in self.minds:
                    self.minds[eid] = Mind(eid)
                    self._new_minds.add(eid)
            elif kind == "death" and event.get("agent") in self.minds:
                eid = int(event["agent"])
                del self.minds[eid]
                self._new_minds.discard(eid)
                self.queue.cancel(eid)
        self.memory.on_events(tick, report.events, self.minds)
        while True:
            try:
                outcome = self.outcomes.get_nowait()
            except queue.Empty:
                break
            self._answered(tick, outcome)
        available = self._check_available()
        store = world.store
        for eid in sorted(self.minds):
            mind = self.minds[eid]
            # A new mind and an attack are looked at at once; the rest (what it sees and
            # hears, offers, the interval) in the agent's slot of every
            # TRIGGER_CHECK_TICKS: a fifth of the main thread's cost, for at most half a
            # second added to a model's 1-3 s.
            combat = store.try_get(eid, c.Combat)
            if combat is None:
                continue
            if eid in self._new_minds:
                self._new_minds.discard(eid)
            elif ((eid + tick) % TRIGGER_CHECK_TICKS
                  and combat.last_attacked <= mind.attacked_seen):
                continue
            if not world.alive(eid):
                continue
            self._consider(eid, mind, available)
        if self.memories_dir is not None and tick % MEMORY_SAVE_TICKS == 0:
            self.save_memories()

    def _consider(self, eid: int, mind: Mind, available: bool) -> None:
        tick = self.world.tick
        if mind.status == "applying" and tick - mind.answered_tick > APPLY_GRACE_TICKS:
            mind.status = "idle"
        reasons, urgent = triggers(self.world, mind, interval=self.cfg.think_interval_ticks)
        if mind.last_error and mind.status == "idle":
            reasons.append("correcting its last answer")
        if (not reasons or not available or mind.status == "applying"
                or self.queue.state_of(eid) == "in flight"):
            return  # at most one request per agent outstanding
        if mind.status == "queued" and not urgent:
            return  # a queued request is replaced only by a more pressing one
        if not urgent and self.queue.depth >= self._round:
            # A full round of work already waits: a prompt built now would be stale by the
            # time a worker takes it (and built in vain if a newer one replaced it).
            self.metrics.count("deferred")
            return
        if tick - mind.asked_tick < self.cfg.min_gap_ticks and not urgent:
            return
        self._ask(eid, mind, tuple(reasons), URGENT if urgent else NORMAL)

    def _sync_abilities(self) -> None:
        book = getattr(self.world, "abilities", None)
        catalog = [a for a in book.catalog() if "disabled" not in a] if book is not None else []
        names = tuple(a["name"] for a in catalog)
        if names != self._ability_names:
            self._ability_names = names
            self.prompts.set_abilities(catalog)

    def _ask(self, eid: int, mind: Mind, reasons: tuple[str, ...], priority: int) -> None:
        world = self.world
        self._sync_abilities()
        agent = world.store.get(eid, c.Agent)
        # After a "context too long" answer the next prompt goes without the memory, once.
        memory = {} if mind.trim_next else self.memory.of(eid).render(world.tick)
        mind.trim_next = False
        seen = observe(world, eid)
        prompt = self.prompts.user(
            personality=agent.personality, name=agent.name,
            observation=seen.prompt_view(mind.last_observation),
            memory=memory, correction=mind.last_error)
        key = cache_key(self.identity, self.prompts.request(prompt), PROMPT_VERSION)
        rid = self._next_rid
        hit = self.cache.get(key)
        if hit is not None and self._apply_cached(eid, mind, rid, reasons, hit):
            self.metrics.request()
        else:
            job = Job(rid=rid, agent=eid, tick=world.tick, priority=priority,
                      reasons=reasons, prompt=prompt, key=key)
            placed = self.queue.put(job, wake=False)  # woken after the tick (on_tick)
            if placed == "busy":
                return
            if placed == "replaced":
                self.metrics.count("coalesced")
            mind.status = "queued"
        self._next_rid += 1
        mind.rid = rid
        mind.asked_tick = world.tick
        mind.reasons = reasons
        mind.last_prompt_tokens = estimate_tokens(self.prompts.system + prompt)
        mind.last_prompt, mind.last_observation = prompt, seen

    def _apply_cached(self, eid: int, mind: Mind, rid: int, reasons: tuple[str, ...],
                      hit: LLMResponse) -> bool:
        try:
            decision = decide_from_text(hit.text, max_actions=self.cfg.plan_actions)
        except DecisionError:
            return False
        self.world_inbox.submit("plan", plan_input(eid, rid, self.world.tick, reasons,
                                                   decision, hit, cached=True), source="llm")
        mind.status = "applying"
        mind.answered_tick = self.world.tick
        return True

    def _applied(self, tick: int, data: Any) -> None:
        eid = data.get("agent")
        mind = self.minds.get(eid) if isinstance(eid, int) else None
        if mind is None:
            return
        rid = int(data.get("request", 0) or 0)
        mind.applied_rid = max(mind.applied_rid, rid)
        if rid >= mind.rid:
            mind.status = "acting"
        actions = ", ".join(_describe(a) for a in data.get("actions", []))
        thought = str(data.get("thought", ""))
        mind.last_decision = f"t={tick}: {actions}" + (f" — “{thought}”" if thought else "")
        mind.last_decision_tick = tick
        mind.last_error = ""
        mind.decisions += 1
        self.metrics.count("applied")
        name = self.world.name_of(eid)
        self.memory.note(eid, tick, f"I decided: {actions}" + (f" ({thought})" if thought
                                                                  else ""), "own decision")
        self.note(f"LLM      {name}#{eid} decides: {actions}"
                  + (f" — “{thought}”" if thought else ""))

    def _answered(self, tick: int, outcome: Outcome) -> None:
        mind = self.minds.get(outcome.agent)
        if mind is None or outcome.rid != mind.rid:
            return
        mind.answered_tick = tick
        if outcome.ok:
            if mind.applied_rid < outcome.rid:
                mind.status = "applying"
            return
        self.metrics.count("fallbacks")
        mind.status = "idle"
        if outcome.error_kind in ("budget", "breaker"):
            return
        mind.errors += 1
        mind.last_error_tick = tick
        mind.trim_next = outcome.too_long
        text = f"{outcome.error_kind}: {outcome.error}"
        if outcome.error_kind in ("schema", "length"):
            mind.last_error = outcome.error  # the model can fix its own mistakes
            self.memory.note(outcome.agent, tick, f"my answer was invalid: {outcome.error}",
                             "invalid answer")
        mind.notes.append(text)
        del mind.notes[:-3]
        self.note(f"LLM      {self.world.name_of(outcome.agent)}#{outcome.agent} falls back "
                  f"to its built-in brain: {text}")

    def _check_available(self) -> bool:
        """Breaker and budget; say so once when agents fall back, and once when back."""
        reason = ""
        if self.breaker.state == "stopped":
            reason = f"LLM calls stopped ({self.breaker.reason}); fix it and restart"
        elif not self.breaker.would_allow():
            reason = (f"LLM endpoint failing, circuit breaker open ({self.breaker.reason}); "
                      f"next try in {self.breaker.seconds_left():.0f} s")
        elif self.budget.exhausted():
            reason = (f"LLM budget for this hour is spent; it refills in "
                      f"{self.budget.refills_in() / 60:.0f} min")
        available = not reason
        if available != self._available:
            self._available = available
            if available:
                self.note("LLM available again: LLM agents think with it")
            else:
                self.report(f"{reason}. LLM agents use their built-in brains meanwhile.")
        return available

    # -- figures -----------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return self.queue.in_flight

    def thinking(self) -> int:
        """LLM agents waiting for an answer (queued or in flight)."""
        return self.queue.depth + self.queue.in_flight

    def stats(self) -> dict[str, Any]:
        m = self.metrics
        figures = m.figures()
        left = self.budget.left()
        budget = ", ".join(f"{v} {k}" for k, v in left.items() if v is not None) or "no limit"
        return {
            "model": f"{self.identity.get('provider')} {self.identity.get('model')}",
            "agents": len(self.minds),
            "requests": m.requests,
            "coalesced": m.coalesced,
            "deferred": m.deferred,
            "in flight": self.in_flight,
            "queue": self.queue.depth,
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
            "applied": m.applied,
            "invalid": m.invalid,
            "fallbacks": m.fallbacks,
            "prompt tokens/decision": figures["prompt_tokens_per_decision"],
            "main thread p99": f"{percentile(list(self.main_ms), 0.99):.2f} ms",
            **({"prompt log": f"{self.prompt_log.path} ({self.prompt_log.lines} calls"
                + (f", {self.prompt_log.failed} not written" if self.prompt_log.failed
                   else "") + ")"} if self.prompt_log is not None else {}),
        }

    def debug(self, agent_id: int) -> list[str]:
        """Lines for /debug: thinking state, last prompt size, last decision, last error,
        memory, and the last prompt itself."""
        mind = self.minds.get(agent_id)
        if mind is None:
            return ["not an LLM agent (spawn one with /spawn agent brain=llm)"]
        tick = self.world.tick
        state = self.queue.state_of(agent_id)
        if state is not None:
            status = (f"thinking ({state}, asked {tick - mind.asked_tick} ticks ago: "
                      f"{', '.join(mind.reasons)})")
        elif mind.status == "applying":
            status = "answer arrived; it applies at the next tick"
        elif mind.status == "acting":
            status = "acting on its LLM plan"
        elif not self._available:
            status = "LLM unavailable: built-in brain"
        else:
            status = "built-in brain until the next trigger"
        lines = [f"state: {status}",
                 f"last prompt: ~{mind.last_prompt_tokens} tokens; {mind.decisions} "
                 f"decisions, {mind.errors} errors"]
        if mind.last_decision:
            lines.append(f"last decision {mind.last_decision}")
        if mind.notes:
            lines.append(f"last error (t={mind.last_error_tick}): {mind.notes[-1]}")
        summary = self.memory.of(agent_id).summary()
        if summary:
            lines.append(f"memory: {summary}")
        if mind.last_prompt:
            rules = estimate_tokens(self.prompts.system)
            lines.append(f"last prompt (t={mind.asked_tick}), after the rules every agent "
                         f"shares (~{rules} tokens):")
            lines.extend(f"  {line}" for line in mind.last_prompt.splitlines())
        return [self.redact(line) for line in lines]

    def describe_entity(self, eid: int) -> list[str]:
        """The console's /debug seam (lines appear as ``llm: ...``)."""
        return self.debug(eid) if eid in self.minds else []

    def status_line(self) -> str:
        """The console status line's LLM part."""
        if not self._available:
            return "LLM off: built-in brains"
        return f"LLM {self.thinking()} thinking, {self.in_flight} in flight"

    # -- lifecycle ---------------------------------------------------------------------------

    def save_memories(self, *, wait: bool = False) -> None:
        if self.memories_dir is None:
            return
        names = {eid: self.world.name_of(eid) for eid in self.minds}
        self.memory.save(self.memories_dir, names, wait=wait)

    def close(self, timeout: float = 2.0) -> None:
        """Stop taking work; workers finish or are abandoned (daemon threads: a hung
        endpoint cannot hold up the shutdown). Answers that arrive later are dropped."""
        if self._closed:
            return
        self._closed = True
        self.queue.close()
        for w in self.workers:
            w.join(timeout / max(1, len(self.workers)))
        close = getattr(self._factory, "close", None)
        if callable(close):
            close()
        if self.memories_dir is not None:
            self.save_memories(wait=True)
        self.memory.close()


def _describe(action: Any) -> str:
    if not isinstance(action, dict):
        return str(action)
    args = action.get("args") or {}
    inner = ", ".join(f"{k}={v}" for k, v in args.items())
    return f"{action.get('name')}({inner})"
