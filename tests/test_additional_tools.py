"""Tools declared in an `additional_tools` input item (how Codex CLI's newer models get theirs: namespaces of
function tools, custom tools with lark or regex grammars) are the request's tools: tool_choice, the simulator and
scenarios see them. And Codex's `client_metadata` is accepted over HTTP and WebSocket mode (issue 32, findings 1
and 3; tests/clients/test_codex.py runs Codex itself)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from llmsim.testing import ServerProcess

EXEC_GRAMMAR = "start: SOURCE\nSOURCE: /[\\s\\S]+/\n"
PATCH_GRAMMAR = 'start: "*** Begin Patch" LF hunk+ "*** End Patch" LF?\nhunk: /[^\\n]*/ LF\nLF: "\\n"\n'
ADDITIONAL = {"type": "additional_tools", "role": "developer", "tools": [
    {"type": "namespace", "name": "functions", "description": "", "tools": [
        {"type": "custom", "name": "exec", "description": "Run JavaScript.",
         "format": {"type": "grammar", "syntax": "lark", "definition": EXEC_GRAMMAR}},
        {"type": "function", "name": "wait", "description": "Wait for a job.", "strict": False,
         "parameters": {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}}]},
    {"type": "custom", "name": "ticket", "format": {"type": "grammar", "syntax": "regex", "definition": "T-[0-9]{4}"}},
]}
METADATA = {"session_id": "s-1", "thread_id": "t-1", "turn_id": "u-1"}


def body(*items: dict, **extra: object) -> dict:
    return {"model": "gpt-6.2-sol", "input": [ADDITIONAL, *items], "client_metadata": METADATA, **extra}


USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go."}]}


@pytest.fixture
def scenario(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{server.url}/llmsim/admin") as admin:
        yield admin
        admin.delete("/scenarios")


def test_tool_choice_required_calls_an_additional_tool(server: ServerProcess) -> None:
    answer = httpx.post(f"{server.base_url}/responses", json=body(USER, tool_choice="required"))
    assert answer.status_code == 200, answer.text
    calls = [item for item in answer.json()["output"] if item["type"].endswith("call")]
    assert calls and calls[0]["name"] in ("exec", "wait", "ticket")
    assert "x-llmsim-warnings" not in answer.headers  # every part of it is known
    assert answer.json()["tools"] == []  # the response echoes the request's `tools`, as sent


def test_tool_choice_names_an_additional_custom_tool(server: ServerProcess) -> None:
    choice = {"type": "custom", "name": "ticket"}
    answer = httpx.post(f"{server.base_url}/responses", json=body(USER, tool_choice=choice))
    assert answer.status_code == 200, answer.text
    call = next(item for item in answer.json()["output"] if item["type"] == "custom_tool_call")
    assert call["name"] == "ticket" and call["input"][:2] == "T-" and len(call["input"]) == 6  # its regex holds
    missing = httpx.post(f"{server.base_url}/responses", json=body(USER, tool_choice={"type": "custom", "name": "x"}))
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "tool_choice"


def test_a_scripted_call_to_a_custom_tool_is_a_custom_tool_call(client: openai.OpenAI, scenario: httpx.Client) -> None:
    script = 'await tools.exec_command({cmd: "ls"});'
    scenario.put("/scenarios", json={"turns": [
        {"tool_calls": [{"name": "exec", "arguments": script}, {"name": "wait", "arguments": {"ms": 5}}]}]}
                 ).raise_for_status()
    request = body(USER)
    response = client.responses.create(model=request["model"], input=request["input"],
                                       extra_body={"client_metadata": METADATA})
    custom, function = [item for item in response.output if item.type != "reasoning"]
    assert (custom.type, custom.name, custom.input) == ("custom_tool_call", "exec", script)
    assert (function.type, function.name, function.arguments) == ("function_call", "wait", '{"ms": 5}')


def test_apply_patch_is_scriptable(client: openai.OpenAI, scenario: httpx.Client) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
    scenario.put("/scenarios", json={"turns": [{"tool_calls": [{"name": "apply_patch", "arguments": patch}]}]}
                 ).raise_for_status()
    tools = [{"type": "custom", "name": "apply_patch", "format": {"type": "grammar", "syntax": "lark",
                                                                 "definition": PATCH_GRAMMAR}}]
    response = client.responses.create(model="gpt-5", input="Patch it.", tools=tools)  # type: ignore[list-item]
    assert [(item.type, item.input) for item in response.output if item.type == "custom_tool_call"] == [
        ("custom_tool_call", patch)]


def test_client_metadata_in_websocket_mode(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.send({"type": "response.create", **body(USER)})  # type: ignore[arg-type]  # beyond the SDK's type
        kinds = []
        for event in connection:
            kinds.append(event.type)
            if event.type in ("response.completed", "error"):
                break
    assert kinds[-1] == "response.completed", kinds
