"""Compact JSON (UTF-8 as is) without the standard encoder's setup on every call.

`json.JSONEncoder.encode` builds its C encoder again on each call, about 1.3 us: more than encoding a small
value takes. A request on the Redis store encodes several small values (its stored record's fields, its
replay, its scenario turn), so they share this one, made once. Not for values that may hold themselves
(no check for cycles) or types JSON does not know (a TypeError, as from the standard encoder).
"""

from __future__ import annotations

import json
from typing import Any

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
# None where the C accelerator is missing: then the standard encoder. (Not in json's stubs: private.)
_c_encoder: Any = getattr(json.encoder, "c_make_encoder", None)


def _default(value: Any) -> Any:
    return _ENCODER.default(value)  # raises TypeError, with the standard message


if _c_encoder is not None:
    _encode = _c_encoder(None, _default, json.encoder.encode_basestring, None, ":", ",", False, False, True)

    def dumps(value: Any) -> str:
        """`value` as compact JSON, UTF-8 as is: what `json.dumps(value, separators=(",", ":"),
        ensure_ascii=False)` gives."""
        return "".join(_encode(value, 0))
else:  # pragma: no cover - CPython has the accelerator

    def dumps(value: Any) -> str:
        return _ENCODER.encode(value)
