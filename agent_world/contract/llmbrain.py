"""Tier 3: ``LLMBrain``, a brain that asks the configured LLM, with a memory of its own, a
reflection on a schedule and a reasoning trace.

It runs on the same path as every brain that is not built in: the thinking layer's
triggers, queue, deadline and fallback, its answers checked and logged as ``plan`` inputs
(so replay never calls the model). What a subclass changes is the thinking itself:

- ``make_memory()``: which ``Memory`` it keeps (``EmbeddingMemory`` by default: by meaning
  when ``minds.embeddings`` names an endpoint, else BM25);
- ``system_prompt()`` and ``build_prompt(obs, recalled)``: what the model reads;
- ``parse(text)``: how its answer becomes decisions;
- ``remember(...)``: what goes into memory; ``reflect()``: what it distils from it;
- ``interview(question, obs)`` and ``interview_prompt(question, obs, recalled)``: how it
  answers an interviewer (``/ask``, surveys), in its own voice, from its memory.
- ``get_state()``/``set_state()``: its memory (and name) saved with the world at every
  snapshot and given back on resume and fork (docs/agents.md, "Minds that last").

Every step writes a line to the reasoning trace (``/debug AGENT`` shows it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from agent_world.contract.answer import decide_from_text
from agent_world.contract.brains import Brain
from agent_world.contract.decision import Decision, DecisionError
from agent_world.contract.memory import (
    EmbeddingMemory,
    Memory,
    MemoryEntry,
    NoEmbeddings,
    within_tokens,
)
from agent_world.contract.observation import Observation
from agent_world.core import events as ev
from agent_world.worldlog import format_event

__all__ = ["ANSWER_FORMAT", "LLMBrain"]

ANSWER_FORMAT = ('Answer with one JSON object and nothing else: {"thought": "<one short '
                 'sentence>", "plan": [{"action": "<name>", "args": {...}}]}')
INTERVIEWED = ("You are {name}, an agent living in a small simulated world. Someone from "
               "outside the world is interviewing you. Answer in your own voice, in the first "
               "person, from what you perceive and remember, in at most three sentences of "
               "plain text: no JSON, no lists.")
REFLECTION = ("Here is what happened to {name} lately, oldest first:\n{lines}\n\nIn at most "
              "two sentences, what has {name} learned that should guide its next choices? "
              "Plain text, no JSON.")


class LLMBrain(Brain):
    """An agent that thinks with the configured LLM (``llm.provider``); registered like
    any brain. It needs an LLM: without one, start-up stops naming it. ``model`` names
    the model profile (``llm.models``) its ``self.llm`` calls; an unknown one stops
    start-up naming the known ones."""

    model = ""  # the model profile it asks (llm.models NAME); '' the default (llm)
    recall = 5  # memories retrieved into each prompt
    recall_tokens = 600  # at most this much recalled text in a prompt (about 4 characters each)
    max_actions = 3  # a plan of at most this many actions
    reflect_every_ticks = 600

    def __init__(self) -> None:
        self.memory: Memory = self.make_memory()
        self.agent_id = 0
        self.name = ""

    def make_memory(self) -> Memory:
        """Its memory: recalled by meaning when the world has an embedding endpoint
        (``minds.embeddings``), by BM25 otherwise and whenever the endpoint fails."""
        return EmbeddingMemory(self.embed, capacity=500)

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """The embedding vectors of ``texts`` from the world's endpoint (``self.llm.embed``;
        ``NoEmbeddings`` when there is none)."""
        embed = getattr(self.llm, "embed", None)
        if embed is None:
            raise NoEmbeddings("no embedding endpoint (minds.embeddings)")
        vectors: Sequence[Sequence[float]] = embed(texts)
        return vectors

    # -- minds that last -----------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """Its memory (entries oldest first: memories, decisions, reflections) and name."""
        return {"name": self.name, "memory": self.memory.get_state()}

    def set_state(self, state: Any) -> None:
        if not isinstance(state, dict) or "memory" not in state:
            raise ValueError("an LLMBrain's state is {name, memory}")
        self.memory.set_state(state["memory"])
        self.name = str(state.get("name") or self.name)

    # -- the prompt and the answer ---------------------------------------------------------

    def system_prompt(self) -> str:
        """The world's rules and the action list, the same text LLM agents get (and so the
        same cacheable prefix)."""
        assert self.llm is not None
        return self.llm.rules()

    def query(self, obs: Observation) -> str:
        """What to look up in memory now: who and what is around, what was heard."""
        words = [a.name for a in obs.agents[:5]] + [i.kind for i in obs.items[:5]]
        words += [h.text for h in obs.heard[-3:]] + [o.sender_name for o in obs.offers]
        if obs.me.attacked_by is not None:
            words.append(f"attack {obs.me.attacked_by.name}")
        if obs.me.hunger > 50:
            words.append("food eat hungry")
        return " ".join(words)

    def build_prompt(self, obs: Observation, recalled: Sequence[MemoryEntry]) -> str:
        memories = "\n".join(f"- t={m.tick}: {m.text}" for m in recalled) or "- nothing yet"
        return (f"You are {obs.me.name}.\nWhat you remember that may matter now:\n"
                f"{memories}\nNow (JSON): {orjson.dumps(obs.prompt_view()).decode()}\n"
                f"What do you do next? {ANSWER_FORMAT}")

    def parse(self, text: str) -> list[Decision]:
        """The model's answer as decisions (DecisionError when it is not one)."""
        answer = decide_from_text(text, max_actions=self.max_actions)
        return [Decision(a.name, dict(a.args), reasoning=answer.thought or None)
                for a in answer.actions]

    # -- the brain -----------------------------------------------------------------------------

    def on_spawn(self, agent_id: int) -> None:
        self.agent_id = agent_id

    def decide(self, obs: Observation, actions: Mapping[str, Any]) -> list[Decision]:
        if self.llm is None:
            raise DecisionError("an LLMBrain needs an LLM (llm.provider)")
        self.name = obs.me.name
        recalled = within_tokens(self.memory.retrieve(self.query(obs), self.recall),
                                 self.recall_tokens) if self.recall else []
        self.trace(f"recalled {len(recalled)}: " + " | ".join(m.text[:60] for m in recalled))
        prompt = self.build_prompt(obs, recalled)
        self.trace(f"asked the model ({len(prompt)} characters)")
        text = self.llm.complete(prompt, system=self.system_prompt())
        self.trace(f"answer: {text[:200]}")
        decisions = self.parse(text)
        self.remember(obs.tick, "I decided: " + ", ".join(
            f"{d.action}{dict(d.args) or ''}" for d in decisions)
            + (f" ({decisions[0].reasoning})" if decisions[0].reasoning else ""), "decision")
        return decisions

    def remember(self, tick: int, text: str, kind: str) -> None:
        self.memory.store(text, tick=tick, kind=kind)

    def on_event(self, event: Mapping[str, Any]) -> None:
        if event.get("type") in (ev.PRICE, "note"):  # a note is the operator's, not the world's
            return
        self.remember(int(event.get("tick", 0) or 0), " ".join(format_event(dict(event)).split()),
                      str(event.get("type", "event")))

    def on_result(self, action: str, outcome: str) -> None:
        if outcome != "ok":
            last = self.memory.entries()[-1:] or [MemoryEntry("", 0)]
            self.remember(last[0].tick, f"{action} failed: {outcome}", "failure")

    def interview_prompt(self, question: str, obs: Observation,
                         recalled: Sequence[MemoryEntry]) -> str:
        """What the model reads to answer an interviewer: the memories ``question`` recalls,
        what the agent perceives now, the question."""
        memories = "\n".join(f"- t={m.tick}: {m.text}" for m in recalled) or "- nothing yet"
        return (f"What you remember that may matter:\n{memories}\nWhat you perceive now "
                f"(JSON): {orjson.dumps(obs.prompt_view()).decode()}\n"
                f"The interviewer asks: \"{question}\"\nYour answer:")

    def interview(self, question: str, obs: Observation) -> str | None:
        """The model's answer, as this agent, with the memories the question recalls."""
        if self.llm is None:
            return None
        self.name = self.name or obs.me.name
        recalled = (self.memory.retrieve(f"{question} {self.query(obs)}", self.recall)
                    if self.recall else [])
        return self.llm.complete(self.interview_prompt(question, obs, recalled),
                                 system=INTERVIEWED.format(name=obs.me.name), max_tokens=160)

    def reflect(self) -> None:
        """Ask the model what the recent memories teach; keep the lesson as a memory."""
        if self.llm is None:
            return
        recent = self.memory.entries()[-20:]
        if len(recent) < 3:
            return
        lines = "\n".join(f"- t={m.tick}: {m.text}" for m in recent)
        lesson = self.llm.complete(REFLECTION.format(name=self.name or "the agent",
                                                     lines=lines), max_tokens=120)
        lesson = " ".join(lesson.split())
        if lesson:
            self.remember(recent[-1].tick, f"lesson: {lesson}", "reflection")
            self.trace(f"reflected: {lesson[:200]}")
