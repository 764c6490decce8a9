"""A survey of every LLM agent while they keep deciding (issue 33 item 4): 500 LLM agents
against the fake batched model server (``tests/batched_server.py``, in a process of its own:
fixed slots, latency that grows with the batch, a queue, 429 past it), paced at 10 Hz.

Two runs of the same world, the same seed and the same length: one without a survey, and
one where, after the warm-up (every agent's first thought), one survey asks all 500 agents
the same question. Each reports the world's tick p99 (the loop's own tick, and the tick
with the between-ticks work: the decision pipelines and the Talk round), how long urgent
decisions waited (an agent marked attacked every ``URGENT_EVERY`` ticks: from queued to
handed to the model, and to answered), the tokens spent; the survey run adds the time to
collect all answers, answers per second beside the server's capacity, and the most
interviews in flight at once (never above ``talk.in_flight``).

It also times the Talk owner's round with a full waiting list (``talk.max_pending``
questions to LLM agents that cannot go out: the model busy), the cost issue 33's author
estimated at ~2 ms a tick.

    python -m bench --only survey
    python bench/survey_bench.py --round     # the round alone (PYTHONPATH=an older tree too)
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import orjson

from agent_world.app import Session
from agent_world.config import Config
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.decisions.answerer import Answer, Fault, Reply
from agent_world.decisions.interview import Question, Said, Spoken
from agent_world.decisions.metrics import percentile
from agent_world.decisions.requests import URGENT, Job
from agent_world.talk import Filter
from agent_world.types import TickReport
from bench.machine import load_average
from bench.scenario import side_for
from tests.llm_server import FakeLLMServer

__all__ = ["measure_round", "measure_survey"]

AGENTS = 500
WARMUP_S = 40.0  # every agent's first thought has been answered by then (about 25 s)
MAX_SURVEY_S = 600.0
URGENT_EVERY = 5  # ticks between two agents marked attacked (an urgent decision each)
IN_FLIGHT = 8  # talk.in_flight for the run (the default, 2, takes four times as long)
TOKENS_PER_HOUR = 200_000_000
SLOTS = 32
ROOT = Path(__file__).resolve().parent.parent


def _start_server() -> tuple[subprocess.Popen[str], str]:
    """The batched fake model in a process of its own (it must not share this GIL)."""
    child = subprocess.Popen([sys.executable, "-m", "tests.batched_server", "--slots",
                              str(SLOTS)], cwd=ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    url = child.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        child.kill()
        raise RuntimeError(f"the batched server did not start (said {url!r})")
    return child, url


def _stop_server(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = child.communicate("", timeout=60)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return orjson.loads(lines[-1]) if lines else {}


def _config(url: str, logs: Path) -> Config:
    side = side_for(AGENTS)
    return Config().replace(
        world={"size": [side, side], "starting_agents": AGENTS, "seed": 7},
        persistence={"enabled": False}, paths={"logs": str(logs)}, log={"echo": False},
        llm={"provider": "openai", "base_url": url, "model": "fake-batched",
             "api_key_env": "", "agents": AGENTS, "max_concurrent": SLOTS,
             "request_timeout_s": 60.0, "tokens_per_hour": TOKENS_PER_HOUR,
             "budget_burst_minutes": 60, "breaker_failures": 1000},
        talk={"in_flight": IN_FLIGHT, "max_pending": 1000})


class _Timed:
    """A request's reply that notes when the answer came, otherwise the reply itself."""

    def __init__(self, reply: Reply, on_answer: Callable[[], None]) -> None:
        self._reply = reply
        self._on_answer = on_answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reply, name)

    def __call__(self, result: Answer | Fault) -> bool:
        self._on_answer()
        return self._reply(result)


