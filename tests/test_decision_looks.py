"""Which agents the decision pipeline looks at after a tick (issue 32 item 7): the ones
the tick's events concern, the starving, and those free to ask in their slot of ticks,
never every agent it serves; and the LLM memory's event lines, made once per event when
first read. Counted in looks and calls, never in time."""

from __future__ import annotations

from typing import Any

import pytest

from agent_world.core import components as c
from agent_world.core import events as ev
from agent_world.core.world import World
from agent_world.decisions import pipeline as pipeline_module
from agent_world.decisions.answerer import Answering, Fault, Pace, Reply
from agent_world.decisions.mind import FIGHT_GAP_TICKS, Mind, pressed, triggers
from agent_world.decisions.pipeline import TRIGGER_CHECK_TICKS, Pipeline
from agent_world.decisions.requests import URGENT, Job
from agent_world.llm import memory as memory_module
from agent_world.llm.memory import MemoryBook
from tests.helpers import add_agent, small_world

REST = [{"name": "rest", "args": {"ticks": 600}}]


class _Silent(Answering):
    """A model that takes one request at a time and never answers: every other agent's
    request waits in the queue."""

    source = "test"
    prepares_late = True

    def __init__(self, world: World, round_size: int = 1) -> None:
        super().__init__(pace=Pace(interval=20, min_gap=1, round_size=round_size, workers=0),
                         brains=frozenset({"thinker"}))
        self.world = world
        self.sent: list[Job] = []
        self.replies: list[Reply] = []

    def prepare(self, eid: int, mind: Mind, rid: int, reasons: tuple[str, ...],
                priority: int) -> Job:
        return Job(rid=rid, agent=eid, tick=self.world.tick, priority=priority,
                   reasons=reasons, payload=None)

    def answer(self, job: Job, reply: Reply) -> None:
        self.sent.append(job)
        self.replies.append(reply)


def _thinkers(world: World, names_at: list[tuple[str, int, int]]) -> list[int]:
    out = []
    for name, x, y in names_at:
        eid = add_agent(world, name, x, y)
        world.store.get(eid, c.Agent).brain = "thinker"
        world.inbox.submit("plan", {"agent": eid, "source": "console", "actions": REST})
        out.append(eid)
    return out


def test_agents_waiting_for_an_answer_are_looked_at_only_when_news_concerns_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Out of earshot of each other (speech carries 3 tiles) and at rest: a quiet world.
    world = small_world(4, world={"starting_agents": 0, "size": [60, 60]},
                        game={"hearing_radius": 3})
    ann, bo, cy, *rest = _thinkers(world, [("Ann", 5, 5), ("Bo", 9, 5), ("Cy", 40, 40)]
                                   + [(f"R{i}", 5 + 5 * i, 20) for i in range(8)])
    model = _Silent(world)
    pipeline = Pipeline(world, model)
    looked: list[tuple[int, int]] = []
    real = pipeline_module.triggers

    def counted(world: World, mind: Mind, **kwargs: Any) -> tuple[list[str], bool]:
        looked.append((world.tick, mind.agent))
        return real(world, mind, **kwargs)

    monkeypatch.setattr(pipeline_module, "triggers", counted)
    pipeline.on_tick(world.step())  # every first thought is asked: one goes out
    served = {ann, bo, cy, *rest}
    assert {eid for _t, eid in looked} == served
    assert pipeline.queue.depth == len(served) - 1 and pipeline.queue.in_flight == 1
    looked.clear()
    for _ in range(4 * TRIGGER_CHECK_TICKS):  # nothing happens to anyone
        pipeline.on_tick(world.step())
    assert looked == []  # all wait for their answer: no look, however many they are

    # Tam, a built-in agent, comes and speaks to Bo by name; Ann hears it too, but it is
    # not about Ann (and what they see changes: no reason to ask while they wait).
    assert model.sent[0].agent == ann  # Ann's request is the one out
    tam = add_agent(world, "Tam", 7, 5)
    world.inbox.submit("plan", {"agent": tam, "source": "console", "actions": [
        {"name": "say", "args": {"text": "Bo, come here", "to": bo}}]})
    for _ in range(3):
        report = world.step()
        pipeline.on_tick(report)
        if any(e["type"] == ev.SAY for e in report.events):
            break
    else:
        raise AssertionError("Tam did not speak")
    assert [eid for _t, eid in looked] == [bo]
    assert pipeline.minds[bo].reasons[0] == "spoken to"
    assert pipeline.queue.depths() == (1, len(served) - 2)  # its request now urgent
    assert pipeline.metrics.urgent_reasons == {"spoken to": 1}

    # Starving comes from the needs, whatever raised them, within a slot of ticks.
    looked.clear()
    world.store.get(cy, c.Needs).hunger = 95.0
    for _ in range(TRIGGER_CHECK_TICKS):
        pipeline.on_tick(world.step())
    assert [eid for _t, eid in looked] == [cy]
    assert "starving" in pipeline.minds[cy].reasons

    # A fault frees the agent: it is looked at in its slot of ticks, asks again (its
    # interval is long past) and waits in line, where it is not looked at.
    looked.clear()
    (first,) = model.replies
    first(Fault(kind="timeout", error="slow"))
    for _ in range(3 * TRIGGER_CHECK_TICKS):
        pipeline.on_tick(world.step())
    (slot,) = [t for t, eid in looked if eid == ann]
    assert (ann + slot) % TRIGGER_CHECK_TICKS == 0 and slot <= world.tick
    assert pipeline.minds[ann].asked_tick == slot and pipeline.minds[ann].status == "queued"
    world.close()


