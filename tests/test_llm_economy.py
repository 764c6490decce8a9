"""What LLM agents cost: a cacheable prompt prefix and the cached tokens shown, thinking
when it matters (pace, the model's own "ask me again", newcomers that matter, reactions
that are never lost), a paced budget, and prices for the estimate and for providers that
report no cost. Real HTTP against the fake endpoint where a model answers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_world.config import ConfigError, LLMConfig
from agent_world.contract.answer import DecisionError, decide_from_text
from agent_world.core import components as c
from agent_world.core.world import World
from agent_world.decisions.answerer import Answering, Fault, Pace, Reply
from agent_world.decisions.mind import REACTIVE, Mind, triggers
from agent_world.decisions.pipeline import Pipeline
from agent_world.decisions.requests import Job
from agent_world.llm.budget import Budget
from agent_world.llm.prices import configured_price, price_of
from agent_world.llm.prompts import PromptBuilder, WorldFacts
from agent_world.types import FakeClock, LLMUsage
from tests.helpers import add_agent, small_world
from tests.llm_helpers import KEY, KEY_ENV, llm_config, llm_inputs, open_session, run_until
from tests.llm_server import GOOD_PLAN, FakeLLMServer, fake_llm_server


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with fake_llm_server() as s:
        yield s


# -- the cacheable prefix and the tokens it saves ----------------------------------------------


def test_cached_tokens_are_shown_in_stats_debug_and_the_log(tmp_path: Path,
                                                            server: FakeLLMServer) -> None:
    server.usage_mode = "prefix"  # usage counted from the request, prefixes cached
    session = open_session(llm_config(tmp_path, server, agents=4, model="gpt-4o-mini"))
    llm = session.llm
    assert llm is not None
    try:
        run_until(session, 2000, lambda: llm.metrics.applied >= 8)
        stats = llm.stats()
        assert "cached" in stats["prompt tokens/decision"]
        eid = next(e for e, m in llm.minds.items() if m.last_usage is not None)
        usage = llm.minds[eid].last_usage
        assert usage is not None and usage.cached_tokens >= 1024
        assert f"{usage.cached_tokens} cached" in "\n".join(llm.debug(eid))
    finally:
        session.close()
    plans = llm_inputs(tmp_path / "saves" / "w")
    cached = [p["data"]["usage"]["cached_tokens"] for p in plans]
    assert min(cached) == 0 and max(cached) >= 1024  # the first calls fill the cache
    # No cost came from the server: the price table's is in the log, for every call.
    assert all(p["data"]["usage"]["cost"] > 0 for p in plans)


# -- thinking when it matters ----------------------------------------------------------------


def test_the_pace_holds_unprompted_decisions(tmp_path: Path, server: FakeLLMServer) -> None:
    # Asked at every chance (interval 10 ticks), each agent is held to 36 an hour of world
    # time: a burst of 3, then one per 1,000 ticks.
    config = llm_config(tmp_path, server, agents=2, think_interval_ticks=10, min_gap_ticks=1,
                        decisions_per_agent_hour=36).replace(
        world={"personality_mix": {"aggressive": 0.0, "cautious": 1.0, "gatherer": 1.0,
                                   "trader": 0.0}, "starting_agents": 2})
    session = open_session(config)
    llm = session.llm
    assert llm is not None
    try:
        run_until(session, 1500)
        assert llm.metrics.paced > 0
    finally:
        session.close()
    # Counted from the log: a decision asked for a reactive reason (attacked, spoken to, an
    # offer ...) is asked at once by design, whatever the pace; only the rest are paced.
    # (Counting every decision made this test fail whenever an agent happened to receive
    # a few offers, which depends on how fast the machine answered.)
    unprompted = Counter(plan["data"]["agent"] for plan in llm_inputs(tmp_path / "saves" / "w")
                         if not REACTIVE.intersection(plan["data"]["reasons"]))
    assert unprompted, "no unprompted decision was made at all"
    assert max(unprompted.values()) <= 3 + 2, unprompted  # the burst, 1.5 refills


def test_the_model_can_say_when_to_ask_again(tmp_path: Path, server: FakeLLMServer) -> None:
    server.answer = {**GOOD_PLAN, "ask_again_s": 60}  # busy for a minute: 600 ticks
    config = llm_config(tmp_path, server, agents=1, think_interval_ticks=20, min_gap_ticks=1,
                        decisions_per_agent_hour=0)
    session = open_session(config.replace(world={"starting_agents": 1}))
    llm = session.llm
    assert llm is not None
    try:
        run_until(session, 300, lambda: llm.metrics.applied >= 1)
        mind = next(iter(llm.minds.values()))
        first = mind.last_decision_tick
        assert mind.next_ask_tick == first + 600
        run_until(session, 400)
        # Its plan ended long ago and the interval (20) passed many times: no new ask
        # unless something pressing happened.
        asked = [p for p in llm_inputs(tmp_path / "saves" / "w")
                 if p["data"]["asked_tick"] > first]
        assert all({"attacked", "starving", "spoken to", "offer received"}
                   & set(p["data"]["reasons"]) for p in asked), asked
        run_until(session, 1000, lambda: mind.asked_tick >= first + 600)
        assert "the time it asked for" in mind.reasons or mind.asked_tick < first + 600 \
            or set(mind.reasons) & {"attacked", "starving", "spoken to", "offer received"}
    finally:
        session.close()
    plans = llm_inputs(tmp_path / "saves" / "w")
    assert plans[0]["data"]["ask_again_s"] == 60


def test_ask_again_is_read_bounded_and_checked() -> None:
    plan = '"plan": [{"action": "idle", "args": {}}]'
    assert decide_from_text(f'{{{plan}, "ask_again_s": 30}}', max_actions=3).ask_again_s == 30
    assert decide_from_text(f'{{{plan}, "ask_again_s": "90"}}', max_actions=3).ask_again_s == 90
    assert decide_from_text(f'{{{plan}, "ask_again_s": 99999}}', max_actions=3).ask_again_s \
        == 600
    assert decide_from_text(f'{{{plan}, "ask_again_s": 1}}', max_actions=3).ask_again_s == 5
    assert decide_from_text(f'{{{plan}}}', max_actions=3).ask_again_s is None
    with pytest.raises(DecisionError, match="ask_again_s"):
        decide_from_text(f'{{{plan}, "ask_again_s": "soon"}}', max_actions=3)
    with pytest.raises(DecisionError, match="ask_again_s"):
        decide_from_text(f'{{{plan}, "ask_again_s": [1]}}', max_actions=3)


def test_only_a_newcomer_that_matters_is_a_reason_to_think() -> None:
    world = small_world(3, world={"size": [40, 40], "starting_agents": 0})
    me = add_agent(world, "Brin", 10, 10)
    mind = Mind(me, asked_tick=0)

    def reasons_over(ticks: int) -> set[str]:
        seen: set[str] = set()
        for _ in range(ticks):  # perception is refreshed every few ticks
            world.step()
            seen.update(triggers(world, mind, interval=10**6, source="llm")[0])
        return seen

    def near_me(name: str, dx: int) -> int:  # placed by where Brin is now (it wanders)
        here = world.store.get(me, c.Position)
        return add_agent(world, name, here.x + dx, here.y)

    reasons_over(5)
    far = near_me("Far", 6)  # in sight, 6 tiles off: walking past
    assert "new agent seen" not in reasons_over(4) and far in mind.seen
    near_me("Near", 2)
    assert "new agent seen" in reasons_over(4)
    enemy = near_me("Foe", -6)
    world.store.get(me, c.Social).relationships[enemy] = -0.8  # someone it fears
    assert "new agent seen" in reasons_over(4)
    world.close()


# -- the budget, paced, and prices -----------------------------------------------------------


def test_the_budget_is_spread_over_the_hour() -> None:
    clock = FakeClock()
    budget = Budget(tokens_per_hour=12_000, cost_per_hour=0, clock=clock, burst_s=300)
    spent = 0
    while not budget.exhausted():  # five minutes' share may go at once: 1,000 tokens
        budget.charge(LLMUsage(prompt_tokens=90, completion_tokens=10))
        spent += 100
    assert spent == 1000
    assert 0 < budget.refills_in() <= 30
    clock.advance(60)  # a minute later, a minute's share (200 tokens) more
    assert not budget.exhausted()
    budget.charge(LLMUsage(prompt_tokens=190, completion_tokens=10))
    assert budget.exhausted()
    unpaced = Budget(tokens_per_hour=12_000, cost_per_hour=0, clock=clock, burst_s=0)
    unpaced.charge(LLMUsage(prompt_tokens=11_000))
    assert not unpaced.exhausted()  # without a pace only the rolling hour counts


def test_prices_come_from_the_table_or_the_settings() -> None:
    assert price_of("openai/gpt-4o-mini") == price_of("gpt-4o-mini-2024-07-18")
    assert price_of("anything", "local") is not None
    assert configured_price(LLMConfig(provider="openai", model="mystery")) is None
    given = configured_price(LLMConfig(provider="openai", model="acme/mystery-7b",
                                       prices={"mystery": "0.2/0.1/0.8"}))
    assert given is not None and (given.input, given.cached_input, given.output) \
        == (0.2, 0.1, 0.8)
    mini = configured_price(LLMConfig(provider="openai", model="gpt-4o-mini",
                                      prices={"gpt-4o-mini": "0.15/0.075/1"}))
    assert mini is not None and (mini.input, mini.output) == (0.15, 1.0)
    assert mini.cost(2000, 1000, 100) == pytest.approx((1000 * 0.15 + 1000 * 0.075
                                                        + 100 * 1.0) / 1e6)
    with pytest.raises(ConfigError, match=r"llm\.prices\.x = '1/2': expected"):
        LLMConfig(prices={"x": "1/2"})


def test_start_up_states_the_hourly_cost(tmp_path: Path, server: FakeLLMServer) -> None:
    session = open_session(llm_config(tmp_path, server, agents=4, model="gpt-4o-mini"))
    try:
        assert session.llm is not None
        text = session.llm.estimate(4)
        assert text.startswith("at most ~$") and "4 LLM agents x 120 decisions/hour" in text
        assert "$0.15 / $0.075 cached / $0.6 out" in text
    finally:
        session.close()
    config = llm_config(tmp_path / "b", server, agents=1, model="mystery-model")
    session = open_session(config)
    try:
        assert session.llm is not None
        assert "no price known for 'mystery-model'" in session.llm.estimate(1)
    finally:
        session.close()


def test_the_shared_block_states_the_settings_and_the_hint() -> None:
    facts = WorldFacts(tick_rate=4, vision=6, hearing=9)
    system = PromptBuilder(facts=facts, max_actions=3, temperature=0.7, max_tokens=200,
                           seed=None, structured="schema").system
    assert "250 ms" in system and "You see 6 tiles" in system and "9 tiles away" in system
    assert "ask_again_s" in system
    assert not any(f"{{{key}}}" in system for key in ("tick_ms", "vision", "hearing",
                                                      "max_actions", "actions"))


class _Asking(Answering):
    """An answerer that keeps its requests: the test answers them by hand."""

    source = "test"

    def __init__(self, world: World) -> None:
        super().__init__(pace=Pace(interval=10**6, min_gap=1, round_size=4, workers=0),
                         brains=frozenset({"thinker"}))
        self.world = world
        self.asked: list[Reply] = []

    def prepare(self, eid: int, mind: Mind, rid: int, reasons: tuple[str, ...],
                priority: int) -> Job:
        return Job(rid=rid, agent=eid, tick=self.world.tick, priority=priority,
                   reasons=reasons, payload=None)

    def answer(self, job: Job, reply: Reply) -> None:
        self.asked.append(reply)


def test_a_word_that_finds_the_agent_busy_is_asked_about_as_soon_as_it_can_be() -> None:
    """Spoken to while its request was in flight, an agent used to see the trigger and drop
    it; now it is kept and asked about as soon as the agent is free."""
    world = small_world(6, world={"starting_agents": 0})
    me = add_agent(world, "Brin", 5, 5)
    talker = add_agent(world, "Tam", 6, 5)
    world.store.get(me, c.Agent).brain = "thinker"
    stay = [{"name": "rest", "args": {"ticks": 600}}]
    for eid in (me, talker):
        world.inbox.submit("plan", {"agent": eid, "source": "console", "actions": stay})
    asking = _Asking(world)
    manager = Pipeline(world, asking)
    manager.on_tick(world.step())  # its first thought is asked ...
    job = asking.asked[0].job if asking.asked else None
    assert job is not None and job.reasons == ("first thought",)  # ... and is in flight
    world.inbox.submit("plan", {"agent": talker, "source": "console", "actions": [
        {"name": "say", "args": {"text": "Brin, a word with you", "to": me}}]})
    for _ in range(12):  # spoken to, heard and seen while the request flies
        manager.on_tick(world.step())
    mind = manager.minds[me]
    assert mind.pending == ("spoken to",) and mind.rid == job.rid
    asking.asked[0](Fault(kind="timeout", error="slow"))  # it failed: the agent is free
    for _ in range(6):
        manager.on_tick(world.step())
    assert mind.rid > job.rid and "spoken to" in mind.reasons and mind.pending == ()
    world.close()
