"""Property test: request bodies drawn from the request models' own JSON Schema (pydantic's
`model_json_schema()`), then mutated (a value swapped for a wrong-typed one, a key dropped, an unknown key
added), posted to a real server. Whatever the body, the answer is never a 5xx, and a stream never fails with
a server error.

hypothesis-jsonschema would draw the bodies, but its latest release (0.23.1) relies on a Hypothesis internal
(`many.more()`) that current Hypothesis no longer has, so `from_schema` below covers the keywords pydantic
emits.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from functools import cache
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from llmsim.chat.schema import ChatRequest
from llmsim.responses.schema import CreateRequest, InputTokensRequest
from llmsim.testing import ServerProcess

MODELS = ["gpt-4o", "gpt-5", "o3", "gpt-4.1", "gpt-4"]
DEPTH = 6  # below this, refs and objects give way to plain values
JSON_LEAVES = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(
    max_size=12)
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
ODD_VALUES = st.sampled_from([None, {}, [], "", "x", 0, -1, 1.5, 2**63, True, {"type": {}}, [{"type": {}}],
                              {"type": None}, ["x"], "\u0000", "é" * 300]) | JSON_VALUES


def from_schema(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """A strategy for the subset of JSON Schema that pydantic emits for the request models."""
    if depth > DEPTH:
        return JSON_LEAVES
    if "$ref" in schema:
        return st.deferred(lambda: from_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, depth + 1))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return st.one_of([from_schema(option, defs, depth + 1) for option in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": one}, defs, depth) for one in kind])
    if kind == "object":
        properties = schema.get("properties", {})
        if not properties:
            extra = schema.get("additionalProperties")
            values = from_schema(extra, defs, depth + 1) if isinstance(extra, dict) else JSON_VALUES
            return st.dictionaries(st.text(max_size=10), values, max_size=3)
        required = set(schema.get("required", []))
        fields = {name: st.sampled_from(MODELS) | st.text(max_size=10) if name == "model"
                  else from_schema(sub, defs, depth + 1) for name, sub in properties.items()}
        return st.fixed_dictionaries({k: v for k, v in fields.items() if k in required},
                                     optional={k: v for k, v in fields.items() if k not in required})
    if kind == "array":
        items = from_schema(schema.get("items", {}), defs, depth + 1)
        low = schema.get("minItems", 0)
        return st.lists(items, min_size=low, max_size=max(low, min(schema.get("maxItems", 3), 3)))
    if kind == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=max(schema.get("minLength", 0), 40))
    if kind == "integer":
        return st.integers(schema.get("minimum", -5), schema.get("maximum", 300))  # small outputs: fast examples
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return JSON_VALUES


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: dict keys and list indexes, nested."""
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, (*prefix, index))
    return found


@cache
def bodies(model: type[BaseModel]) -> st.SearchStrategy[Any]:
    """The strategy for the model's schema, built once: pydantic builds the schema anew each call (~20 ms for
    CreateRequest), and `mutated` draws a body per example."""
    schema = model.model_json_schema()
    return from_schema(schema, schema.get("$defs", {}))


@st.composite
def mutated(draw: st.DrawFn, model: type[BaseModel]) -> dict[str, Any]:
    """A body drawn from the model's schema, then changed in up to three places."""
    body = copy.deepcopy(draw(bodies(model)))  # drawn values may be shared
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(paths(body)))
        parent = body
        for step in path[:-1]:
            parent = parent[step]
        how = draw(st.sampled_from(["replace", "drop", "add"]))
        if not path or how == "add":
            target = parent if not path else parent[path[-1]]
            if isinstance(target, dict):
                target[draw(st.text(min_size=1, max_size=10))] = copy.deepcopy(draw(ODD_VALUES))
        elif how == "drop":
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(draw(ODD_VALUES))
    return body


def check(http: httpx.Client, endpoint: str, body: dict[str, Any], strict: bool = False) -> None:
    """`strict`: unknown names and values refused (X-LLMSim-Strict-Params), not dropped with a warning."""
    response = http.post(endpoint, content=json.dumps(body), headers={"X-LLMSim-Strict-Params": "true"} if strict
                         else {})
    assert response.status_code < 500, f"{endpoint} {response.status_code}: {response.text[:2000]}\n{body}"
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        assert "server_error" not in response.text, f"{endpoint} stream:\n{response.text[-2000:]}\n{body}"
    elif response.status_code >= 400:
        error = response.json()["error"]
        assert error["message"] and error["type"], response.text


@pytest.fixture(scope="module")
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=20,
                      headers={"Content-Type": "application/json"}) as client:
        yield client


# The same bodies every run (CI stays deterministic); LLMSIM_FUZZ_EXAMPLES=2000 explores further. No shrinking:
# each step is a request, and it takes minutes; the failing body is in the assertion's message.
FUZZ = settings(max_examples=int(os.environ.get("LLMSIM_FUZZ_EXAMPLES", "50")), derandomize=True, deadline=None,
                database=None, phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(body=mutated(CreateRequest))
@example(body={"model": "gpt-4o", "input": [{"type": "web_search_call", "id": [1]}]})  # was a 500 (issue 32)
@example(body={"model": "gpt-4o", "input": [{"type": "web_search_call", "id": {"a": 1}}]})
@example(body={"model": "gpt-4o", "input": [{"type": "additional_tools", "tools": 5}], "tool_choice": "required"})
@example(body={"model": "gpt-4o", "tool_choice": "required", "input": [{"type": "additional_tools", "tools": [
    {"type": "namespace", "name": "n", "tools": [7, {"type": 3}, {"type": "function", "name": "f"}]}, "x"]}]})
@example(body={"model": "gpt-4o", "input": "hi", "include": [{}], "unknown": {"deep": [1]}, "text": {"zz": 1}})
def test_responses_bodies_never_get_a_5xx(http: httpx.Client, body: dict[str, Any]) -> None:
    check(http, "/responses", body)
    check(http, "/responses", body, strict=True)


@FUZZ
@given(body=mutated(InputTokensRequest))
def test_input_tokens_bodies_never_get_a_5xx(http: httpx.Client, body: dict[str, Any]) -> None:
    check(http, "/responses/input_tokens", body)


@FUZZ
@given(body=mutated(ChatRequest))
def test_chat_bodies_never_get_a_5xx(http: httpx.Client, body: dict[str, Any]) -> None:
    check(http, "/chat/completions", body)
    check(http, "/chat/completions", body, strict=True)
