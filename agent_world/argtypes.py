"""Argument types shared by the command-line entry points: each turns one argument's text
into its value or raises ArgumentTypeError naming the value and what was expected."""

from __future__ import annotations

import argparse

__all__ = ["agent_ids", "positive_int", "seed", "speed", "tick"]


def _whole(text: str, noun: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None


def positive_int(text: str) -> int:
    value = _whole(text, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def tick(text: str) -> int:
    value = _whole(text, "a tick number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a tick >= 0, got {value}")
    return value


def agent_ids(text: str) -> tuple[int, ...]:
    """``17,23``: agent ids, each >= 1."""
    try:
        ids = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected agent ids like 17,23, got {text!r}"
                                         ) from None
    if not ids or any(i < 1 for i in ids):
        raise argparse.ArgumentTypeError(f"expected agent ids >= 1 like 17,23, got {text!r}")
    return ids


def seed(text: str) -> int:
    value = _whole(text, "a whole number")
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"expected 0 <= seed < 2**63, got {value}")
    return value


def speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a speed factor, got {text!r}") from None
    if not 0 < value <= 1000:
        raise argparse.ArgumentTypeError(f"expected 0 < speed <= 1000, got {value}")
    return value
