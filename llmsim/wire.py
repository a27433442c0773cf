"""Compact JSON as the API writes it (no spaces, UTF-8 as is): the stream events' and stored responses' text.

A stream sends its response about four times over (created, in progress, completed, and its items as they
end), so encoding is a good share of a request. orjson encodes it several times faster than the standard
library and, for everything LLMSim sends, writes the very same text. Where the two would differ, the
standard library writes it, so the bytes on the wire are always its own: floats in exponent form or below
1e-4 (orjson writes 1e-7 and 0.00001 where Python writes 1e-07 and 1e-05), and what orjson refuses (integers
past 64 bits, keys that are not strings, lone surrogates). Requests cannot carry NaN or Infinity
(llmsim/api/decode.py), the one other difference.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_standard = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # json.dumps builds one per call
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
