"""Agent memories for prompts: a sliding window of recent events and messages per LLM agent,
folded into a running summary when it grows, saved with the world at every snapshot (the
save folder's ``minds/``, through ``LLMAgents.capture_minds``).

This is the LLM layer's own bookkeeping, not world state: it shapes prompts, never the
world, so replay does not need it.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import Any

from agent_world.core import events as ev
from agent_world.types import JSON, Event
from agent_world.worldlog import format_event

__all__ = ["AgentMemory", "MemoryBook", "MemoryView"]

SUMMARY_FACTS = 5
MAX_LINE = 120  # characters of one remembered line
PARTY_KEYS = ("agent", "target", "killer", "victim", "to")
SKIP = frozenset({ev.PRICE, ev.OVERRUN, ev.SKIPPED, "note"})


class AgentMemory:
    """``recent``: the last ``window`` lines word for word; ``facts``: how often each kind
    of older happening occurred (``"attack Elio#118": 3``), rendered as a one-line summary."""

    def __init__(self, window: int) -> None:
        if window < 2:
            raise ValueError(f"window must be >= 2, got {window}")
        self.window = window
        self.recent: deque[dict[str, Any]] = deque()
        self.facts: dict[str, int] = {}

    def add(self, tick: int, text: str, fact: str) -> None:
        self._keep({"tick": tick, "text": text, "fact": fact})

    def _keep(self, line: dict[str, Any]) -> None:
        self.recent.append(line)
        if len(self.recent) > self.window:
            for _ in range(self.window // 2):  # fold the older half into the summary
                old = self.recent.popleft()
                self.facts[old["fact"]] = self.facts.get(old["fact"], 0) + 1

    def summary(self) -> str:
        return _summary(self.facts)

    def render(self, tick: int) -> dict[str, Any]:
        return self.view().render(tick)

    def view(self) -> MemoryView:
        """The memory as it is now, to render later on any thread (copies: two C calls)."""
        return MemoryView(tuple(self.recent), self.facts.copy())

    def lines(self) -> list[dict[str, Any]]:
        """The recent lines as plain data (a line not yet read is made now)."""
        return [line.plain() if isinstance(line, _Line) else line for line in self.recent]

    def get_state(self) -> JSON:
        return {"window": self.window, "recent": self.lines(), "facts": dict(self.facts)}

    def set_state(self, state: JSON) -> None:
        """What ``get_state`` gave (ValueError naming what is wrong; nothing changes then)."""
        if not isinstance(state, dict):
            raise ValueError(f"an LLM agent's memory is an object, got {type(state).__name__}")
        recent = state.get("recent", [])
        facts = state.get("facts", {})
        if not isinstance(recent, list) or not isinstance(facts, dict):
            raise ValueError("an LLM agent's memory holds a list 'recent' and an object 'facts'")
        lines: deque[dict[str, Any]] = deque()
        for i, m in enumerate(recent):
            if (not isinstance(m, dict) or not isinstance(m.get("text"), str)
                    or not isinstance(m.get("fact"), str) or not isinstance(m.get("tick"), int)):
                raise ValueError(f"recent[{i}] is not {{tick, text, fact}}")
            lines.append({"tick": m["tick"], "text": m["text"], "fact": m["fact"]})
        counts = {str(k): int(v) for k, v in facts.items()}
        self.recent, self.facts = lines, counts
        while len(self.recent) > self.window:
            old = self.recent.popleft()
            self.facts[old["fact"]] = self.facts.get(old["fact"], 0) + 1


def _summary(facts: dict[str, int]) -> str:
    top = sorted(facts.items(), key=lambda kv: (-kv[1], kv[0]))[:SUMMARY_FACTS]
    return "; ".join(f"{fact} x{n}" if n > 1 else fact for fact, n in top)


@dataclass(frozen=True, slots=True)
class MemoryView:
    """An agent's memory at one moment, read while the loop thread goes on keeping new
    lines (an interview's prompt, /debug). Its lines are never changed once kept; a line's
    text, made when first read, is the same on any thread (two threads that make it at
    once make the same string)."""

    recent: tuple[dict[str, Any], ...]
    facts: dict[str, int]

    def summary(self) -> str:
        return _summary(self.facts)

    def render(self, tick: int) -> dict[str, Any]:
        """The prompt's ``Memory``: the summary of older lines and the recent ones, each
        dated from ``tick``."""
        out: dict[str, Any] = {}
        summary = self.summary()
        if summary:
            out["earlier"] = summary
        if self.recent:
            out["recent"] = [f"{tick - m['tick']} ticks ago: {m['text']}" for m in self.recent]
        return out


# Compiled once: a pattern made per agent id overflowed re's cache in a world of thousands
# of LLM agents, and compiling it again for every event line took most of the pipeline's
# time after each tick (issue 32 item 5).
_SELF = re.compile(r"\b(?:agent|target)=(\d+) (?:name|target_name)=\S+ ?")
_NOISE = re.compile(r" ?\b(?:item_id|heard_by)=\d+| \(heard by \d+\)")


def _for(line: str, eid: int) -> str:
    """The event as one short line for agent ``eid``'s prompt, from its world-log line
    (whitespace made single): without what the agent knows already (its own id and name)
    or cannot use (item ids, listeners)."""
    me = str(eid)
    text = _SELF.sub(lambda m: "" if m.group(1) == me else m.group(0), line)
    text = _NOISE.sub("", text)
    return text[:MAX_LINE]


class _Told:
    """One event as the memories of all its parties share it: its world-log line is made
    once, when the first of them needs it."""

    __slots__ = ("event", "line")

    def __init__(self, event: Event) -> None:
        self.event = event
        self.line: str | None = None

    def text_for(self, eid: int) -> str:
        if self.line is None:
            self.line = " ".join(format_event(self.event).split())
        return _for(self.line, eid)


class _Line(dict[str, Any]):
    """A remembered event, ``{"tick", "fact", "text"}`` like any line, whose ``text`` is
    made when it is first read (a prompt, /debug, a snapshot of the minds): most lines are
    folded into the summary unread, and making each line cost more than all the rest of
    the memory's work after a tick (issue 32 item 7). Events are never changed once
    emitted, so the text is the same whenever it is made."""

    __slots__ = ("eid", "told")

    def __init__(self, tick: int, fact: str, told: _Told, eid: int) -> None:
        self["tick"] = tick
        self["fact"] = fact
        self.told = told
        self.eid = eid

    def __missing__(self, key: str) -> str:
        if key != "text":
            raise KeyError(key)
        text = self["text"] = self.told.text_for(self.eid)
        return text

    def plain(self) -> dict[str, Any]:
        return {"tick": self["tick"], "text": self["text"], "fact": self["fact"]}


def _parties(event: Event) -> list[int]:
    out = []
    for key in PARTY_KEYS:
        value = event.get(key)
        if type(value) is int and value not in out:  # not a bool, nor anything else
            out.append(value)
    return out


def _label(event: Event, eid: int) -> str:
    if event.get("agent") == eid and isinstance(event.get("target_name"), str):
        return f"{event['type']} {event['target_name']}#{event.get('target')}"
    if event.get("agent") != eid and isinstance(event.get("name"), str):
        return f"{event['type']} by {event['name']}#{event.get('agent')}"
    return str(event["type"])


class MemoryBook:
    """Every LLM agent's memory; fed each tick's events on the LLM's loop thread (where
    prompts are rendered), never written from two threads."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.memories: dict[int, AgentMemory] = {}

    def of(self, eid: int) -> AgentMemory:
        memory = self.memories.get(eid)
        if memory is None:
            memory = self.memories[eid] = AgentMemory(self.window)
        return memory

    def view_of(self, eid: int) -> MemoryView:
        """Agent ``eid``'s memory as it is now, from any thread: copies made in one step
        each (the interpreter lock holds while they are made), and nothing created."""
        memory = self.memories.get(eid)
        return memory.view() if memory is not None else MemoryView((), {})

    def forget(self, eid: int) -> None:
        self.memories.pop(eid, None)

    def note(self, eid: int, tick: int, text: str, fact: str) -> None:
        self.of(eid).add(tick, text, fact)

    def on_events(self, tick: int, events: Iterable[Event], agents: Container[int]) -> None:
        """Each event's line to the memory of every agent of ``agents`` it names (its text
        made when first read)."""
        memories = self.memories
        for event in events:
            if event.get("type") in SKIP:
                continue
            told = None
            for eid in _parties(event):
                if eid in agents:
                    if told is None:
                        told = _Told(event)
                    memory = memories.get(eid) or self.of(eid)
                    memory._keep(_Line(tick, _label(event, eid), told, eid))

    # -- minds that last ------------------------------------------------------------------------

    def state_of(self, eid: int) -> JSON | None:
        """A copy of the agent's memory as JSON data (None: it remembers nothing yet). Cheap
        enough for the main thread: the lines themselves are never changed once made (a
        line not yet read is made now, at most ``window`` of them)."""
        memory = self.memories.get(eid)
        if memory is None or not (memory.recent or memory.facts):
            return None
        return {"window": memory.window, "recent": memory.lines(),
                "facts": dict(memory.facts)}

    def restore(self, eid: int, state: JSON) -> None:
        """The agent's memory as saved (ValueError when ``state`` is not one)."""
        memory = AgentMemory(self.window)
        memory.set_state(state)
        self.memories[eid] = memory
