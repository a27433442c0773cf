"""Request helpers shared by the endpoints: JSON bodies, auth, services."""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any, TypeVar

from flask import current_app, request

from llmsim.backends.sim.text import MODES as TEXT_MODES
from llmsim.errors import APIError
from llmsim.services import Services

INVALID_JSON = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP "
    "library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you "
    "have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"
)


def services() -> Services:
    return current_app.extensions["llmsim"]


def json_body() -> Any:
    mimetype = request.mimetype
    if mimetype and mimetype != "application/json" and not mimetype.endswith("+json"):
        raise APIError(
            f"Invalid Content-Type header ({request.content_type}), expected application/json.",
            status=415, code="unsupported_content_type",
        )
    raw = request.get_data(cache=False)
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise APIError(INVALID_JSON) from None


def require_api_key() -> None:
    expected = services().settings.api_key
    if not expected or request.path.startswith("/llmsim/") or request.path == "/metrics":
        return  # LLMSim's own endpoints guard themselves; /metrics is open, as vLLM's is
    header = request.headers.get("Authorization", "")
    if not header:
        raise APIError(
            "You didn't provide an API key. You need to provide your API key in an Authorization header using "
            "Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", status=401, code="invalid_api_key",
        )
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), expected.encode()):
        shown = key.strip()
        masked = shown[:3] + "*" * max(0, len(shown) - 7) + shown[-4:] if len(shown) > 7 else "****"
        raise APIError(f"Incorrect API key provided: {masked}.", status=401, code="invalid_api_key")


def require_admin_key() -> None:
    """Guard for /llmsim/admin routes: the admin key, when one is set, as a bearer token."""
    expected = services().settings.admin_key
    if not expected:
        return
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), expected.encode()):
        raise APIError("Invalid or missing admin key.", status=401, code="invalid_api_key")


T = TypeVar("T")
SEED_HEADER = "X-LLMSim-Seed"
SPEED_HEADER = "X-LLMSim-Speed"
TEXT_MODE_HEADER = "X-LLMSim-Text-Mode"


def _header(name: str, convert: Callable[[str], T], expected: str,
            valid: Callable[[T], bool] = lambda _: True) -> T | None:
    """An optional LLMSim request header, converted, or the API's 400 naming it."""
    raw = request.headers.get(name)
    if raw is None:
        return None
    try:
        value = convert(raw)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise APIError(f"Invalid {name} header: expected {expected}, got '{raw}'.", param=name, code="invalid_value")
    return value


def seed_header() -> int | None:
    """X-LLMSim-Seed: this request's seed, overriding the server's."""
    return _header(SEED_HEADER, int, "an integer")


def speed_header() -> float | None:
    """X-LLMSim-Speed: this request's pacing multiplier, overriding the server's."""
    return _header(SPEED_HEADER, float, "a number >= 0", valid=lambda speed: 0 <= speed < float("inf"))


def text_mode_header() -> str | None:
    """X-LLMSim-Text-Mode: this request's sim text mode (prose, echo, lorem, faker), overriding the server's."""
    return _header(TEXT_MODE_HEADER, str.lower, f"one of {', '.join(TEXT_MODES)}", valid=lambda m: m in TEXT_MODES)


def int_arg(name: str, default: int | None, low: int | None = None, high: int | None = None) -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise APIError(f"Invalid type for '{name}': expected an integer, but got a string instead.", param=name,
                       code="invalid_type") from None
    if low is not None and value < low or high is not None and value > high:
        raise APIError(f"Invalid '{name}': expected a value between {low} and {high}, but got {value} instead.",
                       param=name, code="invalid_value")
    return value


def bool_arg(name: str) -> bool:
    return request.args.get(name, "false").lower() in ("1", "true", "yes")
