"""OpenAI Chat Completions, and any compatible server (vLLM, Ollama, llama.cpp server, LM Studio)."""

from __future__ import annotations

import json
from typing import Any

from executors.base import HttpExecutor
from executors.schema import RunRequest


class OpenAIExecutor(HttpExecutor):
    name = "openai"
    default_model = "gpt-4o-mini"
    env_base_url = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com/v1"
    env_keys = ("OPENAI_API_KEY",)

    def build(self, request: RunRequest) -> tuple[str, dict[str, Any], dict[str, str]]:
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.prompt})
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.seed is not None:
            body["seed"] = request.seed
        if request.response_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgement", "schema": json.loads(request.response_schema)},
            }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return f"{self.base_url}/chat/completions", body, headers

    def parse(self, data: dict[str, Any]) -> tuple[str, int, int, str | None]:
        message = data["choices"][0]["message"]
        usage = data.get("usage") or {}
        return (
            message.get("content") or "",
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
            data.get("model"),
        )
