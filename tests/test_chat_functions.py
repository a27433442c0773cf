"""Chat Completions' deprecated `functions` / `function_call` form, found by tests/test_request_fuzz.py: a
named `function_call` object used to crash with a 500."""

from __future__ import annotations

import json

import openai
import pytest

FUNCTIONS = [{"name": "get_weather", "description": "Get the current weather in a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def test_a_named_function_call_calls_that_function(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hello"}],
                                                functions=FUNCTIONS, function_call={"name": "get_weather"})
    message = completion.choices[0].message
    calls = [message.function_call] if message.function_call else [call.function for call in message.tool_calls]
    assert [call.name for call in calls] == ["get_weather"] and "city" in json.loads(calls[0].arguments)


def test_a_named_function_call_without_that_function_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hello"}],
                                       function_call={"name": "get_weather"})
    assert caught.value.status_code == 400 and caught.value.type == "invalid_request_error"
