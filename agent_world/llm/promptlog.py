"""``llm.log_prompts``: every prompt and answer, as the model saw and wrote them, in
``saves/NAME/llm/prompts.jsonl`` (keys redacted), so a person can read exactly what an agent
was told and what came back.

One JSON line per model answer (or failure). The rules every agent shares are long and
rarely change, so a ``{"kind": "system", "sha": ..., "text": ...}`` line holds them once
per file and each call names them by ``system``; together the two lines are the whole
request. Worker threads write (under a lock); past ``MAX_BYTES`` the file moves to
``prompts.jsonl.1`` (replacing an older one) and a new one starts. A write the disk refuses
is counted and dropped: the log is for reading, the world does not wait on it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import orjson

from agent_world.llm.redact import Redactor

__all__ = ["MAX_BYTES", "PromptLog"]

MAX_BYTES = 50_000_000


class PromptLog:
    def __init__(self, path: Path, redact: Redactor, *, max_bytes: int = MAX_BYTES) -> None:
        self.path = path
        self.redact = redact
        self.max_bytes = max_bytes
        self.lines = 0
        self.failed = 0
        self._lock = threading.Lock()
        self._systems: set[str] = set()  # rule texts already in the current file

    def record(self, *, tick: int, agent: int, request: int, system: str, prompt: str,
               answer: str | None, error: str = "", **extra: Any) -> None:
        sha = hashlib.sha256(system.encode()).hexdigest()[:16]
        line = {"kind": "call", "tick": tick, "agent": agent, "request": request,
                "system": sha, "prompt": prompt, "answer": answer, **extra}
        if error:
            line["error"] = error
        with self._lock:
            try:
                self._rotate_if_full()
                data = b""
                if sha not in self._systems:
                    data += orjson.dumps({"kind": "system", "sha": sha, "text": system}) + b"\n"
                data += orjson.dumps(line) + b"\n"
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("ab") as f:
                    f.write(self.redact(data.decode()).encode())
                self._systems.add(sha)
                self.lines += 1
            except OSError:
                self.failed += 1

    def _rotate_if_full(self) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size >= self.max_bytes:
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self._systems.clear()
