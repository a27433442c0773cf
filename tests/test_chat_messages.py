"""Chat Completions accepts the message-level keys real clients send, and stays strict below the message."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from llmsim.testing import ServerProcess

CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def test_tool_message_with_name(client: openai.OpenAI) -> None:
    """LangChain JS sends `name` on every ToolMessage; OpenAI's cookbook does too."""
    completion = client.chat.completions.create(model="gpt-4o", tools=TOOLS, messages=[  # type: ignore[arg-type]
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18 C, sunny"},
    ])
    assert completion.choices[0].message.content


def test_assistant_message_with_provider_fields(client: openai.OpenAI) -> None:
    """litellm's documented tool loop sends the assistant message back as litellm returned it."""
    assistant = {"role": "assistant", "content": None, "tool_calls": [CALL], "provider_specific_fields": {"x": 1},
                 "reasoning_content": "I should look it up.",
                 "thinking_blocks": [{"type": "thinking", "thinking": "..."}], "function_call": None}
    completion = client.chat.completions.create(model="gpt-4o", tools=TOOLS, messages=[  # type: ignore[arg-type]
        {"role": "user", "content": "Weather in Paris?"}, assistant,
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"},
    ])
    assert completion.choices[0].message.content


@pytest.mark.parametrize("message, param", [
    ({"role": "assistant", "content": [{"type": "text", "text": "x", "extra": 1}]}, "messages[0].content[0].extra"),
    ({"role": "assistant", "tool_calls": [{**CALL, "extra": 1}]}, "messages[0].tool_calls[0].extra"),
    ({"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "x", "extra": 1}]},
     "messages[0].content[0].extra"),
])
def test_parts_and_tool_calls_stay_strict(server: ServerProcess, message: dict[str, Any], param: str) -> None:
    answer = httpx.post(f"{server.base_url}/chat/completions", json={"model": "gpt-4o", "messages": [message]},
                        timeout=30, headers={"X-LLMSim-Strict-Params": "true"})  # else accepted, with a warning
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "unknown_parameter" and answer.json()["error"]["param"] == param
