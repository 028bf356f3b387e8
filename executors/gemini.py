"""Google Gemini generateContent (``GOOGLE_GEMINI_BASE_URL`` for a proxy or a local stand-in)."""

from __future__ import annotations

import json
from typing import Any

from executors.base import HttpExecutor
from executors.schema import RunRequest


class GeminiExecutor(HttpExecutor):
    name = "gemini"
    default_model = "gemini-2.5-flash"
    env_base_url = "GOOGLE_GEMINI_BASE_URL"
    default_base_url = "https://generativelanguage.googleapis.com"
    env_keys = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def build(self, request: RunRequest) -> tuple[str, dict[str, Any], dict[str, str]]:
        body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": request.prompt}]}]}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        config: dict[str, Any] = {}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.seed is not None:
            config["seed"] = request.seed
        if request.response_schema:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = json.loads(request.response_schema)
        if config:
            body["generationConfig"] = config
        headers = {"x-goog-api-key": self.api_key} if self.api_key else {}
        return f"{self.base_url}/v1beta/models/{request.model}:generateContent", body, headers

    def parse(self, data: dict[str, Any]) -> tuple[str, int, int, str | None]:
        candidate = data["candidates"][0]
        parts = (candidate.get("content") or {}).get("parts") or []
        text = "".join(part.get("text", "") for part in parts if not part.get("thought"))
        usage = data.get("usageMetadata") or {}
        return (
            text,
            int(usage.get("promptTokenCount", 0)),
            int(usage.get("candidatesTokenCount", 0)),
            data.get("modelVersion"),
        )
