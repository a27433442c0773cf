"""Errors and rate-limit headers as Anthropic sends them, from the OpenAI-shaped ones the rest of LLMSim raises:
`{"type": "error", "error": {"type", "message"}, "request_id"}`, a 503 (overloaded) as Anthropic's 529, and
`anthropic-ratelimit-*` headers beside the `x-ratelimit-*` ones."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from llmsim.errors import APIError

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 405: "invalid_request_error",
               413: "request_too_large", 415: "invalid_request_error", 429: "rate_limit_error", 500: "api_error",
               502: "api_error", 503: "api_error", 504: "timeout_error", 529: "overloaded_error"}
OPENAI_DOCS = "platform.openai.com"
RATE_LIMIT_DOCS = "https://docs.claude.com/en/api/rate-limits"
DEFAULT_WORDS = {"The server had an error while processing your request. Sorry about that!": "Internal server error",
                 "The server is overloaded or not ready yet.": "Overloaded"}
STATUS = {503: 529}  # Anthropic says "overloaded" with its own status
DURATION = re.compile(r"(?:(\d+)h)?(?:(\d+)m(?!s))?(?:([\d.]+)s)?(?:(\d+)ms)?$")
# Anthropic's names ← the x-ratelimit-* ones they are read from, the first present: admission reports each
# direction's bucket (ITPM, OTPM, else TPM, which counts both) under x-ratelimit-*-{input,output}-tokens, and the
# bucket with the fewest tokens left under x-ratelimit-*-tokens, as Anthropic's `tokens` reports the most
# restrictive limit; an injected 429 (or a relayed answer) may carry only the latter.
NAMES = {"requests": ("requests",), "tokens": ("tokens",), "input-tokens": ("input-tokens", "tokens"),
         "output-tokens": ("output-tokens", "tokens")}
DIRECTIONS = ("input-tokens", "output-tokens")  # x-ratelimit-*-{these} are admission's words to this module only
UNITS = {"(ITPM)": "input tokens", "(OTPM)": "output tokens"}  # in LLMSim's 429 message → Anthropic's words


BILLING = "insufficient_quota"  # the fault's type: Anthropic answers a spent balance with a 400, never retried
BILLING_WORDS = ("Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to "
                 "upgrade or purchase credits.")
RETRY_HINTS = ("retry-after", "retry-after-ms", "x-should-retry")


KEPT = frozenset({"storage_unavailable", "server_shutting_down"})  # 503s that say why: not an overloaded model's 529


def status(error: APIError) -> int:
    if error.type == BILLING:
        return 400
    if error.cause is not None or error.code in KEPT:
        return error.status
    return STATUS.get(error.status, error.status)


def headers(error: APIError) -> dict[str, str]:
    """The error's headers; a billing error's without the retry hints a 429 had (the SDKs would retry it)."""
    if error.type != BILLING:
        return dict(error.headers)
    return {name: value for name, value in error.headers.items() if name.lower() not in RETRY_HINTS}


def body(error: APIError, request_id: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status(error), "api_error" if error.status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message(error)}, "request_id": request_id}


def message(error: APIError) -> str:
    """Anthropic's words where LLMSim's default ones are OpenAI's (a fault's own message is kept)."""
    if error.type == BILLING:
        return BILLING_WORDS
    if error.cause is not None:
        return f"Service unavailable: {error.cause}"
    if error.status == 429 and OPENAI_DOCS in error.message:
        unit = "requests" if error.type == "requests" else \
            next((words for mark, words in UNITS.items() if mark in error.message), "input tokens")
        return (f"This request would exceed the rate limit for your organization on {unit} per minute. "
                f"For details, refer to: {RATE_LIMIT_DOCS}.")
    return DEFAULT_WORDS.get(error.message, error.message)


def stream_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _seconds(text: str) -> float:
    match = DURATION.match(text)
    if not match:
        return 0.0
    hours, minutes, seconds, millis = match.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds or 0) + int(millis or 0) / 1000


def ratelimit_headers(headers: Mapping[str, str], now: datetime.datetime | None = None) -> dict[str, str]:
    """`anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`; a reset is an
    RFC 3339 time, as Anthropic sends it."""
    now = now or datetime.datetime.now(datetime.UTC)
    out: dict[str, str] = {}
    for name, sources in NAMES.items():
        ours = next((source for source in sources if f"x-ratelimit-limit-{source}" in headers), None)
        if ours is None:
            continue
        limit = headers[f"x-ratelimit-limit-{ours}"]
        reset = now + datetime.timedelta(seconds=_seconds(headers.get(f"x-ratelimit-reset-{ours}", "0s")))
        out[f"anthropic-ratelimit-{name}-limit"] = limit
        out[f"anthropic-ratelimit-{name}-remaining"] = headers.get(f"x-ratelimit-remaining-{ours}", limit)
        out[f"anthropic-ratelimit-{name}-reset"] = reset.strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


def internal_headers() -> tuple[str, ...]:
    """The x-ratelimit-* headers that are admission's words to this module, not sent as they are."""
    return tuple(f"x-ratelimit-{part}-{name}" for name in DIRECTIONS for part in ("limit", "remaining", "reset"))
