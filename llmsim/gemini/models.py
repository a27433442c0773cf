"""Models as the Gemini API lists them (`models.list` pages with `pageSize` and `pageToken`, `models.get`): Google's
models of the profiles, or every model when none is Google's (a loaded MLX model, a custom profiles folder)."""

from __future__ import annotations

import base64
from typing import Any

from llmsim.timing.profiles import Profile

GENERATE = ["generateContent", "countTokens", "createCachedContent", "batchGenerateContent"]
EMBED = ["embedContent", "countTextTokens", "countTokens", "asyncBatchEmbedContent"]
DEFAULT_PAGE = 50
MAX_PAGE = 1000


def model_info(name: str, profile: Profile) -> dict[str, Any]:
    display = " ".join(word.capitalize() if not word[:1].isdigit() else word for word in name.split("-"))
    info: dict[str, Any] = {"name": f"models/{name}", "version": "001", "displayName": display,
                            "description": f"{display} (simulated by LLMSim)",
                            "inputTokenLimit": profile.embedding.max_input_tokens if profile.embedding else
                            profile.context_window,
                            "outputTokenLimit": 1 if profile.embedding else profile.max_output_tokens,
                            "supportedGenerationMethods": EMBED if profile.embedding else GENERATE}
    if profile.embedding is None:
        info.update(temperature=1, topP=0.95, topK=64, maxTemperature=2)
        if profile.reasoning is not None:
            info["thinking"] = True
    return info


def _listed(profiles: list[Profile]) -> list[Profile]:
    google = [p for p in profiles if p.owned_by == "google"]
    return google or profiles


def page(profiles: list[Profile], page_size: int | None, page_token: str | None) -> dict[str, Any]:
    listed = _listed(profiles)
    size = min(page_size or DEFAULT_PAGE, MAX_PAGE)
    try:
        start = int(base64.urlsafe_b64decode(page_token.encode()).decode()) if page_token else 0
    except ValueError:
        start = 0
    chunk = listed[start:start + size]
    out: dict[str, Any] = {"models": [model_info(p.id, p) for p in chunk]}
    if start + size < len(listed):
        out["nextPageToken"] = base64.urlsafe_b64encode(str(start + size).encode()).decode()
    return out
