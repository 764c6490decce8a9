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
    legacy: Any = None,
) -> Any:
    """Declare a documented setting. ``low``/``high`` bound numbers (``low_open``: exclusive).

    ``legacy`` (simulation sections only) is the value a world saved before the setting
    existed runs with: the behaviour it had then, so that its replay and resume still agree
    with its log. Without one, such a world takes the default."""
    meta = {"doc": doc, "low": low, "high": high, "low_open": low_open, "choices": choices,
            "legacy": legacy}
    if isinstance(default, (dict, list)):
        frozen_default = default
        return field(default_factory=lambda: type(frozen_default)(frozen_default), metadata=meta)
    return field(default=default, metadata=meta)

