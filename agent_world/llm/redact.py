"""Keeping secrets out of text: every message that may reach a log, a save, /debug or an
exception passes through a ``Redactor`` holding the keys in use."""

from __future__ import annotations

from collections.abc import Iterable

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

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secret forms)"