class _Watch:
    """What the bench watches in one run: urgent waits, interview tokens and concurrency,
    the full main-thread cost of each tick."""

    def __init__(self, session: Session) -> None:
        self.session = session
        llm = session.llm
        assert llm is not None
        self.llm = llm
        self.measuring = False
        self.queued_at: dict[int, float] = {}
        self.queue_wait: list[float] = []  # urgent: queued -> handed to the model
        self.answer_wait: list[float] = []  # urgent: queued -> answered
        self.ticks: list[float] = []  # the loop's tick (world + observers), ms
        self.full: list[float] = []  # the tick with the between-ticks work, ms
        self.interview_tokens = 0
        self.interviews_peak = 0
        self.pumps: list[float] = []  # the Talk owner's rounds (main thread), ms
        self._wrap()

    def _wrap(self) -> None:
        llm, queue = self.llm, self.llm.queue
        put, answer, interview = queue.put, llm.answer, llm.interview

        def put_timed(job: Job, *, wake: bool = True) -> str:
            placed = put(job, wake=wake)
            if job.priority == URGENT and placed != "busy":
                self.queued_at.setdefault(job.agent, time.perf_counter())
            return placed

        def answer_timed(job: Job, reply: Reply) -> None:
            began = self.queued_at.pop(job.agent, None) if job.priority == URGENT else None
            if began is None or not self.measuring:
                answer(job, reply)
                return
            self.queue_wait.append(time.perf_counter() - began)

            answer(job, cast(Reply, _Timed(reply, lambda: self.answer_wait.append(
                time.perf_counter() - began))))

        def interview_counted(question: Question, said: Said) -> None:
            def heard(spoken: Spoken) -> None:
                if spoken.usage is not None:
                    self.interview_tokens += spoken.usage.total
                said(spoken)
            interview(question, heard)
            self.interviews_peak = max(self.interviews_peak, len(llm._interviews))

        talk = self.session.talk
        pump = talk.pump

        def pump_timed() -> None:
            began = time.perf_counter()
            pump()
            if self.measuring:
                self.pumps.append((time.perf_counter() - began) * 1000)

        talk.pump = pump_timed  # type: ignore[method-assign]
        queue.put = put_timed  # type: ignore[method-assign]
        llm.answer = answer_timed  # type: ignore[method-assign]
        llm.interview = interview_counted  # type: ignore[method-assign]
        loop = self.session.loop
        between = loop.between_ticks
        assert between is not None

        def between_timed() -> None:
            began = time.perf_counter()
            between()
            if self.measuring:
                self.ticks.append(loop.last_tick_seconds * 1000)
                self.full.append((loop.last_tick_seconds + time.perf_counter() - began)
                                 * 1000)
        loop.between_ticks = between_timed

    def figures(self) -> dict[str, Any]:
        ms = [w * 1000 for w in self.queue_wait]
        answered = [w * 1000 for w in self.answer_wait]
        return {"ticks": len(self.ticks),
                "tick_p50_ms": round(percentile(self.ticks, 0.5), 2),
                "tick_p99_ms": round(percentile(self.ticks, 0.99), 2),
                "tick_with_between_p99_ms": round(percentile(self.full, 0.99), 2),
                "tick_with_between_max_ms": round(max(self.full, default=0.0), 2),
                "talk_rounds": len(self.pumps),
                "talk_round_p99_ms": round(percentile(self.pumps, 0.99), 3),
                "talk_round_max_ms": round(max(self.pumps, default=0.0), 2),
                "talk_ms_total": round(sum(self.pumps), 1),
                "urgent_decisions": len(ms),
                "urgent_queue_wait_p50_ms": round(percentile(ms, 0.5), 1),
                "urgent_queue_wait_p95_ms": round(percentile(ms, 0.95), 1),
                "urgent_answered_p95_ms": round(percentile(answered, 0.95), 1)}


def _run(url: str, logs: Path, *, survey: bool, measure_s: float | None,
         log: Callable[[str], None]) -> dict[str, Any]:
    """One paced run: warm up, then measure ``measure_s`` seconds, or (``survey``) until
    the survey has every answer."""
    config = _config(url, logs)
    session = Session(config, World.create(config))
    watch = _Watch(session)
    llm = watch.llm
    talk = session.talk
    rng = random.Random(33)
    warm_ticks = int(WARMUP_S * 10)
    state: dict[str, Any] = {}
    spent_at: list[int] = []

    class Driver:
        def on_tick(self, report: TickReport) -> None:
            world = session.world
            tick = world.tick
            if tick % URGENT_EVERY == 0 and tick > warm_ticks // 2:
                # Marked attacked: the agent's next consideration is urgent ("attacked").
                eid = rng.choice([e for e, _row in world.agents()][:AGENTS])
                world.store.get(eid, c.Combat).last_attacked = tick
            if tick == warm_ticks:
                watch.measuring = True
                spent_at.append(llm.budget.spent()[0])
                state["began"] = time.perf_counter()
                state["tick0"] = tick
                if survey:
                    state["survey"] = talk.survey("What do you want most right now?",
                                                  Filter.parse({"brain": "llm"}))
                    log(f"survey: asking {len(state['survey'].rows)} agents at tick {tick}")
            if "began" not in state:
                return
            elapsed = time.perf_counter() - state["began"]
            done = state["survey"].done if survey else elapsed >= (measure_s or 0)
            if done or elapsed > MAX_SURVEY_S:
                state["elapsed"] = elapsed
                session.loop.stop()

    session.loop.observers.append(Driver())
    load_before = load_average()
    try:
        asyncio.run(session.loop.run(paced=True))
        wall = state.get("elapsed", 0.0)
        tokens = llm.budget.spent()[0] - (spent_at[0] if spent_at else 0)
        out: dict[str, Any] = {**watch.figures(), "measured_s": round(wall, 1),
                               "tokens_spent": tokens,
                               "decisions_applied": llm.stats()["applied"],
                               "overruns": session.loop.overruns,
                               "skipped_ticks": session.loop.skipped}
        if survey:
            s = state["survey"]
            counts = s.counts()
            out.update({"survey_agents": counts["agents"], "answered": counts["answered"],
                        "failed": counts["failed"], "waiting": counts["waiting"],
                        "collect_s": round(wall, 1),
                        "answers_per_s": round(counts["answered"] / wall, 2) if wall else 0,
                        "interview_tokens": watch.interview_tokens,
                        "interviews_in_flight_peak": watch.interviews_peak,
                        "talk_in_flight": config.talk.in_flight,
                        "failures": sorted({r.error.split(":")[0] for r in s.rows.values()
                                            if r.error})})
        out["load_average"] = [load_before, load_average()]
        out["budget_tokens_per_hour"] = TOKENS_PER_HOUR
        out["budget_exhausted"] = llm.budget.exhausted()
        return out
    finally:
        session.close()


