"""Issue 46, item 4: one forward-compatibility rule on every route of the OpenAI surface: an unknown name or enum
value is accepted and reported (`x-llmsim-warnings`; in WebSocket mode the `llmsim_warnings` field of a response's
first event: docs/compatibility.md), a wrong type is refused with a 400.

The walk goes through every tool type the installed SDK declares (`ToolParam`), down through the TypedDicts inside
them, and sends for each field a value of the wrong type, and for each object a name it lacks."""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import response_create_params, tool_param
from typing_extensions import is_typeddict

from llmsim.testing import ServerProcess
from test_sdk_params import _hints, _members, _strip  # the SDK walk's type readers

Wrap = Callable[[Any], Any]
SAMPLE = {"name": "lookup", "server_label": "docs", "description": "Find things.", "container_id": "cntr_1",
          "vector_store_ids": "vs_1", "definition": "[a-z]+", "url": "https://example.com"}


def _required(cls: type) -> set[str]:
    return {key for key, hint in _hints(cls).items() if typing.get_origin(hint) is typing.Required}


def sample(tp: Any, name: str = "") -> Any:
    tp = _members(tp)[0]
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return typing.get_args(tp)[0]
    if is_typeddict(tp):
        return {key: sample(hint, key) for key, hint in _hints(tp).items() if key in _required(tp)}
    if name == "parameters":
        return {"type": "object", "properties": {}, "additionalProperties": False}
    if name == "vector_store_ids":
        return ["vs_1"]
    if tp is str:
        return SAMPLE.get(name, "x")
    if tp in (int, float):
        return 16
    if tp is bool:
        return True
    if origin is not None and origin is not dict and typing.get_args(tp):
        return [sample(typing.get_args(tp)[0], name)]
    return {"type": "function", "name": "lookup"} if name == "tools" else {}  # allowed_tools' free-form entries


def _accepts(tp: Any, value: Any) -> bool:
    origin = typing.get_origin(tp)
    if tp is object or tp is Any:
        return True
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if tp is str:
        return isinstance(value, str)
    if tp in (int, float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is bool:
        return isinstance(value, bool)
    if is_typeddict(tp) or tp is dict or origin is dict:
        return isinstance(value, dict)
    return isinstance(value, list)  # List, Iterable, SequenceNotStr


def wrong(tp: Any) -> Any:
    """A value of a type no branch of `tp` accepts; None when every JSON value is accepted (`object`)."""
    members = _members(tp)
    return next((value for value in (12345, "x", True, [12345], {"x": 1})
                 if not any(_accepts(m, value) for m in members)), None)


def walk(cls: type, wrap: Wrap, path: str, seen: set[tuple[type, str]]) -> Iterator[tuple[str, Any, str]]:
    """(param, body part, 'type' | 'name') for each field of `cls` given a wrong type, and `cls` given a name it
    lacks; then the same below it."""
    base = sample(cls)
    if (cls, "") not in seen:
        seen.add((cls, ""))
        yield f"{path}.x_unknown", wrap({**base, "x_unknown": 1}), "name"
    for key, hint in _hints(cls).items():
        if key == "type" or (cls, key) in seen:
            continue
        seen.add((cls, key))
        bad = wrong(hint)
        if bad is not None:
            yield f"{path}.{key}", wrap({**base, key: bad}), "type"
        for branch in _members(hint):
            inner = _strip(branch)
            if is_typeddict(inner):
                yield from walk(inner, lambda v, key=key: wrap({**base, key: v}), f"{path}.{key}", seen)
            elif typing.get_origin(inner) not in (None, typing.Literal, dict) and typing.get_args(inner):
                for element in _members(typing.get_args(inner)[0]):
                    if is_typeddict(element):
                        yield from walk(element, lambda v, key=key: wrap({**base, key: [v]}), f"{path}.{key}[0]",
                                        seen)


def tool_cases() -> list[tuple[str, Any, str]]:
    seen: set[tuple[type, str]] = set()
    return [case for tool in _members(tool_param.ToolParam)
            for case in walk(tool, lambda v: {"tools": [v]}, f"tools[0]<{sample(tool)['type']}>", seen)]


# Every tool a tool_choice may name, offered with it (a choice must name an offered tool).
OFFERED = [{"type": "function", "name": "lookup", "parameters": sample(object, "parameters")},
           {"type": "custom", "name": "lookup"}, {"type": "mcp", "server_label": "docs", "server_url": SAMPLE["url"]},
           {"type": "file_search", "vector_store_ids": ["vs_1"]}, {"type": "programmatic_tool_calling"},
           {"type": "apply_patch"}, {"type": "shell"}]


def choice_cases() -> list[tuple[str, Any, str]]:
    seen: set[tuple[type, str]] = set()
    choice = typing.get_type_hints(response_create_params.ResponseCreateParamsBase)["tool_choice"]
    return [case for kind in _members(choice) if is_typeddict(kind)
            for case in walk(kind, lambda v: {"tools": OFFERED, "tool_choice": v},
                             f"tool_choice<{sample(kind)['type']}>", seen)]


CASES = tool_cases() + choice_cases()
BODY = {"model": "gpt-4o", "input": "hi", "max_output_tokens": 16, "tool_choice": "none"}


def test_the_walk_reaches_every_tool_type() -> None:
    kinds = {label.split("<")[1].split(">")[0] for label, _, _ in CASES if label.startswith("tools")}
    assert len(kinds) == len(_members(tool_param.ToolParam)) and len(CASES) > 150


def test_every_tool_field_of_a_wrong_type_is_a_400_and_every_unknown_name_a_warning(server: ServerProcess) -> None:
    problems = []
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        for label, extra, kind in CASES:
            answer = http.post("/responses", json={**BODY, **extra})
            if kind == "type":
                if answer.status_code != 400 or answer.json()["error"]["code"] != "invalid_type":
                    problems.append(f"{label}: wrong type -> {answer.status_code} {answer.text[:150]}")
            elif answer.status_code != 200 or "x_unknown" not in answer.headers.get("x-llmsim-warnings", ""):
                problems.append(f"{label}: unknown name -> {answer.status_code} "
                                f"{answer.headers.get('x-llmsim-warnings')} {answer.text[:150]}")
    assert problems == [], f"{len(problems)} of {len(CASES)}:\n" + "\n".join(problems)


ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi", "x_part": 1}],
        "x_item": 1}


