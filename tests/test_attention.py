"""Attention when the model cannot answer every agent (issue 32 item 4): urgent requests go
first, routine ones keep a share so none starves, and the bounds the request queue
documents hold, counted in requests taken (never in time)."""

from __future__ import annotations

import math
import random

from agent_world.core import components as c
from agent_world.core.actions import Action
from agent_world.core.world import World
from agent_world.decisions.answerer import Answer, Answering, Pace, Reply
from agent_world.decisions.mind import Mind
from agent_world.decisions.pipeline import TRIGGER_CHECK_TICKS, Pipeline
from agent_world.decisions.requests import NORMAL, ROUTINE_EVERY, URGENT, Job, RequestQueue
from tests.helpers import add_agent, small_world


def _job(rid: int, agent: int, priority: int = NORMAL, why: str = "r") -> Job:
    return Job(rid=rid, agent=agent, tick=0, priority=priority, reasons=(why,), payload=None)


def _urgent_bound(q: int) -> int:
    """Gets within which an urgent request with ``q - 1`` urgent ones ahead is taken."""
    return q + math.ceil(q / (ROUTINE_EVERY - 1))


# -- the queue ---------------------------------------------------------------------------------


def test_urgent_work_goes_first_and_routine_work_keeps_its_share() -> None:
    q = RequestQueue()
    for agent in range(10):
        q.put(_job(agent + 1, agent))
    rid = 100
    lines = []
    for _ in range(12):  # urgent work never runs out: a new urgent request after each get
        rid += 1
        q.put(_job(rid, 1000 + rid, URGENT))
        job = q.get(0)
        assert job is not None
        lines.append(job.priority)
        q.done(job.agent)
    share = [URGENT] * (ROUTINE_EVERY - 1) + [NORMAL]
    assert lines == (share * 3)[:12]
    routine = [job.agent for job in iter(lambda: q.get(0), None) if job.priority == NORMAL]
    assert routine == list(range(3, 10))  # first come, first served: 0, 1, 2 went before


def test_a_replacement_keeps_its_place_and_an_urgent_one_joins_the_urgent_line() -> None:
    q = RequestQueue()
    q.put(_job(1, 10))
    q.put(_job(2, 11))
    q.put(_job(3, 12, URGENT))
    assert q.put(_job(4, 10)) == "replaced"  # still first among the routine ones
    assert q.put(_job(5, 11, URGENT)) == "replaced"  # now urgent, behind agent 12
    assert q.depths() == (2, 1)
    taken = [(job.agent, job.rid) for job in iter(lambda: q.get(0), None)]
    assert taken == [(12, 3), (11, 5), (10, 4)]


def test_no_request_waits_past_its_bound() -> None:
    """Seeded runs of puts (new, replacing, made urgent), gets and answers: every request is
    taken within the gets ``requests.py`` promises, from the place it had in its line."""
    for seed in range(20):
        rng = random.Random(seed)
        q = RequestQueue()
        agents = 30
        gets = 0
        due: dict[int, int] = {}  # agent -> the get by which its queued request is taken
        queued: dict[int, int] = {}  # agent -> the urgency of its queued request
        flying: list[int] = []
        rid = 0
        for _ in range(3000):
            roll = rng.random()
            if roll < 0.45:
                agent = rng.randrange(agents)
                rid += 1
                urgent, routine = q.depths()
                state = q.state_of(agent)
                priority = URGENT if rng.random() < 0.3 else NORMAL
                old = queued.get(agent)
                if q.put(_job(rid, agent, priority), wake=False) == "busy":
                    assert state == "in flight"
                    continue
                queued[agent] = min(priority, NORMAL if old is None else old)
                if old is None:
                    due[agent] = (gets + _urgent_bound(urgent + 1) if priority == URGENT
                                  else gets + (routine + 1) * ROUTINE_EVERY)
                elif old == NORMAL and priority == URGENT:  # moved to the urgent line
                    due[agent] = gets + _urgent_bound(urgent + 1)
                # else it kept its place, and so its bound
            elif roll < 0.85:
                job = q.get(0)
                if job is None:
                    assert q.depth == 0
                    continue
                gets += 1
                assert job.priority == queued.pop(job.agent)
                assert gets <= due.pop(job.agent), (seed, job)
                flying.append(job.agent)
            elif flying:
                q.done(flying.pop(rng.randrange(len(flying))))


