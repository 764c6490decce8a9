"""The /agents protocol: the messages a client sends, checked into plain records.

Every message is one JSON object with a ``type``. A message that cannot be understood is
answered with an ``error`` naming what is wrong and the connection stays open; only a bad
token or a flood closes it (docs/agents.md, "Agents in any language").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["PROTOCOL", "Ask", "Auth", "Claim", "ClientMessage", "Decide", "Ping",
           "ProtocolError", "Release", "Spawn", "parse_message"]

PROTOCOL = 1
MAX_ID = 2**53  # a JSON number every language reads exactly


class ProtocolError(ValueError):
    """A message the server cannot take; the text is sent back to the client."""


@dataclass(frozen=True, slots=True)
class Auth:
    token: str


@dataclass(frozen=True, slots=True)
class Claim:
    agent: int
    every_ticks: int | None


@dataclass(frozen=True, slots=True)
class Spawn:
    name: str
    x: int | None
    y: int | None
    personality: str | None
    every_ticks: int | None


@dataclass(frozen=True, slots=True)
class Decide:
    agent: int
    request: int
    decision: Any  # checked by ``as_plan`` like every brain's answer


@dataclass(frozen=True, slots=True)
class Release:
    agent: int


@dataclass(frozen=True, slots=True)
class Ping:
    pass


@dataclass(frozen=True, slots=True)
class Ask:
    """An interview (``/ask``): any living agent, not only the client's own."""

    agent: int
    question: str
    remember: bool | None  # None: ``talk.remember``


ClientMessage = Auth | Claim | Spawn | Decide | Release | Ping | Ask
TYPES = ("auth", "claim", "spawn", "decide", "release", "ping", "ask")


def _int(msg: dict[str, Any], key: str, *, optional: bool = False,
         low: int = 0) -> int | None:
    value = msg.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{msg['type']}: {key!r} must be a whole number, got "
                            f"{orjson.dumps(value).decode()[:40]}")
    if not low <= value <= MAX_ID:
        bound = f"at least {low}" if value < low else f"at most {MAX_ID}"
        raise ProtocolError(f"{msg['type']}: {key!r} must be {bound}, got {value}")
    return value


def _str(msg: dict[str, Any], key: str, *, optional: bool = False) -> str | None:
    value = msg.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise ProtocolError(f"{msg['type']}: {key!r} must be a non-empty string")
    return value


def parse_message(text: str | bytes) -> ClientMessage:
    """The message in ``text``; ProtocolError saying what is wrong with it."""
    try:
        msg = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"not JSON ({exc}); send one JSON object per message") from None
    if not isinstance(msg, dict):
        raise ProtocolError(f"a message is a JSON object with a \"type\", got "
                            f"{type(msg).__name__}")
    kind = msg.get("type")
    if kind not in TYPES:
        raise ProtocolError(f"unknown message type {kind!r}; expected one of "
                            f"{', '.join(TYPES)}")
    if kind == "auth":
        token = _str(msg, "token")
        assert token is not None
        return Auth(token)
    if kind == "claim":
        agent = _int(msg, "agent")
        assert agent is not None
        return Claim(agent, _int(msg, "every_ticks", optional=True, low=1))
    if kind == "spawn":
        name = _str(msg, "name")
        assert name is not None
        x = _int(msg, "x", optional=True, low=-MAX_ID)
        y = _int(msg, "y", optional=True, low=-MAX_ID)
        if (x is None) != (y is None):
            raise ProtocolError("spawn: give both 'x' and 'y', or neither")
        return Spawn(name, x, y, _str(msg, "personality", optional=True),
                     _int(msg, "every_ticks", optional=True, low=1))
    if kind == "decide":
        agent = _int(msg, "agent")
        request = _int(msg, "request", low=1)
        assert agent is not None and request is not None
        if "decision" not in msg:
            raise ProtocolError("decide: 'decision' is missing: an action "
                                "{\"action\": NAME, \"args\": {...}} or a list of them")
        return Decide(agent, request, msg["decision"])
    if kind == "release":
        agent = _int(msg, "agent")
        assert agent is not None
        return Release(agent)
    if kind == "ask":
        agent = _int(msg, "agent")
        question = _str(msg, "question")
        remember = msg.get("remember")
        if remember is not None and not isinstance(remember, bool):
            raise ProtocolError(f"ask: 'remember' must be true or false, got "
                                f"{orjson.dumps(remember).decode()[:40]}")
        assert agent is not None and question is not None
        return Ask(agent, question, remember)
    return Ping()
