"""The events' JSON (llmsim/wire.py) is, byte for byte, the standard library's compact JSON, whatever it holds."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from llmsim import wire

_standard = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_json = st.recursive(_scalars,
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                     max_leaves=20)


@given(_json)
@settings(max_examples=400, deadline=None)
def test_any_json_value_is_written_as_the_standard_library_writes_it(value: object) -> None:
    assert wire.dumps(value) == _standard(value)


def test_the_values_orjson_writes_otherwise_are_the_standard_librarys() -> None:
    odd = {"small": [1e-05, -9.9e-05, 1e-07, 5e-324], "large": [1e16, 1.5e300, 2**64, -(2**70)], 1: "an int key",
           "text": "e-mail at 1e-7 or 0.00001 \u2028 \x00 \ud800"}
    for value in [*odd.values(), odd, {"logprob": -3.2e-05, "text": "e-"}]:
        assert wire.dumps(value) == _standard(value)
