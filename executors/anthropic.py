"""Anthropic Messages API (``ANTHROPIC_BASE_URL`` for a proxy or a local stand-in)."""

from __future__ import annotations

from executors.base import HttpExecutor, Parsed, min_tokens_for
from executors.parsing import JsonObject
from executors.schema import RunRequest, Usage

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024  # the API requires max_tokens
CACHE_CONTROL = {"type": "ephemeral"}  # the 5-minute cache, refreshed by every read
#: Minimum cacheable prompt length by model (Anthropic's prompt-caching guide). A shorter prefix
#: marked for caching is processed normally and billed as plain input, so an unknown model gets
#: the lowest documented minimum: a needless marker costs nothing, a missing one loses the saving.
MIN_CACHEABLE_TOKENS: dict[str, int | None] = {
    "claude-3-haiku": 2048,
    "claude-3-5-haiku": 2048,
    "claude-haiku-4-5": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096,
}
DEFAULT_MIN_CACHEABLE_TOKENS = 1024  # Sonnet 3.7 / 4 / 4.5 / 4.6, Opus 4 / 4.1


class AnthropicExecutor(HttpExecutor):
    name = "anthropic"
    vendor = "anthropic"
    default_model = "claude-sonnet-4-5"
    env_base_url = "ANTHROPIC_BASE_URL"
    default_base_url = "https://api.anthropic.com"
    env_keys = ("ANTHROPIC_API_KEY",)

    def build(self, request: RunRequest) -> tuple[str, JsonObject, dict[str, str]]:
        body: JsonObject = {
            "model": request.model,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [{"role": "user", "content": request.prompt}],
        }
        if request.system and self.caches(request):
            # The artifact is the shared prefix of every call of a variant: cache it.
            body["system"] = [{"type": "text", "text": request.system, "cache_control": CACHE_CONTROL}]
        elif request.system:
            body["system"] = request.system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return f"{self.base_url}/v1/messages", body, self.headers()

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def cache_min_tokens(self, model: str) -> int | None:
        return min_tokens_for(model, MIN_CACHEABLE_TOKENS, DEFAULT_MIN_CACHEABLE_TOKENS)

    def parse(self, data: JsonObject) -> Parsed:
        text = "".join(block.get("text", "") for block in data["content"] if block.get("type") == "text")
        usage = data.get("usage") or {}
        # Anthropic's input_tokens already excludes the tokens written to or read from the cache.
        return Parsed(
            text,
            Usage(
                input_tokens=usage.get("input_tokens") or 0,
                output_tokens=usage.get("output_tokens") or 0,
                cache_write_tokens=usage.get("cache_creation_input_tokens") or 0,
                cache_read_tokens=usage.get("cache_read_input_tokens") or 0,
            ),
            data.get("model"),
        )
