"""Bad input gets a 4xx in the OpenAI envelope that names the parameter, never a 500 nor a Python repr;
HTTP method errors and OPTIONS answer as an API does."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from llmsim.testing import ServerProcess

NOT_A_STRING = [{}, [], 1, True]


def _conversation(http: httpx.Client) -> str:
    return str(http.post("/conversations", json={}).json()["id"])


@pytest.mark.parametrize("kind", NOT_A_STRING, ids=["object", "array", "number", "boolean"])
@pytest.mark.parametrize("endpoint", ["/responses", "/responses/input_tokens", "/responses/compact", "/conversations",
                                      "/conversations/{id}/items"])
def test_an_item_type_that_is_not_a_string_is_a_400(server: ServerProcess, endpoint: str, kind: Any) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        path = endpoint.format(id=_conversation(http)) if "{id}" in endpoint else endpoint
        key = "items" if endpoint.startswith("/conversations") else "input"
        answer = http.post(path, json={"model": "gpt-4o", key: [{"type": kind}]} if key == "input" else
                           {key: [{"type": kind}]})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_type" and error["param"] == f"{key}[0].type"
    assert error["message"].startswith(f"Invalid type for '{key}[0].type': expected a string, but got ")


@pytest.mark.parametrize("body", [
    {"model": "gpt-4o", "input": "hi", "truncation": {"type": "auto"}},
    {"model": "gpt-4o", "input": [{"role": None, "content": "x"}]},
    {"model": "gpt-4o", "input": [{"role": "user", "content": [{"type": {"type": "input_text"}}]}]},
    {"model": "gpt-4o", "input": "hi", "include": [None]},
    {"model": "gpt-4o", "input": "hi", "text": {"format": {"type": None}}},
    {"model": "gpt-4o", "input": "hi", "tool_choice": {"type": {}}},
])
def test_error_messages_show_no_python_reprs(server: ServerProcess, body: dict[str, Any]) -> None:
    answer = httpx.post(f"{server.base_url}/responses", json=body, timeout=30)
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert not [repr_ for repr_ in ("'None'", "{'", "['", "'{", "'[") if repr_ in message], message
    assert answer.json()["error"]["code"] == "invalid_type"


def test_405_names_the_allowed_methods(server: ServerProcess) -> None:
    answer = httpx.put(f"{server.base_url}/responses/resp_1/cancel", timeout=30)
    assert answer.status_code == 405 and answer.json()["error"]["message"].startswith("Method not allowed")
    assert set(answer.headers["Allow"].split(", ")) == {"POST", "OPTIONS"}


def test_options_answers_204_with_allow(server: ServerProcess) -> None:
    answer = httpx.request("OPTIONS", f"{server.base_url}/responses/resp_1", timeout=30)
    assert answer.status_code == 204 and answer.content == b""
    assert set(answer.headers["Allow"].split(", ")) >= {"GET", "DELETE", "OPTIONS"}
    assert "text/html" not in answer.headers.get("Content-Type", "")
