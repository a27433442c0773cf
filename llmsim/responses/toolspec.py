"""The tools a request offers the model, and the 400s the real API gives for tools, tool_choice and text.format
before it generates anything."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llmsim.errors import APIError
from llmsim.generation import WEB_SEARCH_TYPES
from llmsim.responses.schema import (
    CreateRequest,
    FunctionTool,
    TextFormatJsonObject,
    TextFormatJsonSchema,
)
from llmsim.shared.schema_checks import schema_error


def check(request: CreateRequest) -> None:
    fmt = request.text.format
    if isinstance(fmt, TextFormatJsonObject) and not request.previous_response_id and not request.conversation and \
            "json" not in request.model_dump_json(include={"input", "instructions"}).lower():
        raise APIError("Response input messages must contain the word 'json' in some form to use 'text.format' of "
                       "type 'json_object'.", param="input")
    if isinstance(fmt, TextFormatJsonSchema):
        error = schema_error(fmt.schema_, strict=bool(fmt.strict), require_object=True)
        if error:
            raise APIError(f"Invalid schema for response_format '{fmt.name}': {error}", param="text.format.schema",
                           code="invalid_json_schema")
    for i, tool in enumerate(request.tools):
        if isinstance(tool, FunctionTool) and tool.parameters is not None:
            # strict is enforced when the client asks for it; an unset strict falls back to best effort
            strict = "strict" in tool.model_fields_set and bool(tool.strict)
            error = schema_error(tool.parameters, strict=strict, require_object=True)
            if error:
                raise APIError(f"Invalid schema for function '{tool.name}': {error}", param=f"tools[{i}].parameters",
                               code="invalid_function_parameters")


def offered(tools: list[dict[str, Any]], items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every tool the model may call: the request's `tools`, then those of `additional_tools` input items (how
    Codex declares its tools), each `namespace` opened into its members (which keep the namespace's name)."""
    found = [tool for item in items if item.get("type") == "additional_tools" and isinstance(item.get("tools"), list)
             for tool in item["tools"] if isinstance(tool, dict)]
    return list(_opened([*tools, *found], None)) if found or any(t.get("type") == "namespace" for t in tools) \
        else tools


def _opened(tools: list[dict[str, Any]], namespace: str | None) -> Iterable[dict[str, Any]]:
    for tool in tools:
        if tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            yield from _opened([t for t in tool["tools"] if isinstance(t, dict)], str(tool.get("name") or ""))
        elif isinstance(tool.get("type"), str):
            yield {**tool, "namespace": namespace} if namespace and "namespace" not in tool else tool


def check_choice(choice: str | dict[str, Any], tools: list[dict[str, Any]]) -> None:
    """A tool_choice naming a tool must name one the request offers (see `offered`)."""
    if not isinstance(choice, dict) or choice["type"] == "allowed_tools":
        return
    kind = choice["type"]
    if kind in ("function", "custom"):
        found = any(t["type"] == kind and t.get("name") == choice.get("name") for t in tools)
    elif kind == "mcp":
        found = any(t["type"] == "mcp" and t.get("server_label") == choice.get("server_label") for t in tools)
    elif kind in WEB_SEARCH_TYPES:
        found = any(t["type"] in WEB_SEARCH_TYPES for t in tools)
    else:
        found = any(t["type"] == kind for t in tools)
    if not found:
        raise APIError(f"Tool choice '{kind}' not found in 'tools' parameter.", param="tool_choice",
                       code="invalid_value")
