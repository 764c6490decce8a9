"""Argument types shared by the command-line entry points: each turns one argument's text
into its value or raises ArgumentTypeError naming the value and what was expected."""

from __future__ import annotations

import argparse

__all__ = ["positive_int", "seed", "speed", "tick"]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def tick(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a tick number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a tick >= 0, got {value}")
    return value


def seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
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
