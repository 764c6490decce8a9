"""LLM worker threads: each runs its own asyncio loop with its own provider (and so one HTTP
session per loop), takes jobs from the request queue and hands back an ``Outcome``. A valid
decision goes to the world only as a ``plan`` input through the thread-safe inbox; nothing
here touches world state."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import threading
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_world.contract.answer import DecisionError, TextDecision, decide_from_text
from agent_world.contract.plan import PlanInput
from agent_world.llm.gates import LLMUnavailable
from agent_world.llm.retry import call_with_retries
from agent_world.thinking.requests import Job, Outcome
from agent_world.types import LLMProvider, LLMRequest, LLMResponse, ProviderError

if TYPE_CHECKING:
    from agent_world.llm.manager import LLMManager

__all__ = ["MAX_RAW_CHARS", "Worker", "plan_input"]

MAX_RAW_CHARS = 2000


class InvalidAnswer(Exception):
    def __init__(self, kind: str, message: str, response: LLMResponse) -> None:
        super().__init__(message)
        self.kind = kind
        self.response = response


def plan_input(job_agent: int, rid: int, asked_tick: int, reasons: tuple[str, ...],
               decision: TextDecision, response: LLMResponse, *, cached: bool) -> PlanInput:
    """An LLM decision as the world takes it: the model, its usage, the raw answer and the
    model's "ask me again" hint travel with it for inspection (the core ignores them)."""
    return PlanInput(
        agent=job_agent, actions=decision.actions, source="llm", thought=decision.thought,
        request=rid, reasons=reasons, latency_s=response.latency_s, asked_tick=asked_tick,
        by={"model": response.model, "usage": response.usage.to_dict(),
            "raw": response.text[:MAX_RAW_CHARS], "cached": cached,
            **({"ask_again_s": decision.ask_again_s} if decision.ask_again_s is not None
               else {})})