def test_urgent_news_goes_stale_and_keeps_its_age_in_the_routine_line() -> None:
    clock = [0.0]
    q = RequestQueue(now=lambda: clock[0])
    q.fresh_s = 2.0
    q.put(_job(1, 10))
    q.put(_job(2, 11, URGENT))
    q.put(_job(3, 12))
    clock[0] = 1.0
    q.put(_job(4, 13, URGENT))
    clock[0] = 2.5  # agent 11's news waited 2.5 s: stale; agent 13's 1.5 s: fresh
    taken = []
    while (job := q.get(0)) is not None:
        taken.append((job.agent, job.priority, q.entered(job.agent)))
    assert taken == [(13, URGENT, (URGENT, 1.0)), (10, NORMAL, (NORMAL, 0.0)),
                     (11, NORMAL, (NORMAL, 0.0)), (12, NORMAL, (NORMAL, 0.0))]
    assert q.stale == 1


def test_with_news_going_stale_no_request_waits_past_the_bound() -> None:
    """Seeded runs on a clock that moves, with news of danger among the urgent requests:
    every request is taken within N * ROUTINE_EVERY gets of entering the queue, for N
    agents, plus the gets while it was fresh news (danger that came after it may go first
    then), whatever goes stale meanwhile."""
    agents = 25
    stale = 0
    clock = [0.0]
    for seed in range(20):
        rng = random.Random(seed)
        clock[0] = 0.0
        q = RequestQueue(now=lambda: clock[0])
        q.fresh_s = rng.choice([0.5, 2.0, 5.0])
        gets = 0
        due: dict[int, int] = {}
        entered: dict[int, float] = {}
        flying: list[int] = []
        for rid in range(1, 3000):
            clock[0] += rng.random() * 0.2
            roll = rng.random()
            if roll < 0.5:
                agent = rng.randrange(agents)
                priority = URGENT if rng.random() < 0.5 else NORMAL
                why = rng.choice(["attacked", "spoken to"]) if priority == URGENT else "r"
                placed = q.put(_job(rid, agent, priority, why), wake=False)
                if placed == "queued":
                    due[agent] = gets + agents * ROUTINE_EVERY
                    entered[agent] = clock[0]
            elif roll < 0.85:
                job = q.get(0)
                if job is not None:
                    gets += 1
                    for agent, since in entered.items():  # a get while it was fresh news
                        if agent != job.agent and clock[0] - since <= q.fresh_s:
                            due[agent] += 1
                    del entered[job.agent]
                    assert gets <= due.pop(job.agent), (seed, job)
                    flying.append(job.agent)
            elif flying:
                q.done(flying.pop(rng.randrange(len(flying))))
        stale += q.stale
    assert stale > 100  # the case was exercised


def test_news_of_danger_goes_before_other_news_while_news_can_go_stale() -> None:
    clock = [0.0]
    q = RequestQueue(now=lambda: clock[0])
    q.put(_job(1, 10, URGENT, "spoken to"))
    q.put(_job(2, 11, URGENT, "attacked"))
    q.put(_job(3, 12, URGENT, "offer received"))
    q.put(_job(4, 13, URGENT, "starving"))
    # No latency known yet (nothing can go stale): one urgent line, in order.
    assert [job.agent for job in iter(lambda: q.get(0), None)] == [10, 11, 12, 13]
    for agent in (10, 11, 12, 13):
        q.done(agent)
    q.fresh_s = 2.0
    q.put(_job(5, 10, URGENT, "spoken to"))
    q.put(_job(6, 11, URGENT, "attacked"))
    q.put(_job(7, 12, URGENT, "offer received"))
    assert q.put(_job(8, 12, URGENT, "starving")) == "replaced"  # now danger: behind 11
    q.put(_job(9, 13, URGENT, "starving"))
    assert q.depths() == (4, 0)
    assert [job.agent for job in iter(lambda: q.get(0), None)] == [11, 12, 13, 10]
    # Talk that waits behind danger goes stale in its turn, and takes its routine place.
    clock[0] = 0.0
    q = RequestQueue(now=lambda: clock[0])
    q.fresh_s = 2.0
    q.put(_job(1, 10, URGENT, "spoken to"))
    q.put(_job(2, 11))
    clock[0] = 1.0
    q.put(_job(3, 12, URGENT, "attacked"))
    clock[0] = 2.5
    taken = [(job.agent, job.priority) for job in iter(lambda: q.get(0), None)]
    assert taken == [(12, URGENT), (10, NORMAL), (11, NORMAL)] and q.stale == 1


