"""Google Gemini generateContent (``GOOGLE_GEMINI_BASE_URL`` for a proxy or a local stand-in)."""

from __future__ import annotations

import json

from executors.base import HttpExecutor, Parsed, min_tokens_for
from executors.parsing import JsonObject
from executors.schema import RunRequest, Usage

#: Implicit caching (no marker) by model family: 2.5 models cache prefixes from 2,048 tokens,
#: later ones from 4,096; 2.0 models have no implicit cache. ``usageMetadata.cachedContentTokenCount``
#: counts the cached part of ``promptTokenCount``.
MIN_CACHEABLE_TOKENS: dict[str, int | None] = {"gemini-2.0": None, "gemini-2.5": 2048}
DEFAULT_MIN_CACHEABLE_TOKENS = 4096


class GeminiExecutor(HttpExecutor):
    name = "gemini"
    vendor = "google"
    default_model = "gemini-2.5-flash"
    env_base_url = "GOOGLE_GEMINI_BASE_URL"
    default_base_url = "https://generativelanguage.googleapis.com"
    env_keys = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def build(self, request: RunRequest) -> tuple[str, JsonObject, dict[str, str]]:
        body: JsonObject = {"contents": [{"role": "user", "parts": [{"text": request.prompt}]}]}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        config: JsonObject = dict(request.sampling("maxOutputTokens"))
        if request.response_schema:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = json.loads(request.response_schema)
        if config:
            body["generationConfig"] = config
        headers = {"x-goog-api-key": self.api_key} if self.api_key else {}
        return f"{self.base_url}/v1beta/models/{request.model}:generateContent", body, headers

    def cache_min_tokens(self, model: str) -> int | None:
        return min_tokens_for(model, MIN_CACHEABLE_TOKENS, DEFAULT_MIN_CACHEABLE_TOKENS)

    def parse(self, data: JsonObject) -> Parsed:
        candidate = data["candidates"][0]
        parts = (candidate.get("content") or {}).get("parts") or []
        text = "".join(part.get("text", "") for part in parts if not part.get("thought"))
        usage = data.get("usageMetadata") or {}
        prompt = int(usage.get("promptTokenCount") or 0)
        cached = min(max(int(usage.get("cachedContentTokenCount") or 0), 0), max(prompt, 0))
        return Parsed(
            text,
            Usage(
                input_tokens=prompt - cached,
                output_tokens=usage.get("candidatesTokenCount") or 0,
                cache_read_tokens=cached,
            ),
            data.get("modelVersion"),
        )
