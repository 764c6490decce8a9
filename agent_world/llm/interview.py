"""Interviews of LLM agents: the question put to the agent's own model (its profile), with
its memory and what it perceives now, answered as free text of bounded length.

The prompt is its own (``INTERVIEW_SYSTEM``): the agent speaks as itself, in the first
person, in a few plain sentences; it is not asked to decide, so no action comes of it. The
call runs on the model's transport like a decision and passes the same gates (budget,
breaker, figures); ``LLMAgents.interview`` hands it over without waiting.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from agent_world.decisions.interview import Question, Spoken, spoken_text
from agent_world.llm.gates import Gates, LLMUnavailable
from agent_world.llm.transport import Transport
from agent_world.types import LLMRequest, ProviderError

__all__ = ["INTERVIEW_SYSTEM", "ask_model", "interview_request"]

INTERVIEW_SYSTEM = (
    "You are {name}, an agent living in a small simulated world (personality: "
    "{personality}). Someone from outside the world is interviewing you. Answer the "
    "question in your own voice, in the first person, from what you perceive and remember "
    "(given below as JSON), honestly and briefly: at most three sentences of plain text. "
    "No JSON, no lists, no actions or stage directions.")
INTERVIEW_PROMPT = ("What you perceive now: {observation}\n{memory}"
                    "The interviewer asks: \"{question}\"\nYour answer:")


def interview_request(*, name: str, personality: str, observation: dict[str, Any],
                      memory: dict[str, Any], question: Question, temperature: float,
                      seed: int | None) -> LLMRequest:
    """The model call that answers ``question`` as agent ``name``."""
    mem = f"What you remember: {orjson.dumps(memory).decode()}\n" if memory else ""
    prompt = INTERVIEW_PROMPT.format(observation=orjson.dumps(observation).decode(),
                                     memory=mem, question=question.text)
    return LLMRequest(system=INTERVIEW_SYSTEM.format(name=name, personality=personality),
                      prompt=prompt, temperature=temperature,
                      max_tokens=question.max_tokens, seed=seed)


async def ask_model(transport: Transport, gates: Gates, request: LLMRequest,
                    question: Question, by: dict[str, Any]) -> Spoken:
    """The model's answer (on the transport's loop thread), or why there is none."""
    started = time.perf_counter()
    try:
        gates.admit()
    except LLMUnavailable as exc:
        return Spoken(text=None, error=f"{exc.kind}: {exc}", by=by)
    deadline = transport.clock.now() + question.deadline_s

    def on_retry(exc: ProviderError, _wait: float) -> None:
        gates.metrics.retry(exc.kind)
        gates.metrics.call()

    gates.metrics.call()
    try:
        response = await transport.complete(request, deadline=deadline, on_retry=on_retry)
    except asyncio.CancelledError:  # the transport closes: nothing to say of the endpoint
        gates.breaker.release()
        raise
    except ProviderError as exc:
        message = gates.failed(exc)
        return Spoken(text=None, error=f"{exc.kind}: {message}", by=by,
                      latency_s=time.perf_counter() - started)
    response = gates.answered(response)
    gates.succeeded()
    text = spoken_text(gates.redact(response.text), question.max_chars)
    if not text:
        return Spoken(text=None, error="empty: the model answered nothing", by=by,
                      latency_s=response.latency_s, usage=response.usage)
    return Spoken(text=text, by={**by, "model": response.model or by.get("model", "")},
                  latency_s=response.latency_s, usage=response.usage)