def measure_round(*, pending: int = 1000, pumps: int = 300) -> dict[str, Any]:
    """The Talk round (``Talk.pump``) with ``pending`` questions to LLM agents that cannot
    go out (no room: the model is busy with decisions), as every tick would run it."""
    server = FakeLLMServer().start()
    with tempfile.TemporaryDirectory(prefix="bench-talk-") as tmp:
        side = side_for(pending)
        config = Config().replace(
            world={"size": [side, side], "starting_agents": pending, "seed": 3},
            persistence={"enabled": False}, paths={"logs": str(Path(tmp) / "logs")},
            log={"echo": False}, talk={"max_pending": pending},
            llm={"provider": "openai", "base_url": server.base_url, "model": "m",
                 "api_key_env": "", "agents": pending, "tokens_per_hour": 0})
        session = Session(config, World.create(config))
        try:
            llm = session.llm
            assert llm is not None
            llm.interview_room = lambda: 0  # type: ignore[method-assign]
            session.talk.survey("how are you?", Filter())
            times = []
            for _ in range(pumps):
                began = time.perf_counter()
                session.talk.pump()
                times.append((time.perf_counter() - began) * 1000)
            waiting = session.talk.waiting  # a deque before the lanes (issue 33 item 4)
            return {"waiting": waiting if isinstance(waiting, int) else len(waiting),
                    "pumps": pumps,
                    "round_p50_ms": round(percentile(times, 0.5), 4),
                    "round_p99_ms": round(percentile(times, 0.99), 4)}
        finally:
            session.close()
            server.stop()


def measure_survey(*, log: Callable[[str], None] = print) -> dict[str, Any]:
    os.environ.pop("OPENROUTER_API_KEY", None)
    out: dict[str, Any] = {"agents": AGENTS, "slots": SLOTS, "urgent_every_ticks": URGENT_EVERY}
    out["round"] = measure_round()
    log(f"Talk round with {out['round']['waiting']} waiting: p50 "
        f"{out['round']['round_p50_ms']} ms, p99 {out['round']['round_p99_ms']} ms")
    with tempfile.TemporaryDirectory(prefix="bench-survey-") as tmp:
        child, url = _start_server()
        try:
            log(f"survey: {AGENTS} LLM agents, with a survey of all of them after "
                f"{WARMUP_S:g} s")
            out["with_survey"] = with_survey = _run(url, Path(tmp) / "a", survey=True,
                                                    measure_s=None, log=log)
            log(f"  collected {with_survey['answered']} answers in "
                f"{with_survey['collect_s']} s ({with_survey['answers_per_s']}/s)")
        finally:
            out["server_with_survey"] = _stop_server(child)
        child, url = _start_server()
        try:
            log(f"survey: the same world without a survey, {with_survey['measured_s']} s")
            out["without_survey"] = _run(url, Path(tmp) / "b", survey=False,
                                         measure_s=with_survey["measured_s"], log=log)
        finally:
            out["server_without_survey"] = _stop_server(child)
    server = out["server_with_survey"]
    out["server_capacity_per_s"] = server.get("capacity_per_s")
    out["server_served_per_s"] = round(server.get("served", 0) / server["elapsed_s"], 2) \
        if server.get("elapsed_s") else None
    return out


if __name__ == "__main__":
    # --round: the round alone (runs against an older tree too, with PYTHONPATH set to it)
    figures = measure_round() if sys.argv[1:] == ["--round"] else measure_survey()
    print(orjson.dumps(figures, option=orjson.OPT_INDENT_2).decode())
