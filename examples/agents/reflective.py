"""Tier 3: an LLM agent with a retrieval memory that reflects on what happened to it.

    AW_LLM_KEY=... python main.py --config examples/agents/reflective.yaml

Everything it lived through goes into a BM25 ``RetrievalMemory``; each prompt holds the
memories most relevant to what it sees now (not merely the newest), and every 300 ticks it
asks the model what it has learned and keeps the lesson as a memory of its own. ``/debug
AGENT`` shows its reasoning trace: what it recalled, what it asked, what it answered.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_world.agents import LLMBrain, Memory, MemoryEntry, Observation, RetrievalMemory


class Reflective(LLMBrain):
    recall = 6
    reflect_every_ticks = 300

    def make_memory(self) -> Memory:
        return RetrievalMemory(capacity=2000)

    def build_prompt(self, obs: Observation, recalled: Sequence[MemoryEntry]) -> str:
        lessons = [m for m in self.memory.entries() if m.kind == "reflection"][-2:]
        prompt = super().build_prompt(obs, recalled)
        if lessons:
            learned = "\n".join(f"- {m.text}" for m in lessons)
            prompt = f"What you have learned so far:\n{learned}\n{prompt}"
        return prompt
