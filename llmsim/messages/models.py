"""Models as the anthropic SDK's `models.list` / `models.retrieve` read them (`ModelInfo`, a page with
`has_more`, `first_id`, `last_id`): asked for with an `anthropic-version` header at the same /v1/models."""

from __future__ import annotations

import datetime
from typing import Any

from llmsim.timing.profiles import Profile


def model_info(name: str, profile: Profile) -> dict[str, Any]:
    created = datetime.datetime.fromtimestamp(profile.created, datetime.UTC)
    display = name.replace("claude-", "Claude ").replace("-", " ").title() if name.startswith("claude") else name
    return {"type": "model", "id": name, "display_name": display,
            "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ")}


def page(profiles: list[Profile], limit: int = 20, after_id: str | None = None,
         before_id: str | None = None) -> dict[str, Any]:
    """Newest first, as Anthropic lists them; `after_id` / `before_id` page through."""
    ordered = sorted(profiles, key=lambda p: p.created, reverse=True)
    names = [p.id for p in ordered]
    start, end = 0, len(ordered)
    if after_id in names:
        start = names.index(after_id) + 1
    if before_id in names:
        end = names.index(before_id)
        start = max(start, end - limit)
    data = [model_info(p.id, p) for p in ordered[start:end][:limit]]
    return {"data": data, "has_more": start + len(data) < end, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None}