def test_pressed_names_targets_listeners_named_and_those_within_reach() -> None:
    world = small_world(4, world={"starting_agents": 0, "size": [60, 60]},
                        game={"hearing_radius": 4})
    speaker = add_agent(world, "Tam", 10, 10)
    named = add_agent(world, "Ann", 12, 10)
    hearer = add_agent(world, "Bo", 10, 12)
    spoken_to = add_agent(world, "Cy", 11, 11)
    far_named = add_agent(world, "Dee", 50, 50)
    target = add_agent(world, "Eve", 40, 10)
    served = {named, hearer, spoken_to, far_named, target}

    def said(text: str, **more: Any) -> dict[str, Any]:
        return {"type": ev.SAY, "agent": speaker, "name": "Tam", "text": text,
                "heard_by": 3, **more}

    assert pressed(world, [said("ann and dee, hello")], served) == {named}  # Dee is far
    assert pressed(world, [said("hello", to=spoken_to)], served) == {spoken_to}
    assert pressed(world, [said("hello all")], served) == set()
    assert pressed(world, [{"type": ev.SPOKEN, "speaker": "ann", "text": "Bo!", "x": 10,
                            "y": 10, "heard_by": 4}], served) == {hearer}
    assert pressed(world, [{"type": ev.ATTACK, "agent": speaker, "target": target},
                           {"type": ev.TRADE_OFFER, "agent": speaker, "target": far_named},
                           {"type": ev.ATTACK, "agent": target, "target": speaker}],
                   served) == {target, far_named}
    # A cast may have struck or told anyone within its reach: all of them are looked at.
    cast = {"type": ev.ABILITY, "agent": speaker, "name": "Tam", "ability": "zap",
            "effects": []}
    assert pressed(world, [cast], served) == {named, hearer, spoken_to}
    assert pressed(world, [{"type": ev.HARVEST, "agent": named}], served) == set()
    world.close()


def test_memory_lines_are_made_once_per_event_when_first_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = memory_module.format_event

    def counted(event: dict[str, Any]) -> str:
        made.append(str(event["type"]))
        return real(event)

    monkeypatch.setattr(memory_module, "format_event", counted)
    book = MemoryBook(4)
    attack = {"type": "attack", "agent": 3, "name": "Elio", "target": 7,
              "target_name": "Brin", "damage": 4.0, "health": 90.0}
    book.on_events(5, [attack, {"type": "eat", "agent": 9, "name": "Other",
                                "item": "apple", "item_id": 40}], {3, 7, 9})
    assert made == []  # nothing read yet: no line made
    elio, brin = book.of(3).recent[0], book.of(7).recent[0]
    assert (elio["fact"], brin["fact"]) == ("attack Brin#7", "attack by Elio#3")
    assert elio["text"] == brin["text"] == "ATTACK Elio#3 hits Brin#7 for 4 -> health 90"
    assert made == ["attack"]  # once for both of its parties
    # What a snapshot keeps is plain data, every line made; the same after a round trip.
    state = book.state_of(9)
    assert state is not None and made == ["attack", "eat"]
    (line,) = state["recent"]
    assert type(line) is dict and set(line) == {"tick", "text", "fact"}
    assert "item_id" not in line["text"] and "apple" in line["text"]
    again = MemoryBook(4)
    again.restore(7, book.state_of(7) or {})
    assert again.of(7).render(6) == book.of(7).render(6)
    # Each party's line leaves out what it knows already (its own id and name), from the
    # one line made for the event.
    made.clear()
    odd = {"type": "mystery", "agent": 3, "name": "Elio", "target": 7, "target_name": "Brin",
           "item_id": 5}
    book.on_events(6, [odd], {3, 7})
    assert book.of(3).recent[-1]["text"] == "MYSTERY target=7 target_name=Brin"
    assert book.of(7).recent[-1]["text"] == "MYSTERY agent=3 name=Elio"
    assert made == ["mystery"]
    # A line folded into the summary unread is never made.
    made.clear()
    for tick in range(6, 12):
        book.on_events(tick, [{"type": "eat", "agent": 9, "name": "Other", "item": "fig"}],
                       {9})
    assert book.of(9).summary() and made == []


