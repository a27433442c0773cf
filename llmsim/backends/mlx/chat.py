"""Prompt turns and tools → the chat messages and tool list Hugging Face chat templates expect."""

from __future__ import annotations

import json
from typing import Any

from llmsim.generation import Turn


def _arguments(text: str) -> Any:
    """Templates render arguments with `tojson`: give them the object when the text is JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def to_messages(turns: list[Turn]) -> list[dict[str, Any]]:
    """Consecutive function calls join the assistant message before them, as chat templates expect."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        if turn.kind == "function_call":
            call = {"id": turn.call_id, "type": "function",
                    "function": {"name": turn.name, "arguments": _arguments(turn.text)}}
            last = messages[-1] if messages else None
            if last is None or last["role"] != "assistant":
                last = {"role": "assistant", "content": ""}
                messages.append(last)
            last.setdefault("tool_calls", []).append(call)
        elif turn.role == "tool":
            messages.append({"role": "tool", "tool_call_id": turn.call_id, "content": turn.text})
        else:
            messages.append({"role": turn.role, "content": turn.text})
    return messages


def to_tools(tools: list[dict[str, Any]], tool_choice: str | dict[str, Any]) -> list[dict[str, Any]]:
    """Function tools in the chat-completions shape templates render; none when tool_choice is "none"."""
    if tool_choice == "none":
        return []
    chosen = tool_choice.get("name") if isinstance(tool_choice, dict) else None
    return [
        {"type": "function", "function": {"name": tool["name"], "description": tool.get("description") or "",
                                          "parameters": tool.get("parameters") or {"type": "object",
                                                                                   "properties": {}}}}
        for tool in tools
        if tool.get("type") == "function" and (chosen is None or tool["name"] == chosen)
    ]
