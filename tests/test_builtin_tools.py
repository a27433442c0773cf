"""Built-in tools round trip through the SDK, streaming and not: web_search, file_search, code_interpreter,
image_generation, mcp (list, call, approval) and custom tools. Every item and event must parse as the SDK's
own types."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
import struct
import zlib
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import (
    Response,
    ResponseCodeInterpreterToolCall,
    ResponseCustomToolCall,
    ResponseFileSearchToolCall,
    ResponseFunctionWebSearch,
    ResponseStreamEvent,
)
from openai.types.responses.response_output_item import ImageGenerationCall, McpApprovalRequest, McpCall, McpListTools
from pydantic import TypeAdapter

from llmsim.testing import ServerProcess


def stream(client: openai.OpenAI, **body: Any) -> tuple[list[Any], Any]:
    events = list(client.responses.create(stream=True, **body))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"
    return events, events[-1].response


def kinds(events: list[Any]) -> list[str]:
    return [e.type for e in events]


def test_web_search_cites_its_sources(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="Search the web for the latest news on rockets.",
                                       tools=[{"type": "web_search"}], include=["web_search_call.action.sources"])
    call, message = response.output
    assert isinstance(call, ResponseFunctionWebSearch) and call.status == "completed"
    assert call.action.type == "search" and "rockets" in call.action.query
    text = message.content[0].text
    notes = message.content[0].annotations
    assert len(notes) >= 2 and {n.url for n in notes} == {s.url for s in call.action.sources}
    for note in notes:
        assert note.type == "url_citation" and text[note.start_index:note.end_index].endswith(f"({note.url})")


def test_web_search_streams_its_phases_and_annotations(client: openai.OpenAI) -> None:
    events, final = stream(client, model="gpt-4o", input="Look up today's weather news online",
                           tools=[{"type": "web_search_preview"}])
    names = kinds(events)
    phases = [n for n in names if n.startswith("response.web_search_call.")]
    assert phases == ["response.web_search_call.in_progress", "response.web_search_call.searching",
                      "response.web_search_call.completed"]
    added = [e.annotation for e in events if e.type == "response.output_text.annotation.added"]
    assert added and [a.url for a in added] == [a.url for a in final.output[1].content[0].annotations]
    assert final.output[0].action.sources is None  # not included unless asked


def test_file_search_returns_results_only_when_included(client: openai.OpenAI) -> None:
    tool = {"type": "file_search", "vector_store_ids": ["vs_123"]}
    plain = client.responses.create(model="gpt-4o", input="What do my documents say about pricing?", tools=[tool])
    assert isinstance(plain.output[0], ResponseFileSearchToolCall) and plain.output[0].results is None
    full = client.responses.create(model="gpt-4o", input="What do my documents say about pricing?", tools=[tool],
                                   include=["file_search_call.results"])
    call, message = full.output
    assert call.queries and call.results and all(r.file_id.startswith("file-") for r in call.results)
    cited = {n.file_id for n in message.content[0].annotations}
    assert cited == {r.file_id for r in call.results}
    assert all(n.type == "file_citation" and n.index <= len(message.content[0].text)
               for n in message.content[0].annotations)


def test_code_interpreter_runs_code_whose_logs_match(client: openai.OpenAI) -> None:
    events, final = stream(client, model="gpt-4o", input="Calculate the sum of some numbers with python.",
                           tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
                           include=["code_interpreter_call.outputs"])
    call = final.output[0]
    assert isinstance(call, ResponseCodeInterpreterToolCall) and call.container_id.startswith("cntr_")
    code = "".join(e.delta for e in events if e.type == "response.code_interpreter_call_code.delta")
    assert code == call.code == next(e.code for e in events if e.type == "response.code_interpreter_call_code.done")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(call.code, {})  # noqa: S102 - the simulator's own code: prove the logs are what it prints
    assert call.outputs[0].logs == printed.getvalue()
    assert "response.code_interpreter_call.interpreting" in kinds(events)
    assert printed.getvalue().strip() in final.output_text


def _png_pixels(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, size, idat = 8, (0, 0), b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position:position + 4])
        tag, body = data[position + 4:position + 8], data[position + 8:position + 8 + length]
        (crc,) = struct.unpack(">I", data[position + 8 + length:position + 12 + length])
        assert zlib.crc32(tag + body) == crc
        if tag == b"IHDR":
            size = struct.unpack(">II", body[:8])
        idat += body if tag == b"IDAT" else b""
        position += 12 + length
    width, height = size
    assert len(zlib.decompress(idat)) == height * (1 + 3 * width)
    return size


def test_image_generation_returns_a_valid_png_and_partial_images(client: openai.OpenAI) -> None:
    events, final = stream(client, model="gpt-4o", input="Draw a picture of a lighthouse.",
                           tools=[{"type": "image_generation", "partial_images": 2}])
    call = final.output[0]
    assert isinstance(call, ImageGenerationCall) and call.status == "completed"
    assert _png_pixels(base64.b64decode(call.result)) == (16, 16)
    partials = [e for e in events if e.type == "response.image_generation_call.partial_image"]
    assert [p.partial_image_index for p in partials] == [0, 1]
    assert "response.image_generation_call.generating" in kinds(events)
    added = next(e for e in events if e.type == "response.output_item.added")
    assert added.item.type == "image_generation_call" and added.item.result is None


MCP = {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp",
       "allowed_tools": ["ask_question", "read_wiki"]}


def test_mcp_without_approval_lists_calls_and_answers(client: openai.OpenAI) -> None:
    events, final = stream(client, model="gpt-4o", input="Ask deepwiki a question about the repo.",
                           tools=[{**MCP, "require_approval": "never"}])
    listed, call, message = final.output
    assert isinstance(listed, McpListTools) and [t.name for t in listed.tools] == ["ask_question", "read_wiki"]
    assert isinstance(call, McpCall) and call.name == "ask_question" and call.output and call.error is None
    args = "".join(e.delta for e in events if e.type == "response.mcp_call_arguments.delta")
    assert args == call.arguments
    assert message.type == "message" and "ask_question" in final.output_text
    names = kinds(events)
    assert names.index("response.mcp_list_tools.completed") < names.index("response.mcp_call.in_progress")


def test_mcp_approval_round_trip(client: openai.OpenAI) -> None:
    first = client.responses.create(model="gpt-4o", input="Ask deepwiki about the repo.", tools=[MCP])
    listed, request = first.output
    assert isinstance(listed, McpListTools) and isinstance(request, McpApprovalRequest)
    approval = {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}
    second = client.responses.create(model="gpt-4o", previous_response_id=first.id, input=[approval], tools=[MCP])
    call, message = second.output  # tools already listed in this conversation: no second mcp_list_tools
    assert isinstance(call, McpCall) and call.approval_request_id == request.id
    assert call.arguments == request.arguments and message.type == "message"
    denial = {**approval, "approve": False}
    third = client.responses.create(model="gpt-4o", previous_response_id=first.id, input=[denial], tools=[MCP])
    assert [item.type for item in third.output] == ["message"] and "declined" in third.output_text


def test_custom_tool_with_a_regex_grammar(client: openai.OpenAI) -> None:
    tool = {"type": "custom", "name": "sql_query", "description": "Run an SQL query on the sales database.",
            "format": {"type": "grammar", "syntax": "regex", "definition": r"SELECT \w+ FROM sales LIMIT \d{1,2}"}}
    events, final = stream(client, model="gpt-4o", input="Query the sales database.", tools=[tool])
    call = final.output[0]
    assert isinstance(call, ResponseCustomToolCall) and call.name == "sql_query"
    assert re.fullmatch(tool["format"]["definition"], call.input)
    assert "".join(e.delta for e in events if e.type == "response.custom_tool_call_input.delta") == call.input
    assert next(e.input for e in events if e.type == "response.custom_tool_call_input.done") == call.input
    output = {"type": "custom_tool_call_output", "call_id": call.call_id, "output": "42 rows"}
    answer = client.responses.create(model="gpt-4o", previous_response_id=final.id, input=[output], tools=[tool])
    assert "42 rows" in answer.output_text


@pytest.mark.parametrize("tool", [{"type": "web_search"}, {"type": "code_interpreter", "container": {"type": "auto"}},
                                  {"type": "image_generation"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}])
def test_forcing_a_built_in_tool(client: openai.OpenAI, tool: dict[str, Any]) -> None:
    response = client.responses.create(model="gpt-4o", input="hello", tools=[tool], tool_choice={"type": tool["type"]})
    assert response.output[0].type.startswith(tool["type"].split("_")[0]) and response.output[-1].type == "message"


ALL_TOOLS = [
    ({"type": "web_search"}, "Search the web for news", ["web_search_call.action.sources"]),
    ({"type": "file_search", "vector_store_ids": ["vs_1"]}, "Check my documents", ["file_search_call.results"]),
    ({"type": "code_interpreter", "container": {"type": "auto"}}, "Calculate this in python",
     ["code_interpreter_call.outputs"]),
    ({"type": "image_generation", "partial_images": 1}, "Draw a cat picture", []),
    ({**MCP, "require_approval": "never"}, "Ask deepwiki", []),
    (MCP, "Ask deepwiki", []),
    ({"type": "custom", "name": "shell", "description": "Run a shell command."}, "Run a shell command", []),
    ({"type": "function", "name": "get_weather", "description": "Weather for a city.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}, "Weather in Oslo?", []),
]
EVENT = TypeAdapter(ResponseStreamEvent)


def _without_ids(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in item.items() if k not in ("id", "approval_request_id")} for item in output]


@pytest.mark.parametrize(("tool", "text", "include"), ALL_TOOLS, ids=lambda v: v["type"] if isinstance(v, dict) else "")
def test_streamed_and_plain_agree_and_every_event_is_an_sdk_type(server: ServerProcess, tool: dict[str, Any],
                                                                 text: str, include: list[str]) -> None:
    body = {"model": "gpt-4o", "input": text, "tools": [tool], "include": include}
    headers = {"X-LLMSim-Seed": "7"}
    plain = httpx.post(f"{server.base_url}/responses", json=body, headers=headers).json()
    Response.model_validate(plain)
    with httpx.stream("POST", f"{server.base_url}/responses", json={**body, "stream": True}, headers=headers) as sse:
        events = [json.loads(line[6:]) for line in sse.iter_lines() if line.startswith("data: ")]
    for event in events:
        EVENT.validate_python(event)  # strict: a field the SDK's type lacks or mistypes fails here
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed" and _without_ids(final["output"]) == _without_ids(plain["output"])
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done == final["output"]