# -- a saturated model, through the pipeline -----------------------------------------------------


class _Saturated(Answering):
    """A model that answers ``per_tick`` requests each tick, the oldest first, and no more:
    every agent asks far more often than that. Requests are prepared as they go out."""

    source = "test"
    prepares_late = True

    def __init__(self, world: World, *, slots: int) -> None:
        super().__init__(pace=Pace(interval=2, min_gap=1, round_size=slots, workers=0),
                         brains=frozenset({"thinker"}))
        self.world = world
        self.waiting: list[Reply] = []
        self.sent: list[tuple[int, int, int, tuple[str, ...]]] = []  # tick, agent, line, why
        self.prepared: list[int] = []  # agents whose observation was taken

    def prepare(self, eid: int, mind: Mind, rid: int, reasons: tuple[str, ...],
                priority: int) -> Job:
        self.prepared.append(eid)
        return Job(rid=rid, agent=eid, tick=self.world.tick, priority=priority,
                   reasons=reasons, payload=None)

    def answer(self, job: Job, reply: Reply) -> None:
        self.sent.append((self.world.tick, job.agent, job.priority, job.reasons))
        self.waiting.append(reply)

    def answer_oldest(self, n: int) -> None:
        for reply in self.waiting[:n]:
            reply(Answer(actions=[Action(name="rest", args={"ticks": 600})], thought="",
                         latency_s=0.0))
        del self.waiting[:n]


def test_a_saturated_model_serves_a_starving_agent_first_and_starves_nobody() -> None:
    # Out of earshot of each other (speech carries 2 tiles, agents stand 4 apart) and at
    # rest: nobody else's news is urgent.
    world = small_world(3, world={"starting_agents": 0, "size": [40, 40]},
                        game={"hearing_radius": 2})
    agents = [add_agent(world, f"A{i}", 2 + (i % 9) * 4, 2 + (i // 9) * 4)
              for i in range(36)]
    stay = [{"name": "rest", "args": {"ticks": 600}}]
    for eid in agents:
        world.store.get(eid, c.Agent).brain = "thinker"
        world.inbox.submit("plan", {"agent": eid, "source": "console", "actions": stay})
    listener = agents[0]
    model = _Saturated(world, slots=1)
    pipeline = Pipeline(world, model)
    entered: dict[int, int] = {}  # agent -> requests sent before its own entered the queue
    waits: list[int] = []  # requests sent from one's entering the queue until it went

    def tick() -> None:
        model.answer_oldest(1)  # one answer a tick: capacity 1, demand ~20 a tick
        before = len(model.sent)
        pipeline.on_tick(world.step())  # asks (queued), then sends what it may
        for i in range(before, len(model.sent)):
            agent = model.sent[i][1]
            waits.append(i - entered.pop(agent, i) + 1)
        for agent in pipeline.minds:
            if pipeline.queue.state_of(agent) == "queued":
                entered.setdefault(agent, before)

    for _ in range(60):
        tick()
    assert pipeline.queue.depth >= len(agents) // 2  # saturated: most agents wait in line
    # Only what went out was prepared: one observation per request sent, none in vain.
    assert model.prepared == [agent for _t, agent, _l, _r in model.sent]
    world.store.get(listener, c.Needs).hunger = 95.0  # starving: urgent
    starved = world.tick
    before = len(model.sent)
    for _ in range(200):
        tick()
    asked = [(t, line) for t, agent, line, why in model.sent[before:]
             if agent == listener and "starving" in why]
    assert asked, "the starving agent was never asked"
    sent_tick, line = asked[0]
    assert line == URGENT
    # Seen within its slot of checks, queued urgent with nothing urgent ahead of it (nobody
    # else has urgent news), and sent within the urgent bound at one request a tick.
    assert sent_tick <= starved + TRIGGER_CHECK_TICKS + _urgent_bound(1)
    # Nobody starves: each agent was asked, and no request waited for more than the bound
    # (the other agents' requests ahead of it, each with the urgent share before it).
    assert {agent for _t, agent, _line, _why in model.sent} == set(agents)
    assert max(waits) <= len(agents) * ROUTINE_EVERY
    assert max(waits) >= len(agents) // 2  # and the queue was long: the bound was needed
    figures = pipeline.metrics.attention()
    assert figures["urgent_requests"] >= 1
    assert figures["danger_answered"] >= 1  # the starving agent's, answered as danger
    world.close()
