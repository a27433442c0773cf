"""What the client tests share: the server-side checks on what a client sent."""

from __future__ import annotations

from typing import Any

from llmsim.pytest_plugin import LLMSim


def last(llmsim: LLMSim) -> dict[str, Any]:
    """The body of the latest request the server received."""
    return llmsim.requests[-1]


def retried(log: LLMSim | list[dict[str, Any]]) -> None:
    """The rate-limit rule fired on the first request, and a retry then succeeded (`log`: the fault log)."""
    log = log.fault_log if isinstance(log, LLMSim) else log
    assert log[0]["fault"] == "rate_limit" and log[0]["status"] == 429, log
    assert any(entry["status"] == 200 and entry["fault"] is None for entry in log[1:]), log


RATE_LIMIT_ONCE = {"kind": "rate_limit", "first": 1, "retry_after": 0.2}


def texts(items: Any) -> str:
    """All the text in a request's `input` or `messages` (strings, content parts, outputs), joined."""
    if isinstance(items, str):
        return items
    if isinstance(items, list):
        return " ".join(texts(item) for item in items)
    if isinstance(items, dict):
        return " ".join(texts(items[key]) for key in ("content", "text", "output", "arguments") if key in items)
    return ""
