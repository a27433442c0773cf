"""The 400s the real API gives for tools, tool_choice and text.format before it generates anything."""

from __future__ import annotations

from llmsim.errors import APIError
from llmsim.responses.schema import (
    CreateRequest,
    FunctionTool,
    TextFormatJsonObject,
    TextFormatJsonSchema,
)
from llmsim.responses.schema_checks import schema_error

WEB_SEARCH_TYPES = frozenset({"web_search", "web_search_preview", "web_search_2025_08_26",
                              "web_search_preview_2025_03_11"})


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
    _check_choice(request)


def _check_choice(request: CreateRequest) -> None:
    choice = request.tool_choice_data
    if not isinstance(choice, dict) or choice["type"] == "allowed_tools":
        return
    kind = choice["type"]
    tools = [tool.model_dump(by_alias=True) for tool in request.tools]
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
