"""A model's answer: the JSON an LLM answers with, its schema, and the one place its text
becomes validated ``Action`` records (a ``TextDecision``, or a ``DecisionError`` saying what
was wrong, which goes into the agent's next prompt). LLM agents and ``LLMBrain`` read
answers with it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from agent_world.contract.decision import DecisionError
from agent_world.core.actions import (
    Action,
    ActionError,
    action_schema,
    one_line,
    parse_action,
)

__all__ = [
    "ASK_AGAIN_S",
    "MAX_THOUGHT",
    "DecisionError",
    "TextDecision",
    "decide_from_text",
    "decision_schema",
    "extract_json",
    "parse_decision",
]

MAX_THOUGHT = 200
ASK_AGAIN_S = (5, 600)  # the bounds of a decision's "ask me again in" hint, in seconds
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDecision:
    actions: tuple[Action, ...]
    thought: str = ""
    ask_again_s: int | None = None  # the model's hint: nothing needs it before then

    def __post_init__(self) -> None:
        if not self.actions:
            raise DecisionError("a decision needs at least one action")

    def describe(self) -> str:
        return ", ".join(str(a) for a in self.actions)


def decision_schema(max_actions: int) -> dict[str, Any]:
    """What the model must answer: a short thought and a plan of 1..max_actions actions."""
    return {
        "type": "object",
        "properties": {
            "thought": {"type": "string", "maxLength": MAX_THOUGHT},
            "plan": {"type": "array", "minItems": 1, "maxItems": max_actions,
                     "items": action_schema()},
            "ask_again_s": {"type": "integer", "minimum": ASK_AGAIN_S[0],
                            "maximum": ASK_AGAIN_S[1]},
        },
        "required": ["thought", "plan"],
        "additionalProperties": False,
    }


def _top_level_objects(text: str) -> list[str]:
    """Every balanced top-level ``{...}`` in ``text``, minding strings and escapes. An object
    that never closes (an answer cut off mid-way) ends the search: the objects nested in it
    are parts of an incomplete answer, never a decision of their own."""
    found = []
    start = text.find("{")
    while start != -1:
        depth = 0
        in_string = False
        escaped = False
        end = -1
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end == -1:
            break
        found.append(text[start:end + 1])
        start = text.find("{", end + 1)
    return found


def extract_json(text: str) -> Any:
    """The JSON document in a model's answer: the whole text, a fenced block, or the first
    balanced top-level object inside prose that parses."""
    candidates = [text.strip()]
    candidates.extend(m.group(1).strip() for m in _FENCE.finditer(text))
    candidates.extend(_top_level_objects(text))
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
    snippet = " ".join(text.split())[:80]
    raise DecisionError(f"no complete JSON object found in the answer (it began: "
                        f"{snippet!r})")


def parse_decision(doc: Any, *, max_actions: int) -> TextDecision:
    """``{"thought": ..., "plan": [{"action": ..., "args": {...}}, ...]}``; a single action
    object is accepted as a one-step plan."""
    if not isinstance(doc, Mapping):
        raise DecisionError(f"the answer must be a JSON object, got {type(doc).__name__}")
    thought = doc.get("thought", "")
    if not isinstance(thought, str):
        raise DecisionError(f"'thought' must be text, got {type(thought).__name__}")
    raw = doc.get("plan", doc.get("actions"))
    if raw is None and ("action" in doc or "name" in doc):
        raw = [doc]
    if not isinstance(raw, list) or not raw:
        raise DecisionError("'plan' must be a non-empty list of actions, like "
                            '[{"action": "wander", "args": {}}]')
    if len(raw) > max_actions:
        raise DecisionError(f"'plan' has {len(raw)} actions; at most {max_actions}")
    actions = []
    for i, step in enumerate(raw):
        try:
            actions.append(parse_action(step))
        except ActionError as exc:
            raise DecisionError(f"plan[{i}]: {exc}") from None
    return TextDecision(actions=tuple(actions), thought=one_line(thought)[:MAX_THOUGHT],
                    ask_again_s=_ask_again(doc.get("ask_again_s")))


def _ask_again(value: Any) -> int | None:
    """The hint in whole seconds within ``ASK_AGAIN_S`` (a number out of range is held to
    it; a number written as text is read); None when absent."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise DecisionError(f"'ask_again_s' must be a number of seconds, got "
                                f"{value!r:.40}") from None
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value)):
        raise DecisionError(f"'ask_again_s' must be a number of seconds, got "
                            f"{type(value).__name__}")
    low, high = ASK_AGAIN_S
    return int(min(high, max(low, value)))


def decide_from_text(text: str, *, max_actions: int) -> TextDecision:
    return parse_decision(extract_json(text), max_actions=max_actions)
