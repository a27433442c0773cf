"""POST /responses/compact: a long history becomes its user messages plus one opaque compaction item.

The compaction item's `encrypted_content` is opaque, as the real API's is, and sized like a summary:
about a tenth of the tokens of the items it replaces, so a request that sends it back instead of the
history counts that many fewer input tokens.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from llmsim import ids, tokens
from llmsim.generation import Usage
from llmsim.responses import run, schema, translate
from llmsim.responses.events import usage_dict

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline


class CompactRequest(schema.Strict):
    """The SDK's `ResponseCompactParams`."""

    model: str | None
    input: list[schema.InputItem] | None = Field(default_factory=list)
    instructions: str | None = None
    previous_response_id: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    prompt_cache_options: dict[str, Any] | None = None
    service_tier: Literal["auto", "default", "fast", "flex", "priority", "scale", "ultrafast"] | None = None
    image: dict[str, Any] | None = None
    client_metadata: dict[str, str] | None = None  # Codex's, as on every request it makes

    _string_input = field_validator("input", mode="before")(lambda value: schema.as_items(value))


SUMMARY_SHARE = 0.1
MIN_SUMMARY_TOKENS = 16


def opaque(tokens_wanted: int) -> str:
    """Random URL-safe text of about `tokens_wanted` tokens (random base64 runs ~0.9 tokens per byte)."""
    return "gAAAAA" + secrets.token_urlsafe(tokens_wanted)


def compact(pipeline: Pipeline, body: Any, owner: str = "", lenient: list[str] | None = None) -> dict[str, Any]:
    """`lenient`: see llmsim/responses/schema.py's parse."""
    request = schema.parse(CompactRequest, body, lenient)
    profile = pipeline.catalog.resolve(request.model or "default")
    history = run.history(pipeline, request.previous_response_id, None, owner=owner)
    items = history + translate.normalize_items(request.input or [], history, run.item_finder(pipeline, owner))
    kept = [item for item in items if item["type"] == "message" and item["role"] == "user"]
    replaced = translate.count_input_tokens([item for item in items if item not in kept], None, [], profile.encoding)
    summary = opaque(max(MIN_SUMMARY_TOKENS, round(SUMMARY_SHARE * replaced)))
    compaction = {"id": ids.new("cmp"), "type": "compaction", "encrypted_content": summary}
    input_tokens = translate.count_input_tokens(items, request.instructions, [], profile.encoding)
    output_tokens = tokens.count(compaction["encrypted_content"], profile.encoding)
    return {
        "id": ids.new("resp"),
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": [*kept, compaction],
        "usage": usage_dict(Usage(input_tokens, output_tokens)),
    }
