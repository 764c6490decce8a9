"""What one kind of brain adds to the decision pipeline: an answerer.

The pipeline (``pipeline.py``) decides when an agent asks and what becomes of the answer; an
answerer is told a request (a ``Job``: the agent, the tick, the reasons and what the brain
decides from) and answers it with an ``Answer`` (actions, and who answered how) or a
``Fault`` (why not), through the ``Reply`` it is handed. It may answer before ``answer``
returns (users' brains: they run on the pipeline's worker threads) or later, from wherever
the answer arrives (the LLM's transport thread, a remote agent's client over the network):
the pipeline neither knows nor asks which. A reply that comes after the request was given
up at its deadline is dropped (``Reply`` returns False); an answerer that answers later is
told (``abandon``) so it can stop working on it.

The rest of the protocol is what a kind keeps of its own between requests: the events it
watches (a memory, the hooks a user's brain is due), a decision or a fault that reached
its agent, the worker threads' own resources. ``Answering`` gives each hook its do-nothing
default and shows a kind's pipeline (minds, queue, figures) on the kind's own object, the
one the session, the console and the web server hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agent_world.core.actions import Action
from agent_world.decisions.metrics import Metrics
from agent_world.decisions.mind import Mind
from agent_world.decisions.requests import Job, Outcome, RequestQueue
from agent_world.types import Clock, LLMUsage, MonotonicClock, TickReport

if TYPE_CHECKING:
    from agent_world.decisions.pipeline import Pipeline

__all__ = ["Answer", "Answerer", "Answering", "Fault", "Pace", "Reply"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pace:
    """How often a kind's agents ask and how many requests are answered at once.

    ``interval``: ticks between unprompted decisions; ``min_gap``: the fewest ticks between
    two asks of one agent (but urgent ones); ``round_size``: requests answerable at once
    (more queued would be stale by the time one is taken); ``workers``: the pipeline's
    threads calling ``answer`` (0: it is called on the main thread after each tick, for
    an answerer that only sends the request on); ``per_agent_hour`` and ``per_hour``: the
    unprompted decisions allowed per agent and in all per hour of world time (0: no cap).
    """

    interval: int
    min_gap: int
    round_size: int
    workers: int
    per_agent_hour: float = 0
    per_hour: float = 0

    def __post_init__(self) -> None:
        for name in ("interval", "min_gap", "round_size", "workers"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """A valid decision: the actions (checked already), the brain's thought, how long it
    took, and ``by``: who answered and how, kept with the plan input in the event log."""

    actions: Sequence[Action]
    thought: str
    latency_s: float
    by: Mapping[str, Any] = field(default_factory=dict)
    usage: LLMUsage | None = None  # tokens spent on it, where a model answered
    cached: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """No decision: ``kind`` names the failure (``timeout``, ``invalid``, ``exception``, a
    provider's error kind ...), ``error`` says it for people. ``where`` names what a worker
    is stuck in when the request is given up at its deadline (its report line)."""

    kind: str
    error: str
    latency_s: float = 0.0
    usage: LLMUsage | None = None
    raw: str = ""
    too_long: bool = False  # the model's server said the prompt is too long
    where: str = ""


class Reply(Protocol):
    """One request's way back to the pipeline (any thread; the first reply counts)."""

    job: Job
    started: float  # time.perf_counter() when the request went to the answerer

    @property
    def open(self) -> bool:
        """Whether an answer is still awaited (not answered, given up or withdrawn)."""

    def __call__(self, result: Answer | Fault) -> bool:
        """Answer the request; False if it is no longer open (the result is dropped)."""

    def withdraw(self) -> None:
        """No answer will come and nothing is to be counted (the agent left the kind)."""


class Answerer(Protocol):
    """One kind of brain, as the pipeline calls it."""

    source: str  # its plan inputs' and decision faults' source
    label: str  # its world-log lines start with it
    brains: frozenset[str]  # the agents' brains it answers for (others may join: ``serve``)
    pace: Pace
    clock: Clock
    own_metrics: Metrics | None  # figures it shares with others (the LLM's gates), or None
    prepares_late: bool  # with ``pace.workers`` 0: ``prepare`` as the request goes out

    def bind(self, pipeline: Pipeline) -> None:
        """The pipeline that asks this answerer (once, when the pipeline is made)."""

    def prepare(self, eid: int, mind: Mind, rid: int, reasons: tuple[str, ...],
                priority: int) -> Job:
        """The request for agent ``eid`` (main thread). Called when the agent asks, or, for
        an answerer that ``prepares_late``, when its request leaves the queue to be sent
        (with the rid, reasons and urgency of the ask)."""

    def answer(self, job: Job, reply: Reply) -> None:
        """Answer ``job`` through ``reply``, now or later (a worker thread, or the main
        thread when ``pace.workers`` is 0)."""

    def answer_all(self, calls: Sequence[tuple[Job, Reply]]) -> None:
        """``answer`` each job of a round handed out together after a tick (main thread,
        ``pace.workers`` 0); an answerer may hand them on together."""

    def late(self, job: Job, waited_s: float) -> Fault:
        """The fault of a request given up at its deadline (``Job.deadline_s``)."""

    def abandon(self, job: Job) -> None:
        """A request answered from elsewhere was given up at its deadline or withdrawn (its
        agent died or left the kind): stop working on it (main thread; a reply that still
        comes is dropped)."""

    def unavailable(self) -> str:
        """Why no request can be made now ('' when they can)."""

    def on_events(self, tick: int, report: TickReport) -> None:
        """After the minds were updated for spawns and deaths, before triggers run."""

    def on_decided(self, eid: int, tick: int, actions: str, thought: str) -> None:
        """A plan of this kind was applied to agent ``eid``."""

    def on_failed(self, tick: int, outcome: Outcome, mind: Mind) -> bool:
        """A request of agent ``outcome.agent`` failed (it falls back to its built-in
        brain); whether the failure gets a world-log line."""

    def between_jobs(self) -> None:
        """On a worker thread, before it waits for its next request."""

    def thread_done(self) -> None:
        """On a worker thread that stops: release what the thread holds."""

    def stopped(self) -> None:
        """After the pipeline stopped its workers: release the kind's own resources."""


class Answering:
    """A kind's object: the answerer hooks' defaults, and its pipeline's figures in view."""

    source = "thinking"
    label = "brain"
    own_metrics: Metrics | None = None
    prepares_late = False
    pipeline: Pipeline

    def __init__(self, *, pace: Pace, brains: frozenset[str] = frozenset(),
                 clock: Clock | None = None) -> None:
        self.pace = pace
        self.brains = brains
        self.clock: Clock = clock or MonotonicClock()

    def bind(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    def answer(self, job: Job, reply: Reply) -> None:
        raise NotImplementedError(f"{type(self).__name__} answers no request")

    def answer_all(self, calls: Sequence[tuple[Job, Reply]]) -> None:
        for job, reply in calls:
            self.answer(job, reply)

    def late(self, job: Job, waited_s: float) -> Fault:
        return Fault(kind="timeout", error=f"no answer within {waited_s * 1000:.0f} ms",
                     latency_s=waited_s)

    def abandon(self, job: Job) -> None:
        pass

    def unavailable(self) -> str:
        return ""

    def on_events(self, tick: int, report: TickReport) -> None:
        pass

    def on_decided(self, eid: int, tick: int, actions: str, thought: str) -> None:
        pass

    def on_failed(self, tick: int, outcome: Outcome, mind: Mind) -> bool:
        return True

    def between_jobs(self) -> None:
        pass

    def thread_done(self) -> None:
        pass

    def stopped(self) -> None:
        pass

    # -- the pipeline, seen from the kind's object ---------------------------------------------

    @property
    def minds(self) -> dict[int, Mind]:
        return self.pipeline.minds

    @property
    def queue(self) -> RequestQueue:
        return self.pipeline.queue

    @property
    def metrics(self) -> Metrics:
        return self.pipeline.metrics

    @property
    def in_flight(self) -> int:
        return self.pipeline.in_flight

    def thinking(self) -> int:
        """Agents waiting for an answer (queued or in flight)."""
        return self.pipeline.thinking()

    def state_of(self, agent_id: int) -> str:
        return self.pipeline.state_of(agent_id)

    def status_line(self) -> str:
        return self.pipeline.status_line()

    def close(self, timeout: float = 2.0) -> None:
        """Stop asking: the pipeline's workers finish or are abandoned (daemon threads), then
        the kind releases what it holds (``stopped``)."""
        self.pipeline.close(timeout)