class Worker(threading.Thread):
    def __init__(self, manager: LLMManager, index: int,
                 make_provider: Callable[[], LLMProvider]) -> None:
        super().__init__(name=f"llm-worker-{index}", daemon=True)
        self.manager = manager
        self.make_provider = make_provider
        self.rng = random.Random()  # backoff jitter only: never reaches the world

    def run(self) -> None:
        m = self.manager
        loop = asyncio.new_event_loop()
        provider: LLMProvider | None = None
        try:
            while True:
                job = m.queue.get()
                if job is None:
                    return
                try:
                    if provider is None:
                        provider = self.make_provider()
                    with m.concurrency:
                        outcome = loop.run_until_complete(self.process(provider, job))
                except ProviderError as exc:  # the provider could not even be made
                    m.gates.breaker.stop(f"{exc.kind}: {m.redact(str(exc))}")
                    outcome = self.failed(job, exc)
                except Exception:  # a bug: say so loudly, count it, keep the worker alive
                    m.metrics.error("internal")
                    m.report(m.redact(f"LLM worker bug (the agent falls back; please report "
                                      f"it):\n{traceback.format_exc()}"))
                    outcome = Outcome(rid=job.rid, agent=job.agent, ok=False,
                                      error_kind="internal", error="internal error")
                finally:
                    m.queue.done(job.agent)
                m.outcomes.put(outcome)
        finally:
            if provider is not None:
                loop.run_until_complete(provider.aclose())
            loop.close()

    # -- one job -----------------------------------------------------------------------------

    async def process(self, provider: LLMProvider, job: Job) -> Outcome:
        m = self.manager
        try:
            m.gates.admit()
        except LLMUnavailable as exc:
            return Outcome(rid=job.rid, agent=job.agent, ok=False, error_kind=exc.kind,
                           error=str(exc))
        m.metrics.request()
        flying = m.cache.claim(job.key)
        if flying is not None:  # the same call is in flight: share its answer
            shared = await asyncio.wrap_future(flying)
            if shared is not None:
                m.gates.succeeded()
                decision = decide_from_text(shared.text, max_actions=m.cfg.plan_actions)
                return self.deliver(job, decision, shared, cached=True)
        try:
            response, decision = await self.ask(provider, job)
        except ProviderError as exc:
            if flying is None:
                m.cache.release(job.key, None)
            return self.failed(job, exc)
        except InvalidAnswer as exc:
            if flying is None:
                m.cache.release(job.key, None)
            m.gates.succeeded()  # the endpoint works; the model erred
            m.metrics.error(exc.kind)
            self.log(job, exc.response, error=f"{exc.kind}: {exc}")
            return Outcome(rid=job.rid, agent=job.agent, ok=False, error_kind=exc.kind,
                           error=m.redact(str(exc)), raw=m.redact(exc.response.text[:300]),
                           usage=exc.response.usage, latency_s=exc.response.latency_s)
        m.gates.succeeded()
        if flying is None:
            m.cache.put(job.key, response)
            m.cache.release(job.key, response)
        return self.deliver(job, decision, response, cached=False)

    async def ask(self, provider: LLMProvider, job: Job) -> tuple[LLMResponse, TextDecision]:
        """Call (with transport retries inside one deadline), then validate; one more try
        for a malformed, empty, cut-off or schema-breaking answer."""
        m = self.manager
        request: LLMRequest = job.payload
        deadline = m.clock.now() + m.cfg.request_timeout_s
        second_chance = True

        def on_retry(exc: ProviderError, _wait: float) -> None:
            m.metrics.retry(exc.kind)
            m.metrics.call()

        while True:
            m.metrics.call()
            try:
                response = await call_with_retries(
                    provider, request, deadline=deadline, clock=m.clock, policy=m.policy,
                    rng=self.rng, pause=m.pause, on_retry=on_retry)
            except ProviderError as exc:
                if (exc.kind in ("malformed", "empty") and second_chance
                        and m.clock.now() < deadline):
                    second_chance = False
                    m.metrics.retry(exc.kind)
                    continue
                raise
            response = m.gates.answered(response)
            try:
                if response.finish_reason == "length":
                    raise InvalidAnswer("length", "the answer was cut off at max_tokens "
                                        "before the JSON was complete; keep the thought "
                                        "short", response)
                try:
                    return response, decide_from_text(response.text,
                                                      max_actions=m.cfg.plan_actions)
                except DecisionError as exc:
                    raise InvalidAnswer("schema", str(exc), response) from None
            except InvalidAnswer as exc:
                if not second_chance or m.clock.now() >= deadline:
                    raise
                second_chance = False
                m.metrics.retry(exc.kind)
                request = dataclasses.replace(
                    request, temperature=0.0,
                    max_tokens=request.max_tokens * 2 if exc.kind == "length"
                    else request.max_tokens)

    def log(self, job: Job, response: LLMResponse | None, *, error: str = "",
            cached: bool = False) -> None:
        """The call in the prompt log (``llm.log_prompts``), if one is kept."""
        log = self.manager.prompt_log
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

    def deliver(self, job: Job, decision: TextDecision, response: LLMResponse, *,
                cached: bool) -> Outcome:
        m = self.manager
        self.log(job, response, cached=cached)
        plan_input(job.agent, job.rid, job.tick, job.reasons, decision, response,
                   cached=cached).submit(m.world_inbox)
        return Outcome(rid=job.rid, agent=job.agent, ok=True, decision=decision.describe(),
                       thought=decision.thought, usage=response.usage,
                       latency_s=response.latency_s, cached=cached)

    def failed(self, job: Job, exc: ProviderError) -> Outcome:
        message = self.manager.gates.failed(exc)
        self.log(job, None, error=f"{exc.kind}: {message}")
        too_long = exc.kind == "bad_request" and (
            exc.status == 413 or "context" in message.lower() or "too long" in message.lower())
        return Outcome(rid=job.rid, agent=job.agent, ok=False, error_kind=exc.kind,
                       error=message, too_long=too_long)
