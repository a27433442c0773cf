"""Anthropic's toolsets (`computer_toolset_20260801`, `browser_toolset_20260801`): one `tools` entry with no name
that offers a family of tools, each by its member's name, every member on unless `configs.<member>.enabled` is
false. The simulator calls a member as it calls any client tool, and the `tool_use` block names its family
(`toolset_name`). Each member's input here is what a client's handler needs to act (a point, a text, a url)."""

from __future__ import annotations

from typing import Any

POINT = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1024}, "minItems": 2, "maxItems": 2}
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
AT = {"type": "object", "properties": {"coordinate": POINT}, "required": ["coordinate"]}
NOTHING: dict[str, Any] = {"type": "object", "properties": {}}
REF = {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]}
COMMON = {
    "screenshot": NOTHING, "cursor_position": NOTHING, "left_click": AT, "right_click": AT, "middle_click": AT,
    "double_click": AT, "triple_click": AT, "mouse_move": AT, "left_mouse_down": AT, "left_mouse_up": AT,
    "left_click_drag": {"type": "object", "properties": {"start_coordinate": POINT, "coordinate": POINT},
                        "required": ["start_coordinate", "coordinate"]},
    "scroll": {"type": "object", "properties": {
        "coordinate": POINT, "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
        "scroll_amount": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["coordinate", "scroll_direction", "scroll_amount"]},
    "type": TEXT, "key": TEXT,
    "hold_key": {"type": "object", "properties": {"text": {"type": "string"},
                                                  "duration": {"type": "number", "minimum": 0, "maximum": 10}},
                 "required": ["text", "duration"]},
    "wait": {"type": "object", "properties": {"duration": {"type": "number", "minimum": 0, "maximum": 10}},
             "required": ["duration"]},
    "zoom": {"type": "object", "properties": {"region": {"type": "array", "items": {"type": "integer"},
                                                         "minItems": 4, "maxItems": 4}}, "required": ["region"]},
}
BROWSER_ONLY = {
    "navigate": {"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}, "required": ["url"]},
    "new_tab": NOTHING, "list_tabs": NOTHING, "close_tab": NOTHING, "get_page_text": NOTHING, "read_page": NOTHING,
    "read_console": NOTHING, "read_network": NOTHING, "hover": AT,
    "switch_tab": {"type": "object", "properties": {"tab_id": {"type": "integer"}}, "required": ["tab_id"]},
    "find": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    "form_input": {"type": "object", "properties": {"ref": {"type": "string"}, "value": {"type": "string"}},
                   "required": ["ref", "value"]},
    "javascript_exec": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
    "file_upload": {"type": "object", "properties": {"ref": {"type": "string"}, "path": {"type": "string"}},
                    "required": ["ref", "path"]},
    "scroll_to": REF,
}
FAMILIES: dict[str, dict[str, dict[str, Any]]] = {
    "computer": COMMON,
    "browser": {**COMMON, **BROWSER_ONLY},
}
# The single computer tool (`computer_20250124`, ...): one tool, the member named by `action`.
COMPUTER_ACTION = {"type": "object", "properties": {
    "action": {"type": "string", "enum": sorted(COMMON)}, "coordinate": POINT, "text": {"type": "string"}},
    "required": ["action"]}


def family(kind: str) -> str:
    """`computer_toolset_20260801` → `computer`; `mcp_toolset` (run by the server, not the client) → `mcp`."""
    return kind.partition("_toolset")[0]


def members(kind: str, configs: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The member tools a toolset offers the model, by name; none for a family the client does not run."""
    offered = FAMILIES.get(family(kind), {})
    configs = configs or {}
    return {name: schema for name, schema in offered.items()
            if not (isinstance(configs.get(name), dict) and configs[name].get("enabled") is False)}