@pytest.mark.parametrize("path", ["/conversations", "/conversations/{id}/items"])
def test_conversations_accept_an_unknown_item_field_with_a_warning_as_responses_does(
        server: ServerProcess, path: str) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        made = http.post("/conversations", json={})
        url = path.format(id=made.json()["id"])
        answer = http.post(url, json={"items": [ITEM]})
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-llmsim-warnings"] == ("unknown parameter 'items[0].content[0].x_part'; "
                                                       "unknown parameter 'items[0].x_item'")
        responses = http.post("/responses", json={**BODY, "input": [ITEM]})  # the same item, the same report
        assert responses.headers["x-llmsim-warnings"].replace("input", "items") == answer.headers["x-llmsim-warnings"]
        stored = http.get(f"/conversations/{made.json()['id']}/items").json()["data"] if path != "/conversations" \
            else http.get(f"/conversations/{answer.json()['id']}/items").json()["data"]
        assert stored[0]["content"][0] == {"type": "input_text", "text": "hi"} and "x_item" not in stored[0]
        strict = http.post(url, json={"items": [ITEM]}, headers={"X-LLMSim-Strict-Params": "true"})
        assert strict.status_code == 400 and strict.json()["error"]["code"] == "unknown_parameter"
        wrong = http.post(url, json={"items": [{**ITEM, "role": 5}]})
        assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "invalid_type"
        metadata = http.post(f"/conversations/{made.json()['id']}", json={"metadata": {}, "x_meta": 1})
        assert metadata.status_code == 200 and metadata.headers["x-llmsim-warnings"] == "unknown parameter 'x_meta'"


def test_websocket_mode_reports_unknown_names_on_the_first_event_and_refuses_wrong_types(
        client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.send({"type": "response.create", "model": "gpt-4o", "input": "hi", "x_unknown": 1,
                         "tools": [{"type": "shell", "x_tool": 2}]})  # type: ignore[typeddict-unknown-key]
        events = []
        for event in connection:
            events.append(event)
            if event.type in ("response.completed", "error"):
                break
        assert events[0].type == "response.created" and events[-1].type == "response.completed"
        assert sorted((events[0].model_extra or {})["llmsim_warnings"]) == [
            "unknown parameter 'tools[0].x_tool'", "unknown parameter 'x_unknown'"]
        assert all("llmsim_warnings" not in (event.model_extra or {}) for event in events[1:])
        connection.send({"type": "response.create", "model": "gpt-4o", "input": "hi",  # type: ignore[typeddict-item]
                         "tools": [{"type": "shell", "environment": {"type": "local", "skills": "all"}}]})
        error = next(iter(connection))
        assert error.type == "error" and error.error.code == "invalid_type"  # type: ignore[union-attr]
        assert error.error.param == "tools[0].environment.skills"  # type: ignore[union-attr]
        connection.response.create(model="gpt-4o", input="hi")  # a clean one: nothing to report
        first = next(iter(connection))
        assert first.type == "response.created" and "llmsim_warnings" not in (first.model_extra or {})
        # read to its end: the websockets client stops reading past 16 unread frames, and its close would then wait
        # its close timeout (10 s) for the server's close frame queued behind them
        next(event for event in connection if event.type == "response.completed")
