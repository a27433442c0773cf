"""A client's JSON (HTTP bodies, WebSocket messages), decoded strictly: what passes can be copied, stored in
SQLite and echoed back as valid JSON.

Python's decoder accepts what would break later: NaN and Infinity (echoed, they make invalid JSON),
numbers past a float (1e400 becomes inf), lone UTF-16 surrogates (nothing can encode them as UTF-8), and
nesting deep enough to exhaust the recursion of deep-copy, validation and the decoder itself.
"""

from __future__ import annotations

import json
import math
from typing import Any

from llmsim.errors import APIError

MAX_DEPTH = 100  # arrays and objects inside one another; real requests stay far below


def _may_hold_surrogates(raw: str | bytes) -> bool:
    """Whether a lone surrogate can be in `raw`: from a \\uD800-\\uDFFF escape, or the UTF-8-like bytes of one
    (\\xed), which json decodes. One-byte scans first, which are memchr-fast: a regular expression took 60 ms of a
    worker over a 20 MB image, where nothing else could run; these take under 1 ms where there is no backslash.
    What they let through (\\uD000, Hangul's \\xed) only costs the strings' check."""
    if isinstance(raw, str):
        return "\\" in raw and ("\\ud" in raw or "\\uD" in raw)
    return (b"\\" in raw and (b"\\ud" in raw or b"\\uD" in raw)) or (not raw.isascii() and b"\xed" in raw)


INVALID_JSON = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP "
    "library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you "
    "have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"
)


class _Rejected(ValueError):
    """A value the decoder hooks refuse, with the message the client gets."""


def _constant(name: str) -> Any:
    raise _Rejected(f"{INVALID_JSON} ('{name}' is not a JSON value.)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Rejected(f"Invalid number {text[:40]}: it is out of the range of a double-precision number.")
    return value


def loads(raw: str | bytes, code: str | None = None) -> Any:
    """The decoded JSON, or the 400 saying what is wrong with it (`code`: the error code to give)."""
    try:
        value = json.loads(raw, parse_constant=_constant, parse_float=_float)
    except _Rejected as exc:
        raise APIError(str(exc), code=code) from None
    except RecursionError:
        raise _too_deep(code) from None
    except (ValueError, UnicodeDecodeError):
        raise APIError(INVALID_JSON, code=code) from None
    check(value, code, texts=_may_hold_surrogates(raw))
    return value


def check(value: Any, code: str | None = None, texts: bool = True) -> None:
    """Nesting within MAX_DEPTH and (unless `texts` is false) every string, keys too, valid Unicode; walked
    without recursion."""
    check_text = _check_text if texts else _skip
    if isinstance(value, str):
        check_text(value, code)
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(code)
        if isinstance(node, dict):
            for key in node:
                check_text(key, code)
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, str):
                check_text(child, code)
            elif isinstance(child, (dict, list)):
                stack.append((child, depth + 1))


def _skip(text: str, code: str | None) -> None:
    pass


def _check_text(text: str, code: str | None) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise APIError(f"{INVALID_JSON} (A string holds a lone UTF-16 surrogate, which is not valid Unicode.)",
                       code=code) from None


def _too_deep(code: str | None) -> APIError:
    return APIError(f"Invalid JSON body: arrays and objects are nested more than {MAX_DEPTH} levels deep.",
                    code=code)
