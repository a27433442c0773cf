"""Function tools through the official SDK: tool_choice, schema-valid arguments, parallel and max calls,
the answer after outputs come back, and the streaming events."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import jsonschema
import openai
import pytest
from pydantic import BaseModel

from llmsim.testing import ServerProcess

WEATHER = {
    "type": "function", "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
            "when": {"type": "string", "format": "date"},
            "coords": {"type": "object", "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90},
                                                        "lon": {"type": "number", "minimum": -180, "maximum": 180}},
                       "required": ["lat", "lon"], "additionalProperties": False},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        },
        "required": ["city", "unit", "days", "when", "coords", "tags"],
        "additionalProperties": False,
    },
    "strict": True,
}
STOCK = {"type": "function", "name": "get_stock_price", "description": "Look up a stock price by ticker symbol.",
         "parameters": {"type": "object", "properties": {"ticker": {"type": "string", "pattern": "^[A-Z]{3,5}$"}},
                        "required": ["ticker"], "additionalProperties": False}, "strict": True}
TOOLS = [WEATHER, STOCK]
BOTH = "What is the weather in Paris, and the stock price of ACME?"


def calls(response: object) -> list:
    return [item for item in response.output if item.type == "function_call"]  # type: ignore[attr-defined]


def test_auto_calls_the_tool_the_input_asks_for_with_schema_valid_arguments(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="What's the weather like in Paris?", tools=TOOLS)
    [call] = calls(response)
    assert call.name == "get_weather" and call.call_id.startswith("call_") and call.status == "completed"
    jsonschema.validate(json.loads(call.arguments), WEATHER["parameters"], format_checker=jsonschema.FormatChecker())
    assert [item.type for item in response.output] == ["function_call"]
    assert response.usage.output_tokens > 0


def test_auto_answers_in_text_when_no_tool_fits(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="Tell me a short story.", tools=TOOLS)
    assert not calls(response) and response.output_text


def test_tool_choice_none_never_calls(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input=BOTH, tools=TOOLS, tool_choice="none")
    assert not calls(response) and response.output_text


def test_required_calls_a_tool_even_when_the_input_does_not_ask(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="Tell me a short story.", tools=TOOLS,
                                       tool_choice="required")
    assert len(calls(response)) == 1 and calls(response)[0].name in ("get_weather", "get_stock_price")


def test_a_named_function_is_the_one_called(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="What's the weather?", tools=TOOLS,
                                       tool_choice={"type": "function", "name": "get_stock_price"})
    [call] = calls(response)
    assert call.name == "get_stock_price"
    jsonschema.validate(json.loads(call.arguments), STOCK["parameters"])


def test_allowed_tools_restricts_the_choice(client: openai.OpenAI) -> None:
    choice = {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "get_stock_price"}]}
    response = client.responses.create(model="gpt-4o", input=BOTH, tools=TOOLS, tool_choice=choice)
    assert [c.name for c in calls(response)] == ["get_stock_price"]


def test_parallel_tool_calls_and_max_tool_calls(client: openai.OpenAI) -> None:
    parallel = client.responses.create(model="gpt-4o", input=BOTH, tools=TOOLS)
    assert sorted(c.name for c in calls(parallel)) == ["get_stock_price", "get_weather"]
    assert len({c.call_id for c in calls(parallel)}) == 2
    single = client.responses.create(model="gpt-4o", input=BOTH, tools=TOOLS, parallel_tool_calls=False)
    assert len(calls(single)) == 1
    capped = client.responses.create(model="gpt-4o", input=BOTH, tools=TOOLS, max_tool_calls=1)
    assert len(calls(capped)) == 1


def test_outputs_by_previous_response_id_get_an_answer_that_uses_them(client: openai.OpenAI) -> None:
    first = client.responses.create(model="gpt-4o", input="What's the weather in Paris?", tools=TOOLS)
    [call] = calls(first)
    second = client.responses.create(
        model="gpt-4o", previous_response_id=first.id, tools=TOOLS,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"temp_c": 21, "sky": "clear"}'}],
    )
    assert not calls(second)
    assert "get_weather returned temp_c: 21, sky: clear" in second.output_text  # read out, not pasted as JSON


def test_outputs_in_a_full_input_get_an_answer_that_uses_them(client: openai.OpenAI) -> None:
    history = [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "18C and raining"},
    ]
    response = client.responses.create(model="gpt-4o", input=history, tools=TOOLS)
    assert not calls(response) and "get_weather returned 18C and raining" in response.output_text


def test_streaming_a_call_sends_its_events_in_order(client: openai.OpenAI) -> None:
    events = list(client.responses.create(model="gpt-4o", input="Weather in Oslo?", tools=TOOLS, stream=True))
    kinds = [e.type for e in events]
    added = kinds.index("response.output_item.added")
    done = kinds.index("response.function_call_arguments.done")
    assert events[added].item.type == "function_call" and events[added].item.arguments == ""
    deltas = [e for e in events[added:done] if e.type == "response.function_call_arguments.delta"]
    assert len(deltas) > 1
    final = events[-1].response
    [call] = calls(final)
    assert "".join(d.delta for d in deltas) == events[done].arguments == call.arguments
    assert kinds[done + 1] == "response.output_item.done" and events[done + 1].item.arguments == call.arguments
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_stream_helper_accumulates_the_call(client: openai.OpenAI) -> None:
    with client.responses.stream(model="gpt-4o", input="Weather in Rome?", tools=TOOLS) as stream:
        final = stream.get_final_response()
    [call] = calls(final)
    jsonschema.validate(json.loads(call.arguments), WEATHER["parameters"])


def test_same_seed_same_arguments(client: openai.OpenAI) -> None:
    def arguments() -> str:
        response = client.responses.create(model="gpt-4o", input="Weather in Lima?", tools=TOOLS,
                                           extra_headers={"X-LLMSim-Seed": "42"})
        return calls(response)[0].arguments

    assert arguments() == arguments()


def test_choosing_a_function_that_is_not_in_tools_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="hi", tools=TOOLS,
                                tool_choice={"type": "function", "name": "nope"})
    assert caught.value.body["param"] == "tool_choice"


def test_strict_parameters_that_are_not_closed_are_a_400(client: openai.OpenAI) -> None:
    tool = {"type": "function", "name": "f", "strict": True,
            "parameters": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="hi", tools=[tool])
    assert caught.value.code == "invalid_function_parameters" and caught.value.body["param"] == "tools[0].parameters"
    assert "'additionalProperties' is required to be supplied and to be false" in caught.value.message


def test_tool_call_rate_makes_unprompted_calls(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server("--tool-call-rate", "1")
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    response = client.responses.create(model="gpt-4o", input="Tell me a short story.", tools=TOOLS)
    assert len(calls(response)) == 1


class CityReport(BaseModel):
    city: str
    summary: str


def test_a_structured_answer_after_tool_outputs_reuses_their_strings(client: openai.OpenAI) -> None:
    history = [
        {"role": "user", "content": "Weather report for Paris as JSON."},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"city": "Paris", "summary": "warm"}'},
    ]
    parsed = client.responses.parse(model="gpt-4o", input=history, tools=TOOLS, text_format=CityReport)
    assert parsed.output_parsed == CityReport(city="Paris", summary="warm")


def test_the_agents_sdk_streams_a_tool_loop_into_a_structured_output(server: ServerProcess) -> None:
    import agents  # here, not at the top: every xdist process collects this module; the SDK costs a core ~1.5 s

    agents.set_tracing_disabled(True)
    seen: list[str] = []

    @agents.function_tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        seen.append(city)
        return json.dumps({"city": city, "summary": "sunny"})

    async def run() -> object:
        model = agents.OpenAIResponsesModel(model="gpt-4o", openai_client=openai.AsyncOpenAI(
            base_url=server.base_url, api_key="sk-test", max_retries=0))
        agent = agents.Agent(name="weather", model=model, tools=[get_weather], output_type=CityReport)
        result = agents.Runner.run_streamed(agent, "What's the weather in Paris?")
        kinds = [event.type async for event in result.stream_events()]
        assert "raw_response_event" in kinds
        return result.final_output

    assert asyncio.run(run()) == CityReport(city="Paris", summary="sunny") and seen == ["Paris"]
