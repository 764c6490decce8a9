"""Anthropic's Messages API. Structured output through one forced tool whose input schema is
the decision schema; the answer is the tool call's ``input``."""

from __future__ import annotations

from typing import Any

import orjson

from agent_world.llm.base import HTTPProvider
from agent_world.types import LLMRequest, LLMResponse, LLMUsage, ProviderError

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider"]

ANTHROPIC_VERSION = "2023-06-01"
TOOL = "decide"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class AnthropicProvider(HTTPProvider):
    name = "anthropic"

    def url(self) -> str:
        return f"{self.base_url}/messages"

    def headers(self) -> dict[str, str]:
        out = {"anthropic-version": ANTHROPIC_VERSION}
        if self._key:
            out["x-api-key"] = self._key
        return out

    def body(self, request: LLMRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            # The static rules are the cacheable prefix (ignored below the minimum length).
            "system": [{"type": "text", "text": request.system,
                        "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": request.prompt}],
            "max_tokens": request.max_tokens,
            "temperature": min(request.temperature, 1.0),
        }
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if self.structured == "schema" and request.schema is not None:
            body["tools"] = [{"name": TOOL, "description": "Choose what to do next.",
                              "input_schema": request.schema}]
            body["tool_choice"] = {"type": "tool", "name": TOOL}
        return body

    def parse(self, doc: dict[str, Any], request: LLMRequest, latency_s: float) -> LLMResponse:
        blocks = doc.get("content")
        if not isinstance(blocks, list):
            raise ProviderError("malformed", "the answer has no content list", status=200)
        stop = str(doc.get("stop_reason") or "end_turn")
        if stop == "refusal":
            raise ProviderError("refused", "the model refused to answer", status=200)
        text = ""
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                text = orjson.dumps(block["input"]).decode()
                break
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                text += block["text"]
        if not text.strip():
            raise ProviderError("empty", f"the answer has no text or tool call (stop_reason "
                                f"{stop!r})", status=200)
        usage: dict[str, Any] = doc["usage"] if isinstance(doc.get("usage"), dict) else {}
        tokens = LLMUsage(
            prompt_tokens=_int(usage.get("input_tokens"))
            + _int(usage.get("cache_read_input_tokens"))
            + _int(usage.get("cache_creation_input_tokens")),
            completion_tokens=_int(usage.get("output_tokens")),
            cached_tokens=_int(usage.get("cache_read_input_tokens")),
        )
        finish = "length" if stop == "max_tokens" else "stop"
        model = doc.get("model") if isinstance(doc.get("model"), str) else self.model
        return LLMResponse(text=text, usage=tokens, latency_s=latency_s, model=str(model),
                           finish_reason=finish)
