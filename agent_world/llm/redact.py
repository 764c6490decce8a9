"""Keeping secrets out of text: every message that may reach a log, a save, /debug or an
exception passes through a ``Redactor`` holding the keys in use."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["MASK", "Redactor"]

MASK = "[REDACTED]"


class Redactor:
    """Replaces each known secret (and a long prefix of it, as some servers echo a key
    truncated) by ``[REDACTED]``. Its repr names no secret."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: list[str] = []
        for secret in secrets:
            if secret:
                self.add(secret)

    def add(self, secret: str) -> None:
        if len(secret) < 4:  # too short to search for without mangling ordinary text
            return
        forms = {secret}
        if len(secret) >= 16:
            forms.add(secret[:12])  # "sk-or-v1-abc...": servers echo truncated keys
        self._secrets = sorted({*self._secrets, *forms}, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def scrub(self, value: Any) -> Any:
        """JSON data with every string (dict keys too) redacted; the value itself when
        there is nothing to hide. Data nests as deep as JSON allows (orjson: 255 levels)."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self(k) if isinstance(k, str) else k: self.scrub(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        return value

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secret forms)"
