"""Every field the installed SDK's request types declare is accepted, and `null` where they declare it nullable.

The test walks the SDK's TypedDicts (Responses' create, input_tokens and compact params, Chat Completions'
create params, down through input items, messages, content parts, tools, tool choices and formats) and sends
one body per declared field and per value of each enum, built from a minimal valid request. A field may still
get a 4xx for its value (an unknown id's 404, say), never an `unknown_parameter` (or a missing "required" field,
a wrong type, an unknown item type or enum value), and never a 5xx. The server is asked to be strict
(X-LLMSim-Strict-Params): by default it would accept what it does not know, and only warn.
"""

from __future__ import annotations

import functools
import types
import typing
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from openai.types.chat import completion_create_params
from openai.types.responses import input_token_count_params, response_compact_params, response_create_params
from typing_extensions import is_typeddict

from llmsim.testing import ServerProcess

Build = Callable[[Any], dict[str, Any]]
MAX_DEPTH = 7
SAMPLE_STR = {"model": "gpt-4o", "role": "user", "text": "hi", "name": "lookup", "arguments": "{}", "output": "ok",
              "call_id": "call_1", "url": "https://example.com", "image_url": "https://example.com/a.png"}


def _strip(tp: Any) -> Any:
    """Required[X], NotRequired[X], Annotated[X, ...] → X."""
    while typing.get_origin(tp) in (typing.Required, typing.NotRequired, typing.Annotated):
        tp = typing.get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    """The branches of a union, None left out; any other type is its own only branch."""
    tp = _strip(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(tp) for m in _members(arg) if m is not type(None)]
    return [tp]


@functools.cache  # the walk asks again for each sample and each field: ~40,000 times, ~1 s of a core a module
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


def _required(cls: type) -> set[str]:
    """Read from the hints: the SDK's string annotations leave `__required_keys__` unreliable."""
    total = getattr(cls, "__total__", True)
    return {key for key, hint in _hints(cls).items() if typing.get_origin(hint) is typing.Required or
            (total and typing.get_origin(hint) is not typing.NotRequired)}


def sample(tp: Any, name: str = "", depth: int = 0) -> Any:
    """A simple value of type `tp`: a TypedDict with its required fields only, a union's first branch."""
    members = _members(tp)
    literal = next((m for m in members if typing.get_origin(m) is typing.Literal), None)
    tp = literal if literal is not None else members[0]
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return typing.get_args(tp)[0]
    if is_typeddict(tp):
        return {key: sample(hint, key, depth + 1) for key, hint in _hints(tp).items() if key in _required(tp)}
    if tp is str:
        return SAMPLE_STR.get(name, "x")
    if tp is bool:
        return True
    if tp is int:
        return 16
    if tp is float:
        return 0.5
    if origin is dict and typing.get_args(tp)[1:] == (int,):
        return {"50256": 0}  # a token id's bias (logit_bias)
    if origin in (dict, dict) or tp is dict:
        return {"type": "function", "name": "lookup"}  # a free-form object; as a tool reference, a valid one
    if origin is not None and typing.get_args(tp):  # List, Iterable, SequenceNotStr
        return [sample(typing.get_args(tp)[0], name, depth + 1)]
    return {}  # object


def cases(params: type, build: Build, max_depth: int = MAX_DEPTH) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, body) for each field of `params` and of the TypedDicts below it, each (type, field) once,
    breadth first: a type is checked where it is nearest the top (a tool in `tools`, not inside an item)."""
    seen: set[tuple[type, str]] = set()
    queue: deque[tuple[type, Build, int]] = deque([(params, build, 0)])
    while queue:
        cls, build, depth = queue.popleft()
        base = sample(cls)
        for key, hint in _hints(cls).items():
            for branch in _members(hint):
                label = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}.{key}"
                if (cls, key) not in seen:
                    seen.add((cls, key))
                    yield label, build({**base, key: sample(branch, key)})
                if typing.get_origin(branch) is typing.Literal and key not in ("type", "model"):  # each enum value
                    for value in typing.get_args(branch)[1:]:
                        if (cls, f"{key}={value}") not in seen:
                            seen.add((cls, f"{key}={value}"))
                            yield f"{label}={value}", build({**base, key: value})
                inner = _strip(branch)
                args = typing.get_args(inner)
                if depth >= max_depth:
                    continue
                if is_typeddict(inner):
                    queue.append((inner, lambda v, build=build, base=base, key=key: build({**base, key: v}),
                                  depth + 1))
                elif args and typing.get_origin(inner) not in (typing.Literal, dict, dict):
                    queue.extend((element, lambda v, build=build, base=base, key=key: build({**base, key: [v]}),
                                  depth + 1) for element in _members(args[0]) if is_typeddict(element))


def nullable(cls: type) -> list[str]:
    """The top-level fields the SDK declares Optional (null allowed)."""
    return [key for key, hint in _hints(cls).items() if type(None) in typing.get_args(_strip(hint))]


# Endpoint: (params type, minimal body, walk depth). Input items, tools and formats are one schema on every
# endpoint: walked deep once, on /responses; the others down to their own parameters' fields.
ENDPOINTS = {
    "/responses": (response_create_params.ResponseCreateParamsNonStreaming,
                   {"model": "gpt-4o", "input": "hi", "max_output_tokens": 16}, MAX_DEPTH),  # short answers: fast
    "/responses/input_tokens": (input_token_count_params.InputTokenCountParams, {"model": "gpt-4o", "input": "hi"}, 1),
    "/responses/compact": (response_compact_params.ResponseCompactParams, {"model": "gpt-4o", "input": "hi"}, 1),
    "/chat/completions": (completion_create_params.CompletionCreateParamsNonStreaming,
                          {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
                           "max_completion_tokens": 16}, MAX_DEPTH),
}


# Errors that say the server's schema disagrees with the SDK's (a declared field, type or item type refused).
REFUSALS = {"unknown_parameter", "missing_required_parameter", "invalid_type"}


STRICT = {"X-LLMSim-Strict-Params": "true"}


def _check(http: httpx.Client, path: str, label: str, body: dict[str, Any]) -> str | None:
    answer = http.post(path, json=body, headers=STRICT)
    if answer.status_code >= 500:
        return f"{label}: {answer.status_code} {answer.text[:200]}"
    if "x-llmsim-warnings" in answer.headers:
        return f"{label}: {answer.headers['x-llmsim-warnings']}"
    error = answer.json().get("error") if answer.status_code >= 400 else None
    if error and (error["code"] in REFUSALS or error["code"] == "invalid_value" and (
            str(error["param"]).endswith(".type") or error["message"].startswith("Invalid value:"))):
        return f"{label}: {error['message']}"
    return None


@pytest.mark.parametrize("path", ENDPOINTS)
def test_every_declared_field_is_accepted(server: ServerProcess, path: str) -> None:
    params, minimal, depth = ENDPOINTS[path]
    found = list(cases(params, lambda v: {**minimal, **v}, depth))
    assert len(found) > (150 if depth == MAX_DEPTH else 10)  # the walk reaches items, parts and tools
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        refused = [problem for label, body in found if (problem := _check(http, path, label, body))]
    assert refused == []


@pytest.mark.parametrize("path", ENDPOINTS)
def test_null_means_the_default(server: ServerProcess, path: str) -> None:
    params, minimal, _ = ENDPOINTS[path]
    fields = [key for key in nullable(params) if key not in minimal]
    assert fields
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        refused = {key: answer.json() for key in fields
                   if (answer := http.post(path, json={**minimal, key: None}, headers=STRICT)).status_code != 200}
    assert refused == {}
