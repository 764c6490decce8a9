"""Validated actions reused: brains make the same few actions over and over."""

from __future__ import annotations

from typing import Any

from agent_world.core.actions import Action

__all__ = ["make_action"]

_MEMO_SIZE = 4096
_memo: dict[tuple[str, tuple[tuple[str, Any], ...]], Action] = {}


def make_action(name: str, args: dict[str, Any]) -> Action:
    """A validated Action, reusing one already made for the same flat arguments (Actions are
    immutable, so sharing them is safe)."""
    if any(isinstance(v, dict) for v in args.values()):
        return Action(name=name, args=args)
    key = (name, tuple(sorted(args.items())))
    action = _memo.get(key)
    if action is None:
        if len(_memo) >= _MEMO_SIZE:
            _memo.clear()
        action = _memo[key] = Action(name=name, args=args)
    return action
