"""Request helpers shared by the endpoints: JSON bodies, auth, services."""

from __future__ import annotations

import hashlib
import hmac
import socket
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from flask import current_app, request
from gunicorn.http.errors import ParseException
from werkzeug.datastructures import Headers
from werkzeug.exceptions import RequestEntityTooLarge

from llmsim.api import decode, which
from llmsim.chaos.admission import FAULT_HEADER
from llmsim.config import SPEED_EXPECTED, TEXT_MODES, valid_speed
from llmsim.errors import APIError
from llmsim.request import ApiRequest, int_param
from llmsim.services import Services
from llmsim.shared import compat


def services() -> Services:
    return current_app.extensions["llmsim"]


def client_socket() -> socket.socket | None:
    """The connection this request's waits watch for a hang-up (llmsim/runtime/waits.py); none for a WebSocket,
    whose own reader owns the socket, nor outside gunicorn."""
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return None
    return request.environ.get("gunicorn.socket")


def json_body() -> Any:
    mimetype = request.mimetype
    if mimetype and mimetype != "application/json" and not mimetype.endswith("+json"):
        raise APIError(
            f"Invalid Content-Type header ({request.content_type}), expected application/json.",
            status=415, code="unsupported_content_type",
        )
    return decode.loads(body_bytes())


def body_bytes() -> bytes:
    """The request body; a malformed chunked encoding (gunicorn raises it while the body is read) is the
    client's 400, not a 500."""
    try:
        if "wsgi.input_terminated" in request.environ:  # gunicorn ends the body itself
            return _terminated(request.environ, request.max_content_length)
        return request.get_data(cache=False)
    except (OSError, ParseException):
        raise APIError("Invalid request body: it could not be read (malformed chunked transfer encoding?).",
                       code="invalid_body") from None


def _terminated(environ: dict[str, Any], limit: int | None) -> bytes:
    """What werkzeug's `get_data` reads from a body its server ends, and the 413s it raises, without the
    stream wrappers it builds for that (a few tens of µs per request)."""
    length = environ.get("CONTENT_LENGTH")
    if limit is not None and length and length.isdigit() and int(length) > limit:
        raise RequestEntityTooLarge()
    data = environ["wsgi.input"].read() if limit is None else environ["wsgi.input"].read(limit + 1)
    if limit is not None and len(data) > limit:
        raise RequestEntityTooLarge()
    return data


def _bearer() -> str | None:
    """The API key, where the request's surface takes it (llmsim/surface.py `api_key`)."""
    return which.surface().api_key(request.headers, query())


def query() -> Mapping[str, str]:
    """The query's arguments: with no query string (most API calls), none parsed."""
    return request.args if request.environ.get("QUERY_STRING") else {}


def _matches(key: str | None, expected: tuple[str, ...]) -> bool:
    """Whether `key` is one of `expected`, in constant time for each."""
    return key is not None and any([hmac.compare_digest(key.encode(), e.encode()) for e in expected])


def require_api_key() -> None:
    expected = services().settings.api_keys
    if not expected or request.path.startswith("/llmsim/") or request.path == "/metrics":
        return  # LLMSim's own endpoints guard themselves; /metrics is open, as vLLM's is
    key = _bearer()
    header = request.headers.get("Authorization", "") or request.headers.get("x-api-key", "") or key or ""
    if not header:
        raise APIError(
            "You didn't provide an API key. You need to provide your API key in an Authorization header using "
            "Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", status=401, code="invalid_api_key",
        )
    if not _matches(key, expected):
        shown = header.partition(" ")[2].strip() if " " in header else header
        masked = shown[:3] + "*" * max(0, len(shown) - 7) + shown[-4:] if len(shown) > 7 else "****"
        raise APIError(f"Incorrect API key provided: {masked}.", status=401, code="invalid_api_key")


def owner() -> str:
    """The scope of the objects this request stores and may read: a digest of its API key when keys are
    configured (as the real API scopes them to a project), else "" (one shared scope)."""
    if not services().settings.api_keys:
        return ""
    return hashlib.sha256((_bearer() or "").encode()).hexdigest()[:32]


def require_admin_key() -> None:
    """Guard for /llmsim/admin routes: the admin key as a bearer token; with none set, an API key (the admin
    API shows every prompt and can fault anyone's requests, so a server with keys never leaves it open)."""
    settings = services().settings
    expected = (settings.admin_key,) if settings.admin_key else settings.api_keys
    if expected and not _matches(_bearer(), expected):
        raise APIError("Invalid or missing admin key.", status=401, code="invalid_api_key")


T = TypeVar("T")
STRICT_HEADER = compat.STRICT_HEADER
SEED_HEADER = "X-LLMSim-Seed"
SPEED_HEADER = "X-LLMSim-Speed"
TEXT_MODE_HEADER = "X-LLMSim-Text-Mode"
TEXT_MODE_EXPECTED = f"one of {', '.join(TEXT_MODES)}"


def _header(name: str, convert: Callable[[str], T], expected: str,
            valid: Callable[[T], bool] = lambda _: True, headers: Headers | None = None) -> T | None:
    """An optional LLMSim request header, converted, or the API's 400 naming it. `headers`: the request's,
    when the caller has them in hand (a look-up through Flask's proxy each saved)."""
    raw = (request.headers if headers is None else headers).get(name)
    if raw is None:
        return None
    try:
        value = convert(raw)
    except ValueError:
        value = None
    if value is None or not valid(value):
        raise APIError(f"Invalid {name} header: expected {expected}, got '{raw}'.", param=name, code="invalid_value")
    return value


def seed_header(headers: Headers | None = None) -> int | None:
    """X-LLMSim-Seed: this request's seed, overriding the server's."""
    return _header(SEED_HEADER, int, "an integer", headers=headers)


def speed_header(headers: Headers | None = None) -> float | None:
    """X-LLMSim-Speed: this request's pacing multiplier, overriding the server's."""
    return _header(SPEED_HEADER, float, SPEED_EXPECTED, valid=valid_speed, headers=headers)


def text_mode_header(headers: Headers | None = None) -> str | None:
    """X-LLMSim-Text-Mode: this request's sim text mode (prose, echo, lorem, faker), overriding the server's."""
    return _header(TEXT_MODE_HEADER, str.lower, TEXT_MODE_EXPECTED, valid=lambda m: m in TEXT_MODES,
                   headers=headers)


def asked(body: Any, params: dict[str, str] | None = None) -> ApiRequest:
    """This request, typed: its body, the headers that matter below the transport (an LLMSim header that is
    not valid is the client's 400 here, the fault header's when admission reads it), and `params`: the route's
    variables and the query."""
    headers = request.headers  # read once for the five headers below
    return ApiRequest(body, owner=owner(), api_key=_bearer() or None, speed=speed_header(headers),
                      seed=seed_header(headers), text_mode=text_mode_header(headers), fault=headers.get(FAULT_HEADER),
                      strict_params=strict_params(headers), params=params or {})


def strict_params(headers: Headers | None = None) -> bool:
    """--strict-params, or X-LLMSim-Strict-Params: true for this request (false: lenient on a strict server)."""
    headers = request.headers if headers is None else headers
    if headers.get(STRICT_HEADER) is None:
        return services().settings.strict_params
    return _header(STRICT_HEADER, str.lower, "true or false", valid=lambda v: v in ("true", "false"),
                   headers=headers) == "true"


def int_arg(name: str, default: int, low: int | None = None, high: int | None = None) -> int:
    return int_param(request.args, name, default, low, high)


def bool_arg(name: str) -> bool:
    return request.args.get(name, "false").lower() in ("1", "true", "yes")
