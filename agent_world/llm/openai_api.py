"""Any OpenAI-compatible chat-completions endpoint: OpenRouter, OpenAI, vLLM, Ollama's /v1,
llama.cpp's server, LM Studio."""

from __future__ import annotations

from typing import Any

from agent_world.llm.base import HTTPProvider
from agent_world.llm.http import estimate_tokens
from agent_world.types import LLMRequest, LLMResponse, LLMUsage, ProviderError

__all__ = ["OpenAIProvider"]

SCHEMA_NAME = "decision"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class OpenAIProvider(HTTPProvider):
    name = "openai"

    def __init__(self, *, app_url: str = "", app_title: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.app_url = app_url
        self.app_title = app_title

    @property
    def openrouter(self) -> bool:
        return "openrouter.ai" in self.base_url

    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        out = {}
        if self._key:
            out["Authorization"] = f"Bearer {self._key}"
        if self.openrouter:
            if self.app_url:
                out["HTTP-Referer"] = self.app_url
            if self.app_title:
                out["X-OpenRouter-Title"] = self.app_title
        return out

    def body(self, request: LLMRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": request.system},
                         {"role": "user", "content": request.prompt}],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        if self.structured == "schema" and request.schema is not None:
            # The nested form: llama.cpp's server ignores a flat {"schema": ...} silently.
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": SCHEMA_NAME, "strict": False, "schema": request.schema}}
        elif self.structured in ("schema", "json"):
            body["response_format"] = {"type": "json_object"}
        if self.openrouter and "response_format" in body:
            # Without this OpenRouter may route to a provider that drops response_format.
            body["provider"] = {"require_parameters": True}
        return body

    def parse(self, doc: dict[str, Any], request: LLMRequest, latency_s: float) -> LLMResponse:
        choices = doc.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProviderError("malformed", "the answer has no choices[0]", status=200)
        choice = choices[0]
        message: dict[str, Any] = (choice["message"] if isinstance(choice.get("message"), dict)
                                   else {})
        text = message.get("content")
        if not text:
            calls = message.get("tool_calls")
            if isinstance(calls, list) and calls and isinstance(calls[0], dict):
                fn = calls[0].get("function") or {}
                text = fn.get("arguments") if isinstance(fn, dict) else None
        finish = str(choice.get("finish_reason") or "stop")
        if finish == "content_filter":
            raise ProviderError("refused", "the answer was withheld by a content filter",
                                status=200)
        if not isinstance(text, str) or not text.strip():
            raise ProviderError("empty", f"the answer has no content (finish_reason "
                                f"{finish!r})", status=200)
        usage: dict[str, Any] = doc["usage"] if isinstance(doc.get("usage"), dict) else {}
        if usage:
            details = usage.get("prompt_tokens_details") or {}
            cost = usage.get("cost")
            tokens = LLMUsage(
                prompt_tokens=_int(usage.get("prompt_tokens")),
                completion_tokens=_int(usage.get("completion_tokens")),
                cached_tokens=_int(details.get("cached_tokens") if isinstance(details, dict)
                                   else 0),
                cost=float(cost) if isinstance(cost, (int, float)) and not isinstance(
                    cost, bool) else None,
            )
        else:  # local servers may omit usage: estimate it
            tokens = LLMUsage(prompt_tokens=estimate_tokens(request.system + request.prompt),
                              completion_tokens=estimate_tokens(text), estimated=True)
        model = doc.get("model") if isinstance(doc.get("model"), str) else self.model
        return LLMResponse(text=text, usage=tokens, latency_s=latency_s, model=str(model),
                           finish_reason="length" if finish == "length" else finish)
