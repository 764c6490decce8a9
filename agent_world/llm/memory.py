"""Agent memories for prompts: a sliding window of recent events and messages per LLM agent,
folded into a running summary when it grows, saved in the save folder's ``memories/``.

This is the LLM layer's own bookkeeping, not world state: it shapes prompts, never the
world, so replay does not need it. Written off the main thread.
"""

from __future__ import annotations

import concurrent.futures
import re
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from agent_world.core import events as ev
from agent_world.persistence.files import write_atomic
from agent_world.types import JSON, Event
from agent_world.worldlog import format_event

__all__ = ["AgentMemory", "MemoryBook"]

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
        self.recent.append({"tick": tick, "text": text, "fact": fact})
        if len(self.recent) > self.window:
            for _ in range(self.window // 2):  # fold the older half into the summary
                old = self.recent.popleft()
                self.facts[old["fact"]] = self.facts.get(old["fact"], 0) + 1

    def summary(self) -> str:
        top = sorted(self.facts.items(), key=lambda kv: (-kv[1], kv[0]))[:SUMMARY_FACTS]
        return "; ".join(f"{fact} x{n}" if n > 1 else fact for fact, n in top)

    def render(self, tick: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        summary = self.summary()
        if summary:
            out["earlier"] = summary
        if self.recent:
            out["recent"] = [f"{tick - m['tick']} ticks ago: {m['text']}" for m in self.recent]
        return out

    def get_state(self) -> JSON:
        return {"window": self.window, "recent": list(self.recent), "facts": dict(self.facts)}

    def set_state(self, state: JSON) -> None:
        self.recent = deque(dict(m) for m in state.get("recent", []))
        self.facts = {str(k): int(v) for k, v in state.get("facts", {}).items()}
        while len(self.recent) > self.window:
            old = self.recent.popleft()
            self.facts[old["fact"]] = self.facts.get(old["fact"], 0) + 1


# Compiled once: a pattern made per agent id overflowed re's cache in a world of thousands
# of LLM agents, and compiling it again for every event line took most of the pipeline's
# time after each tick (issue 32 item 5).
_SELF = re.compile(r"\b(?:agent|target)=(\d+) (?:name|target_name)=\S+ ?")
_NOISE = re.compile(r" ?\b(?:item_id|heard_by)=\d+| \(heard by \d+\)")


def _compact(event: Event, eid: int) -> str:
    """The event as one short line for this agent's prompt: its world-log line without what
    the agent knows already (its own id and name) or cannot use (item ids, listeners)."""
    text = " ".join(format_event(event).split())
    me = str(eid)
    text = _SELF.sub(lambda m: "" if m.group(1) == me else m.group(0), text)
    text = _NOISE.sub("", text)
    return text[:MAX_LINE]


def _parties(event: Event) -> list[int]:
    out = []
    for key in PARTY_KEYS:
        value = event.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value not in out:
            out.append(value)
    return out


def _label(event: Event, eid: int) -> str:
    if event.get("agent") == eid and isinstance(event.get("target_name"), str):
        return f"{event['type']} {event['target_name']}#{event.get('target')}"
    if event.get("agent") != eid and isinstance(event.get("name"), str):
        return f"{event['type']} by {event['name']}#{event.get('agent')}"
    return str(event["type"])


class MemoryBook:
    """Every LLM agent's memory; fed each tick's events on the main thread."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.memories: dict[int, AgentMemory] = {}
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None

    def of(self, eid: int) -> AgentMemory:
        memory = self.memories.get(eid)
        if memory is None:
            memory = self.memories[eid] = AgentMemory(self.window)
        return memory

    def forget(self, eid: int) -> None:
        self.memories.pop(eid, None)

    def note(self, eid: int, tick: int, text: str, fact: str) -> None:
        self.of(eid).add(tick, text, fact)

    def on_events(self, tick: int, events: Iterable[Event], agents: Iterable[int]) -> None:
        concerned = set(agents)
        if not concerned:
            return
        for event in events:
            if event.get("type") in SKIP:
                continue
            for eid in _parties(event):
                if eid in concerned:
                    self.of(eid).add(tick, _compact(event, eid), _label(event, eid))

    # -- files ---------------------------------------------------------------------------------

    def get_state(self) -> JSON:
        return {str(eid): m.get_state() for eid, m in sorted(self.memories.items())}

    def load(self, folder: Path, agents: Iterable[int]) -> int:
        """Read ``memories/<id>.json`` for these agents; returns how many were found."""
        found = 0
        for eid in agents:
            path = folder / f"{eid}.json"
            try:
                doc = orjson.loads(path.read_bytes())
            except FileNotFoundError:
                continue
            except (OSError, orjson.JSONDecodeError):
                continue  # a damaged memory is only a poorer prompt; start afresh
            self.of(eid).set_state(doc.get("memory", {}))
            found += 1
        return found

    def save(self, folder: Path, names: dict[int, str], *, wait: bool = False) -> None:
        """Write every memory (copied now, on the calling thread) on a writer thread."""
        docs = {eid: {"agent": eid, "name": names.get(eid, ""), "memory": m.get_state()}
                for eid, m in self.memories.items()}
        if self._writer is None:
            self._writer = concurrent.futures.ThreadPoolExecutor(1, "llm-memory")
        future = self._writer.submit(_write_all, folder, docs)
        if wait:
            future.result(timeout=30)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None


def _write_all(folder: Path, docs: dict[int, dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for eid, doc in docs.items():
        write_atomic(folder / f"{eid}.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2))
