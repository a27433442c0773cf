"""llmsim/wire.py `dumps_plain`: the Redis store's JSON encoder writes what `json.dumps` writes, set up once."""

from __future__ import annotations

import json

import pytest

from llmsim.wire import dumps_plain as dumps

pytestmark = pytest.mark.store  # the Redis store's encoder

VALUES = [
    "plain", 'quotes " and \\ and \n\t and \x1e', "UTF-8 as is: ✓ é 日本",
    0, -7, 2**70, 1.5, 1e-7, 1795505795.7281132,
    True, False, None, [], {}, [1, "a", None, [2.5, {"k": "v"}]],
    {"id": "resp_1", "output": [{"type": "message", "content": [{"text": "hi ✓"}]}], "usage": None, "n": 3},
    (1, 2), float("inf"), float("nan"),
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_it_writes_what_json_dumps_writes(value: object) -> None:
    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_a_type_json_does_not_know_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps({"when": object()})
