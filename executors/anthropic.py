"""Anthropic Messages API (``ANTHROPIC_BASE_URL`` for a proxy or a local stand-in)."""

from __future__ import annotations

from typing import Any

from executors.base import HttpExecutor
from executors.schema import RunRequest

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024  # the API requires max_tokens


class AnthropicExecutor(HttpExecutor):
    name = "anthropic"
    default_model = "claude-sonnet-4-5"
    env_base_url = "ANTHROPIC_BASE_URL"
    default_base_url = "https://api.anthropic.com"
    env_keys = ("ANTHROPIC_API_KEY",)

    def build(self, request: RunRequest) -> tuple[str, dict[str, Any], dict[str, str]]:
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [{"role": "user", "content": request.prompt}],
        }
        if request.system:
            body["system"] = request.system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        headers = {"anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return f"{self.base_url}/v1/messages", body, headers

    def parse(self, data: dict[str, Any]) -> tuple[str, int, int, str | None]:
        text = "".join(block.get("text", "") for block in data["content"] if block.get("type") == "text")
        usage = data.get("usage") or {}
        return text, int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), data.get("model")