def test_an_urgent_request_replaced_on_news_keeps_the_news() -> None:
    """Spoken to while its routine request waits, the agent's request goes urgent at once
    (the look comes from the say event, not from a scan of every agent)."""
    world = small_world(6, world={"starting_agents": 0})
    me, other = _thinkers(world, [("Brin", 5, 5), ("Orla", 9, 9)])
    talker = add_agent(world, "Tam", 6, 5)
    world.inbox.submit("plan", {"agent": talker, "source": "console", "actions": REST})
    model = _Silent(world)
    pipeline = Pipeline(world, model)
    pipeline.on_tick(world.step())
    waiting = me if model.sent[0].agent == other else other
    world.inbox.submit("plan", {"agent": talker, "source": "console", "actions": [
        {"name": "say", "args": {"text": "a word with you", "to": waiting}}]})
    for _ in range(3):
        pipeline.on_tick(world.step())
    assert pipeline.minds[waiting].reasons == ("spoken to",)
    assert pipeline.queue.depths() == (1, 0)
    job = pipeline.queue._queued[waiting]
    assert job.priority == URGENT
    world.close()


def test_a_fight_is_news_once_not_at_every_hit() -> None:
    # Hits by the same attacker close together are one fight: the first is an urgent
    # reason to think, the rest are not (at 2,000 LLM agents 85% of urgent "attacked" asks
    # were such repeats). Another attacker, or the same one after a pause, is news again.
    world = small_world()
    me = add_agent(world, "Ada", 5, 5)
    wolf, bear = add_agent(world, "Wolf", 6, 5), add_agent(world, "Bear", 4, 5)
    mind = Mind(me)
    combat = world.store.get(me, c.Combat)

    def hit_by(attacker: int) -> bool:
        combat.last_attacker, combat.last_attacked = attacker, world.tick
        reasons, urgent = triggers(world, mind, interval=10_000, source="test")
        world.tick += 1
        assert urgent == ("attacked" in reasons)
        return "attacked" in reasons

    assert hit_by(wolf)  # a new fight
    assert [hit_by(wolf) for _ in range(5)] == [False] * 5  # the same fight
    assert hit_by(bear)  # someone else joins in
    assert not hit_by(bear)
    world.tick += FIGHT_GAP_TICKS + 1
    assert hit_by(bear)  # the same attacker after a pause: a new fight


def test_requests_due_at_once_leave_over_a_few_ticks_but_a_stage_sends_them_all() -> None:
    # A round of 48 (a quarter is 12 a tick): 30 first thoughts are due after one tick.
    world = small_world(4, world={"starting_agents": 0, "size": [60, 60]})
    _thinkers(world, [(f"A{i}", 2 * i, 5) for i in range(30)])
    model = _Silent(world, round_size=48)
    pipeline = Pipeline(world, model)
    sent = []
    for _ in range(3):
        pipeline.on_tick(world.step())
        sent.append(len(model.sent))
    assert sent == [12, 24, 30]
    # A stage that waits within its tick sends what waits, without the limit.
    other = small_world(4, world={"starting_agents": 0, "size": [60, 60]})
    _thinkers(other, [(f"A{i}", 2 * i, 5) for i in range(30)])
    staged = _Silent(other, round_size=48)
    pipeline = Pipeline(other, staged)
    pipeline.on_tick(other.step())
    pipeline.send_queued()
    assert len(staged.sent) == 30
    world.close()
    other.close()


def test_news_that_comes_while_an_agent_waits_is_kept_beside_the_news_before_it() -> None:
    # Ann's request is out (never answered): news cannot be asked about, so it is kept. A
    # second piece of news joins the first; once the kept news is older than PENDING_TICKS
    # it is dropped, and news after that is kept afresh (it was lost, both times).
    world = small_world(4, world={"starting_agents": 0, "size": [60, 60]})
    ann, = _thinkers(world, [("Ann", 5, 5)])
    tam = add_agent(world, "Tam", 6, 5)
    model = _Silent(world)
    pipeline = Pipeline(world, model)
    pipeline.on_tick(world.step())
    assert [job.agent for job in model.sent] == [ann]
    mind = pipeline.minds[ann]
    combat = world.store.get(ann, c.Combat)
    heard = world.store.get(ann, c.Perception).heard

    combat.last_attacker, combat.last_attacked = tam, world.tick
    pipeline._consider(ann, mind, True)
    assert mind.pending == ("attacked",)
    world.tick += 10
    heard.append({"tick": world.tick, "agent": tam, "to": ann, "text": "Ann, stop that"})
    pipeline._consider(ann, mind, True)
    assert mind.pending == ("attacked", "spoken to") and mind.pending_since == world.tick

    world.tick += pipeline_module.PENDING_TICKS + 1
    heard.append({"tick": world.tick, "agent": tam, "to": ann, "text": "Ann, are you there?"})
    pipeline._consider(ann, mind, True)
    assert mind.pending == ("spoken to",) and mind.pending_since == world.tick
    world.close()
