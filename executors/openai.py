"""OpenAI Chat Completions, and any compatible server (vLLM, Ollama, llama.cpp server, LM Studio)."""

from __future__ import annotations

import json

from executors.base import HttpExecutor, Parsed
from executors.parsing import JsonObject
from executors.schema import RunRequest, Usage

#: OpenAI caches prompts of 1,024 tokens and more on its own (no marker); the count of cached
#: prompt tokens comes back in ``usage.prompt_tokens_details.cached_tokens``.
MIN_CACHEABLE_TOKENS = 1024


class OpenAIExecutor(HttpExecutor):
    name = "openai"
    vendor = "openai"
    default_model = "gpt-4o-mini"
    env_base_url = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com/v1"
    env_keys = ("OPENAI_API_KEY",)

    def build(self, request: RunRequest) -> tuple[str, JsonObject, dict[str, str]]:
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.prompt})
        body: JsonObject = {"model": request.model, "messages": messages, **request.sampling("max_tokens")}
        if request.response_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgement", "schema": json.loads(request.response_schema)},
            }
        return f"{self.base_url}/chat/completions", body, self.headers()

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def cache_min_tokens(self, model: str) -> int | None:
        return MIN_CACHEABLE_TOKENS

    def parse(self, data: JsonObject) -> Parsed:
        message = data["choices"][0]["message"]
        usage = data.get("usage") or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        # Cached tokens are a subset of prompt_tokens: the uncached rest is input_tokens.
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        cached = min(max(cached, 0), max(prompt, 0))
        return Parsed(
            message.get("content") or "",
            Usage(
                input_tokens=prompt - cached,
                output_tokens=usage.get("completion_tokens") or 0,
                cache_read_tokens=cached,
            ),
            data.get("model"),
        )
