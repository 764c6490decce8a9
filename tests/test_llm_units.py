"""The LLM layer's small parts, one at a time: extraction, decisions, cache, breaker, budget,
queue, redaction, memory and observations."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from agent_world.agents import observe
from agent_world.contract.answer import DecisionError, decide_from_text, extract_json
from agent_world.core import components as c
from agent_world.decisions.requests import NORMAL, URGENT, Job, RequestQueue
from agent_world.llm.breaker import CircuitBreaker
from agent_world.llm.budget import Budget
from agent_world.llm.cache import ResponseCache, cache_key
from agent_world.llm.http import estimate_tokens
from agent_world.llm.memory import AgentMemory, MemoryBook
from agent_world.llm.prompts import PromptBuilder, WorldFacts
from agent_world.llm.redact import MASK, Redactor
from agent_world.llm.retry import RetryPolicy
from agent_world.types import FakeClock, LLMRequest, LLMResponse, LLMUsage, ProviderError
from tests.helpers import add_agent, small_world

# -- extraction and decisions ---------------------------------------------------------------------

PLAN = '{"thought": "eat", "plan": [{"action": "eat", "args": {"item": "berries"}}]}'


@pytest.mark.parametrize("text", [
    PLAN,
    f"  {PLAN}\n",
    f"Here you go:\n```json\n{PLAN}\n```\nanything else?",
    f"```\n{PLAN}\n```",
    f"I think {PLAN} is best. {{not json}}",
    "Thinking {step one} first, then: " + PLAN,
])
def test_the_decision_is_found_in_any_wrapping(text: str) -> None:
    decision = decide_from_text(text, max_actions=3)
    assert [str(a) for a in decision.actions] == ["eat(item=berries)"]
    assert decision.thought == "eat"


def test_a_single_action_object_is_a_one_step_plan() -> None:
    decision = decide_from_text('{"action": "attack", "args": {"target": "17"}}', max_actions=3)
    assert decision.actions[0].args == {"target": 17}


@pytest.mark.parametrize(("text", "says"), [
    ("I will wander about.", "no complete JSON object"),
    ('{"thought": "x", "plan": []}', "non-empty list"),
    ('{"thought": "x", "plan": [{"action": "fly"}]}', "unknown action 'fly'"),
    ('{"thought": "x", "plan": [{"action": "attack", "args": {}}]}', "missing argument"),
    ('{"thought": 5, "plan": [{"action": "idle"}]}', "'thought' must be text"),
    ('[1, 2]', "must be a JSON object"),
    ('{"plan": [' + ",".join(['{"action": "idle"}'] * 4) + "]}", "at most 3"),
    ('{"thought": "x", "plan": [{"action": "eat", "args": {"item": "pizza"}}]}', "pizza"),
])
def test_invalid_answers_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(DecisionError, match=None) as info:
        decide_from_text(text, max_actions=3)
    assert says in str(info.value)


def test_extract_json_prefers_the_whole_text() -> None:
    assert extract_json('{"a": {"b": 1}}') == {"a": {"b": 1}}


def test_a_cut_off_answer_is_not_mined_for_inner_objects() -> None:
    cut = '{"thought": "go", "plan": [{"action": "pickup", "args": {"target": 50}}, {"act'
    with pytest.raises(DecisionError, match="no complete JSON object"):
        extract_json(cut)


# -- cache ----------------------------------------------------------------------------------------

def _request(**kw: object) -> LLMRequest:
    base: dict[str, object] = {"system": "s", "prompt": "p", "temperature": 0.5,
                               "max_tokens": 50}
    base.update(kw)
    return LLMRequest(**base)  # type: ignore[arg-type]


def _response(text: str = PLAN) -> LLMResponse:
    return LLMResponse(text=text, usage=LLMUsage(prompt_tokens=10, completion_tokens=5),
                       latency_s=0.1, model="m")


def test_cache_key_depends_on_what_makes_calls_the_same_and_nothing_else() -> None:
    ident = {"provider": "openai", "base_url": "u", "model": "m", "structured": "schema"}
    key = cache_key(ident, _request(), "1")
    assert key == cache_key(dict(reversed(list(ident.items()))), _request(), "1")
    assert key != cache_key({**ident, "model": "n"}, _request(), "1")
    assert key != cache_key(ident, _request(temperature=0.0), "1")
    assert key != cache_key(ident, _request(prompt="q"), "1")
    assert key != cache_key(ident, _request(), "2")
    assert len(key) == 64


def test_cache_is_a_bounded_lru_with_a_hit_rate() -> None:
    cache = ResponseCache(2)
    cache.put("a", _response())
    cache.put("b", _response())
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("c", _response())
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None
    assert len(cache) == 2
    assert cache.hit_rate == pytest.approx(3 / 4)
    off = ResponseCache(0)
    off.put("a", _response())
    assert off.get("a") is None


def test_identical_calls_in_flight_collapse_into_one() -> None:
    cache = ResponseCache(4)
    assert cache.claim("k") is None  # the first caller makes the call
    waiting = cache.claim("k")
    assert waiting is not None and not waiting.done()
    cache.release("k", _response())
    assert waiting.result(1) is not None
    assert cache.claim("k") is None  # released: the next one calls again


# -- breaker, budget, retry policy --------------------------------------------------------------

def test_breaker_opens_after_failures_probes_and_backs_off() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failures=3, cooldown_s=10, clock=clock)
    for _ in range(2):
        breaker.failure("boom")
    assert breaker.state == "closed" and breaker.allow()
    breaker.failure("boom")
    assert breaker.state == "open" and not breaker.allow()
    clock.advance(10)
    assert breaker.allow()  # the one probe
    assert breaker.state == "half_open" and not breaker.allow() and breaker.would_allow()
    breaker.failure("still boom")
    assert breaker.state == "open" and breaker.cooldown == 20
    clock.advance(20)
    assert breaker.allow()
    breaker.success()
    assert breaker.state == "closed" and breaker.cooldown == 10 and breaker.allow()
    breaker.stop("auth: bad key")
    clock.advance(10_000)
    assert not breaker.allow() and not breaker.would_allow()


def test_budget_is_a_rolling_hour_of_tokens_and_cost() -> None:
    clock = FakeClock()
    budget = Budget(tokens_per_hour=1000, cost_per_hour=0.01, clock=clock)
    budget.charge(LLMUsage(prompt_tokens=600, completion_tokens=100))
    assert not budget.exhausted() and budget.left()["tokens"] == 300
    clock.advance(1800)
    budget.charge(LLMUsage(prompt_tokens=300, completion_tokens=0))
    assert budget.exhausted()
    assert budget.refills_in() == pytest.approx(1800)
    clock.advance(1800)
    assert not budget.exhausted() and budget.spent() == (300, 0.0)
    budget.charge(LLMUsage(prompt_tokens=1, cost=0.02))
    assert budget.exhausted()  # the dollar cap
    unlimited = Budget(tokens_per_hour=0, cost_per_hour=0, clock=clock)
    unlimited.charge(LLMUsage(prompt_tokens=10**9))
    assert not unlimited.exhausted()


def test_retry_policy_follows_the_table() -> None:
    policy = RetryPolicy(max_retries=2, retry_after_cap_s=30)
    rng = random.Random(3)
    for kind in ("connect", "timeout", "server", "overloaded", "rate_limited"):
        assert policy.delay(0, ProviderError(kind, "x"), rng) is not None
    for kind in ("bad_request", "auth", "credit", "malformed", "schema", "too_large"):
        assert policy.delay(0, ProviderError(kind, "x"), rng) is None
    assert policy.delay(2, ProviderError("server", "x"), rng) is None  # out of retries
    assert policy.delay(0, ProviderError("rate_limited", "x", retry_after=5), rng) == 5
    assert policy.delay(0, ProviderError("rate_limited", "x", retry_after=31), rng) is None
    waits = [policy.delay(n, ProviderError("server", "x"), rng) or 0 for n in range(2)]
    assert 0.25 <= waits[0] <= 0.5 and 0.5 <= waits[1] <= 1.0
    with pytest.raises(ValueError, match="not one of"):
        ProviderError("weird", "x")


# -- queue ----------------------------------------------------------------------------------------

def _job(rid: int, agent: int, priority: int = NORMAL) -> Job:
    return Job(rid=rid, agent=agent, tick=0, priority=priority, reasons=("r",),
               payload=f"p{rid}", key=f"k{rid}")


def test_queue_serves_urgent_first_and_coalesces_per_agent() -> None:
    q = RequestQueue()
    assert q.put(_job(1, 10)) == "queued"
    assert q.put(_job(2, 11)) == "queued"
    # A newer observation replaces the queued one, in its place in line (first come).
    assert q.put(_job(3, 10)) == "replaced"
    assert q.put(_job(4, 12, URGENT)) == "queued"
    assert q.depth == 3
    first = q.get(0)
    assert first is not None and first.agent == 12
    assert q.put(_job(5, 12)) == "busy"  # one request per agent in flight
    second, third = q.get(0), q.get(0)
    assert second is not None and third is not None
    assert (second.agent, second.payload) == (10, "p3")
    assert (third.agent, third.payload) == (11, "p2")
    assert q.get(0) is None and q.in_flight == 3
    q.done(12)
    assert q.put(_job(6, 12)) == "queued"
    q.close()
    assert q.get(0) is None


def test_a_replacement_keeps_the_urgency_of_what_it_replaces() -> None:
    q = RequestQueue()
    q.put(_job(1, 10))
    q.put(_job(2, 11, URGENT))
    q.put(_job(3, 11))
    job = q.get(0)
    assert job is not None and (job.agent, job.priority, job.rid) == (11, URGENT, 3)


# -- secrets --------------------------------------------------------------------------------------

def test_redactor_masks_keys_and_their_prefixes() -> None:
    key = "sk-or-v1-0123456789abcdef0123"
    redact = Redactor([key, None, ""])
    assert redact(f"bad key {key}!") == f"bad key {MASK}!"
    assert redact(f"key starts {key[:12]}...") == f"key starts {MASK}..."
    assert key not in repr(redact)


# -- memory ---------------------------------------------------------------------------------------

def test_memory_window_folds_old_lines_into_a_summary_and_round_trips(tmp_path: Path) -> None:
    memory = AgentMemory(4)
    for i in range(9):
        memory.add(i, f"line {i}", "attack by Elio#3" if i % 2 else "ate")
    assert len(memory.recent) <= 4
    assert "attack by Elio#3" in memory.summary()
    rendered = memory.render(10)
    assert rendered["recent"][-1] == "2 ticks ago: line 8"
    book = MemoryBook(4)
    book.memories[7] = memory
    assert book.state_of(8) is None  # remembers nothing: nothing to save
    # What a minds file keeps, through a real file and back.
    path = tmp_path / "7.json"
    path.write_bytes(orjson.dumps(book.state_of(7)))
    again = MemoryBook(4)
    again.restore(7, orjson.loads(path.read_bytes()))
    assert again.of(7).render(10) == rendered
    with pytest.raises(ValueError, match=r"recent\[0\]"):
        again.restore(8, {"recent": [{"tick": 1}], "facts": {}})
    assert 8 not in again.memories  # a state it cannot take changes nothing


def test_a_memory_view_stays_as_it_was_taken_while_the_memory_goes_on() -> None:
    # A prompt is rendered from a view off the main thread, while the main thread keeps
    # new lines and folds old ones: the view renders what was remembered when taken.
    memory = AgentMemory(4)
    for i in range(3):
        memory.add(i, f"line {i}", "ate")
    view = memory.view()
    taken = memory.render(5)
    for i in range(3, 12):
        memory.add(i, f"line {i}", "attack by Elio#3")
    assert view.render(5) == taken
    assert memory.render(5) != taken


def test_memory_collects_events_that_concern_llm_agents() -> None:
    book = MemoryBook(6)
    book.on_events(5, [
        {"type": "attack", "agent": 3, "name": "Elio", "target": 7, "target_name": "Brin",
         "damage": 4.0, "health": 90.0},
        {"type": "price", "item": "apple", "old": 1, "price": 2},
        {"type": "eat", "agent": 9, "name": "Other", "item": "apple"},
    ], [7])
    assert list(book.memories) == [7]
    (line,) = book.of(7).recent
    assert "Elio" in line["text"] and line["fact"] == "attack by Elio#3"


# -- observations and prompts ---------------------------------------------------------------------

def test_observation_is_compact_json_of_what_the_agent_perceives() -> None:
    world = small_world(3)
    me = add_agent(world, "Brin", 5, 5, items={"berries": 2}, gold=4)
    other = add_agent(world, "Elio", 7, 5)
    far = add_agent(world, "Faraway", 19, 19)
    world.spawn_item("apple", 1, 6, 6)
    for _ in range(5):
        world.step()
    obs = observe(world, me).prompt_view()
    assert orjson.loads(orjson.dumps(obs)) == obs
    assert obs["you"]["name"] == "Brin" and obs["you"]["items"] == {"berries": 2}
    seen = [a["id"] for a in obs.get("agents", [])]
    assert other in seen and far not in seen
    assert any(i["kind"] == "apple" for i in obs["items"])
    world.store.get(me, c.Combat).last_attacked = world.tick
    world.store.get(me, c.Combat).last_attacker = other
    assert observe(world, me).prompt_view()["you"]["attacked_by"]["id"] == other
    prompts = PromptBuilder(facts=WorldFacts.of(world), max_actions=3, temperature=0.7,
                            max_tokens=200, seed=None,
                            structured="schema")
    user = prompts.user(name="Brin", observation=obs,
                        memory={"recent": ["3 ticks ago: ate"]}, correction="plan[0]: bad")
    assert "Brin" in user and "rejected: plan[0]: bad" in user
    assert "trade_offer" in prompts.system and "{actions}" not in prompts.system
    assert "offer=id" in prompts.system
    # Caching: every agent's requests start with the same block, long enough for the
    # providers' prefix caches (OpenAI: 1,024 tokens); then its personality; then the
    # short part that changes with every decision, which holds the name.
    trader, gatherer = prompts.system_for("trader"), prompts.system_for("gatherer")
    assert trader.startswith(prompts.system) and gatherer.startswith(prompts.system)
    assert trader != gatherer and "Brin" not in trader
    assert estimate_tokens(prompts.system) >= 1024
    assert estimate_tokens(user) < 400
    request = prompts.request(user, system=trader)
    assert request.system == trader and request.prompt == user
    world.close()
