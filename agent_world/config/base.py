"""What every section is made of: ``setting`` (a documented field with its range) and
``ConfigError``."""

from __future__ import annotations

from dataclasses import field
from typing import Any

__all__ = ["ConfigError", "setting"]


class ConfigError(ValueError):
    """A configuration value is missing, unknown, of the wrong type or out of range."""


def setting(
    default: Any,
    doc: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """Declare a documented setting. ``low``/``high`` bound numbers (``low_open``: exclusive).

    A new simulation setting needs nothing more: what a world saved before it runs with is
    its rules version's business (``agent_world.core.rules.compat``)."""
    meta = {"doc": doc, "low": low, "high": high, "low_open": low_open, "choices": choices}
    if isinstance(default, (dict, list)):
        frozen_default = default
        return field(default_factory=lambda: type(frozen_default)(frozen_default), metadata=meta)
    return field(default=default, metadata=meta)

