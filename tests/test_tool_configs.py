"""Built-in tool configurations and `allowed_tools` are validated up front with the real API's 400s: a bad
field never reaches generation (where it was a 500, or `response.failed` on a stream)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from llmsim.testing import ServerProcess

FUNCTION = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
MCP = {"type": "mcp", "server_label": "docs", "server_url": "https://example.com/mcp"}

BAD = [
    ({"tools": [{**MCP, "require_approval": 1}]}, "tools[0].require_approval", "invalid_type"),
    ({"tools": [{**MCP, "allowed_tools": {"tool_names": "search"}}]}, "tools[0].allowed_tools.tool_names",
     "invalid_type"),
    ({"tools": [{**MCP, "headers": {"X": 1}}]}, "tools[0].headers.X", "invalid_type"),
    ({"tools": [{"type": "mcp"}]}, "tools[0].server_label", "missing_required_parameter"),
    ({"tools": [{"type": "custom", "name": "x", "format": {"type": "grammar", "syntax": "regex", "definition": 1}}]},
     "tools[0].format.definition", "invalid_type"),
    ({"tools": [{"type": "custom", "name": "x", "format": {"type": "grammar", "syntax": "ebnf", "definition": "a"}}]},
     "tools[0].format.syntax", "invalid_value"),
    ({"tools": [{"type": "image_generation", "partial_images": "2"}]}, "tools[0].partial_images", "invalid_type"),
    ({"tools": [{"type": "image_generation", "partial_images": 9}]}, "tools[0].partial_images",
     "integer_above_max_value"),
    ({"tools": [{"type": "file_search"}]}, "tools[0].vector_store_ids", "missing_required_parameter"),
    ({"tools": [{"type": "web_search", "search_context_size": "huge"}]}, "tools[0].search_context_size",
     "invalid_value"),
    ({"tools": [{"type": "code_interpreter", "container": 1}]}, "tools[0].container", "invalid_type"),
    ({"tools": [{"type": "image_generation", "sharpness": 1}]}, "tools[0].sharpness", "unknown_parameter"),
    ({"tools": [FUNCTION], "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [1]}},
     "tool_choice.tools[0]", "invalid_type"),
    ({"tools": [FUNCTION], "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": "lookup"}},
     "tool_choice.tools", "invalid_type"),
    ({"tools": [FUNCTION], "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"name": "lookup"}]}},
     "tool_choice.tools[0].type", "missing_required_parameter"),
    ({"tools": [FUNCTION], "tool_choice": {"type": "allowed_tools", "mode": "sometimes", "tools": []}},
     "tool_choice.mode", "invalid_value"),
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("extra, param, code", BAD, ids=[param for _, param, _ in BAD])
def test_invalid_tool_configs_are_400s(server: ServerProcess, extra: dict[str, Any], param: str, code: str,
                                       stream: bool) -> None:
    body = {"model": "gpt-4o", "input": "Use the tool.", "tool_choice": "required", **extra, "stream": stream}
    answer = httpx.post(f"{server.base_url}/responses", json=body, timeout=30,
                        headers={"X-LLMSim-Strict-Params": "true"})  # unknown names and values: refused
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param and answer.json()["error"]["code"] == code


@pytest.mark.parametrize("tools, choice", [
    ([{**MCP, "require_approval": "never", "allowed_tools": ["search"]}], "required"),
    ([{**MCP, "require_approval": {"never": {"tool_names": ["search"]}}, "allowed_tools": {"tool_names": ["search"]}}],
     "required"),
    ([{"type": "image_generation", "partial_images": 2, "quality": "low"}], "required"),
    ([{"type": "custom", "name": "code", "format": {"type": "grammar", "syntax": "regex", "definition": "[a-z]{3}"}}],
     "required"),
    ([FUNCTION, {"type": "web_search"}], {"type": "allowed_tools", "mode": "required",
                                          "tools": [{"type": "function", "name": "lookup"}]}),
])
def test_valid_tool_configs_still_run(server: ServerProcess, tools: list[dict[str, Any]], choice: Any) -> None:
    body = {"model": "gpt-4o", "input": "Use the tool.", "tools": tools, "tool_choice": choice}
    answer = httpx.post(f"{server.base_url}/responses", json=body, timeout=30)
    assert answer.status_code == 200 and answer.json()["status"] == "completed", answer.text
