"""Compact JSON as the API writes it (no spaces, UTF-8 as is): the stream events' and stored responses' text.

A stream sends its response about four times over (created, in progress, completed, and its items as they
end), so encoding is a good share of a request. orjson encodes it several times faster than the standard
library and, for everything LLMSim sends, writes the very same text. Where the two would differ, the
standard library writes it, so the bytes on the wire are always its own: floats in exponent form or below
1e-4 (orjson writes 1e-7 and 0.00001 where Python writes 1e-07 and 1e-05), and what orjson refuses (integers
past 64 bits, keys that are not strings, lone surrogates). Requests cannot carry NaN or Infinity
(llmsim/api/decode.py), the one other difference.

`dumps_plain` is the standard library's C encoder, set up once (`json.dumps` builds one per call, about 1.3 us,
more than a small value takes): for the small values the Redis store writes and reads back, where NaN and
Infinity must come back as they went (orjson writes null) and orjson's speed on large values does not matter.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_standard = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # json.dumps builds one per call
_plain = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
_c_encoder = json.encoder.c_make_encoder  # type: ignore[attr-defined]  # None where the C accelerator is missing
_EXPONENT = re.compile(rb"[0-9]e[-+]")  # a float in exponent form (or text like one)


def dumps(data: Any) -> str:
    """`data` as compact JSON, exactly as `json.dumps(data, separators=(",", ":"), ensure_ascii=False)`."""
    try:
        out = orjson.dumps(data)
    except TypeError:  # orjson.JSONEncodeError: what it does not write, the standard library may
        return _standard(data)
    # Searched for in steps, the cheap ones first: the text around the numbers has many e's and hyphens.
    if b"0.0000" in out or (b"e-" in out or b"e+" in out) and _EXPONENT.search(out) is not None:
        return _standard(data)
    return out.decode()


def _default(value: Any) -> Any:
    return _plain.default(value)  # raises TypeError, with the standard message


if _c_encoder is not None:
    _encode = _c_encoder(None, _default, json.encoder.encode_basestring, None, ":", ",", False, False, True)

    def dumps_plain(value: Any) -> str:
        """`value` as `json.dumps(value, separators=(",", ":"), ensure_ascii=False)` writes it. Not for values that
        hold themselves (no check for cycles)."""
        return "".join(_encode(value, 0))
else:  # pragma: no cover - CPython has the accelerator
    dumps_plain = _plain.encode  # type: ignore[assignment]  # a bound method of the same signature


def canonical(value: Any) -> str:
    """Compact JSON with sorted keys: one text for equal values (cassette matching, a body's size)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
