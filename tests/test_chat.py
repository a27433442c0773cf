"""Chat Completions through the official SDK: create, stream, the .stream helper and .parse."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from llmsim.testing import ServerProcess

USER = [{"role": "user", "content": "Tell me about the sea."}]
SEED = {"X-LLMSim-Seed": "5"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                        "unit": {"type": "string", "enum": ["c", "f"]}},
                       "required": ["city", "unit"], "additionalProperties": False},
        "strict": True,
    },
}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}


def test_create_returns_a_chat_completion(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="gpt-4o", messages=USER)
    assert completion.object == "chat.completion" and completion.id.startswith("chatcmpl-")
    assert completion.model == "gpt-4o-2024-08-06"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant" and choice.message.content
    usage = completion.usage
    assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.completion_tokens_details.reasoning_tokens == 0


def test_prompt_tokens_match_the_responses_api(client: openai.OpenAI) -> None:
    messages = [{"role": "developer", "content": "Be brief."}, *USER]
    chat = client.chat.completions.create(model="gpt-4o", messages=messages)
    responses = client.responses.create(model="gpt-4o", input=messages, store=False)
    assert chat.usage.prompt_tokens == responses.usage.input_tokens


def test_every_role_and_content_part_is_accepted(client: openai.OpenAI) -> None:
    messages: list[Any] = [
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": [{"type": "text", "text": "Answer in English."}]},
        {"role": "user", "name": "ann", "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"filename": "notes.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}},
        ]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather",
                                                              "arguments": '{"city": "Oslo", "unit": "c"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "12 degrees, rain"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It rains."}], "refusal": None},
        {"role": "function", "name": "get_weather", "content": "still raining"},
        {"role": "user", "content": "Thanks. And tomorrow?"},
    ]
    completion = client.chat.completions.create(model="gpt-4o", messages=messages, tools=[WEATHER])
    assert completion.choices[0].finish_reason in ("stop", "tool_calls")
    plain = client.chat.completions.create(model="gpt-4o", messages=[messages[-1]])
    assert completion.usage.prompt_tokens > plain.usage.prompt_tokens + 85  # the low-detail image alone is 85


def test_seed_makes_choices_repeatable_and_n_gives_distinct_ones(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(model="gpt-4o", messages=USER, seed=42, n=3)
    again = client.chat.completions.create(model="gpt-4o", messages=USER, seed=42, n=3)
    texts = [c.message.content for c in first.choices]
    assert [c.index for c in first.choices] == [0, 1, 2]
    assert texts == [c.message.content for c in again.choices]
    assert len(set(texts)) == 3
    single = client.chat.completions.create(model="gpt-4o", messages=USER, seed=42)
    assert single.choices[0].message.content == texts[0]
    assert first.usage.completion_tokens > single.usage.completion_tokens  # summed over the 3 choices
    assert first.usage.prompt_tokens == single.usage.prompt_tokens  # counted once


@pytest.mark.parametrize("param", ["max_tokens", "max_completion_tokens"])
def test_output_limits_end_with_length(client: openai.OpenAI, param: str) -> None:
    completion = client.chat.completions.create(model="gpt-4o", messages=USER, **{param: 7})
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 7


def test_reasoning_models_gate_parameters_like_the_real_api(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as max_tokens:
        client.chat.completions.create(model="o3", messages=USER, max_tokens=50)
    assert max_tokens.value.body["param"] == "max_tokens"
    assert "max_completion_tokens" in max_tokens.value.body["message"]
    with pytest.raises(openai.BadRequestError) as effort:
        client.chat.completions.create(model="gpt-4o", messages=USER, reasoning_effort="high")
    assert effort.value.body["param"] == "reasoning_effort"
    reasoned = client.chat.completions.create(model="o3", messages=USER, reasoning_effort="high")
    details = reasoned.usage.completion_tokens_details
    assert details.reasoning_tokens > 0 and reasoned.usage.completion_tokens > details.reasoning_tokens


def test_stop_sequences_cut_the_text(client: openai.OpenAI) -> None:
    full = client.chat.completions.create(model="gpt-4o", messages=USER, seed=3).choices[0].message.content
    words = full.split(" ")
    stop = " " + words[len(words) // 2]
    expected = full[:full.index(stop)]
    cut = client.chat.completions.create(model="gpt-4o", messages=USER, seed=3, stop=[stop, "zzz-never"])
    assert cut.choices[0].message.content == expected and cut.choices[0].finish_reason == "stop"
    assert cut.usage.completion_tokens < client.chat.completions.create(
        model="gpt-4o", messages=USER, seed=3).usage.completion_tokens
    streamed = client.chat.completions.create(model="gpt-4o", messages=USER, seed=3, stop=stop, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == expected


def test_logprobs(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="gpt-4o", messages=USER, logprobs=True, top_logprobs=3)
    tokens = completion.choices[0].logprobs.content
    assert "".join(t.token for t in tokens) == completion.choices[0].message.content
    assert all(len(t.top_logprobs) == 3 and t.logprob <= 0 for t in tokens)
    plain = client.chat.completions.create(model="gpt-4o", messages=USER)
    assert plain.choices[0].logprobs is None
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(model="gpt-4o", messages=USER, top_logprobs=3)
    assert error.value.body["param"] == "top_logprobs"


def test_stream_chunks_and_usage(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=USER, seed=8, stream=True,
                                                 stream_options={"include_usage": True}))
    whole = client.chat.completions.create(model="gpt-4o", messages=USER, seed=8)
    assert {c.object for c in chunks} == {"chat.completion.chunk"} and len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks[:-1]) == whole.choices[0].message.content
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    assert all(c.usage is None for c in chunks[:-1])
    assert all(c.obfuscation for c in chunks[:-1])


def test_stream_ends_with_done_and_obfuscation_can_be_turned_off(server: ServerProcess) -> None:
    body = {"model": "gpt-4o", "messages": USER, "stream": True, "stream_options": {"include_obfuscation": False}}
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body) as response:
        lines = [line for line in response.iter_lines() if line]
    assert response.headers["content-type"].startswith("text/event-stream")
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert chunks and all("obfuscation" not in c and "usage" not in c for c in chunks)


def test_stream_helper_accumulates_the_completion(client: openai.OpenAI) -> None:
    with client.chat.completions.stream(model="gpt-4o", messages=USER, seed=9) as stream:
        deltas = [event.delta for event in stream if event.type == "content.delta"]
        final = stream.get_final_completion()
    assert "".join(deltas) == final.choices[0].message.content
    assert final.choices[0].message.content == client.chat.completions.create(
        model="gpt-4o", messages=USER, seed=9).choices[0].message.content


def test_required_tool_call_has_schema_valid_arguments(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="gpt-4o", messages=USER, tools=[WEATHER],
                                                tool_choice="required")
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "get_weather" and call.id
    arguments = json.loads(call.function.arguments)
    assert set(arguments) == {"city", "unit"} and arguments["unit"] in ("c", "f")


def test_named_tool_choice_and_parallel_calls(client: openai.OpenAI) -> None:
    named = client.chat.completions.create(model="gpt-4o", messages=USER, tools=[WEATHER, TIME],
                                           tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert [c.function.name for c in named.choices[0].message.tool_calls] == ["get_time"]
    single = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "What is the weather and the time in Oslo?"}],
        tools=[WEATHER, TIME], tool_choice="required", parallel_tool_calls=False)
    assert len(single.choices[0].message.tool_calls) == 1
    none = client.chat.completions.create(model="gpt-4o", messages=USER, tools=[WEATHER], tool_choice="none")
    assert none.choices[0].message.tool_calls is None and none.choices[0].finish_reason == "stop"


def test_streamed_tool_calls_accumulate(client: openai.OpenAI) -> None:
    with client.chat.completions.stream(model="gpt-4o", messages=USER, tools=[WEATHER],
                                        tool_choice="required") as stream:
        argument_deltas = [e.arguments_delta for e in stream if e.type == "tool_calls.function.arguments.delta"]
        final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]
    assert final.choices[0].finish_reason == "tool_calls"
    assert "".join(argument_deltas) == call.function.arguments
    assert json.loads(call.function.arguments)["unit"] in ("c", "f")


def test_tool_output_round_trip_answers_in_text(client: openai.OpenAI) -> None:
    first = client.chat.completions.create(model="gpt-4o", messages=USER, tools=[WEATHER], tool_choice="required")
    call = first.choices[0].message.tool_calls[0]
    messages = [*USER, first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 25 degrees"}]
    answer = client.chat.completions.create(model="gpt-4o", messages=messages, tools=[WEATHER])
    assert answer.choices[0].finish_reason == "stop" and answer.choices[0].message.content


class City(BaseModel):
    name: str
    population: int
    coastal: bool


def test_parse_with_a_json_schema(client: openai.OpenAI) -> None:
    completion = client.chat.completions.parse(model="gpt-4o", messages=USER, response_format=City)
    city = completion.choices[0].message.parsed
    assert isinstance(city, City)
    assert City.model_validate_json(completion.choices[0].message.content) == city


def test_json_object_gives_json(client: openai.OpenAI) -> None:
    completion = client.chat.completions.create(model="gpt-4o", response_format={"type": "json_object"}, messages=[
        {"role": "user", "content": "Describe the sea as JSON."}])
    assert isinstance(json.loads(completion.choices[0].message.content), dict)
    with pytest.raises(openai.BadRequestError) as error:  # the real API asks for the word in the messages
        client.chat.completions.create(model="gpt-4o", messages=USER, response_format={"type": "json_object"})
    assert error.value.body["param"] == "messages" and "'response_format'" in error.value.body["message"]


@pytest.mark.parametrize("body, param, code", [
    ({"model": "gpt-4o", "messages": USER, "temprature": 1}, "temprature", "unknown_parameter"),
    ({"model": "gpt-4o", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "invalid_value"),
    ({"model": "gpt-4o", "messages": [{"role": "user", "content": "x", "contnet": "y"}]}, "messages[0].contnet",
     "unknown_parameter"),
    ({"model": "gpt-4o", "messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id",
     "missing_required_parameter"),
    ({"model": "gpt-4o", "messages": []}, "messages", "empty_array"),
    ({"model": "gpt-4o", "messages": [{"role": "assistant"}]}, "messages[0].content", "invalid_value"),
    ({"model": "gpt-4o"}, "messages", "missing_required_parameter"),
    ({"model": "gpt-4o", "messages": USER, "n": 0}, "n", "integer_below_min_value"),
    ({"model": "gpt-4o", "messages": USER, "stop": ["a", "b", "c", "d", "e"]}, "stop", "invalid_value"),
    ({"model": "gpt-4o", "messages": USER, "stream_options": {"include_usage": True}}, "stream_options",
     "invalid_value"),
    ({"model": "gpt-4o", "messages": USER, "max_tokens": 10_000_000}, "max_tokens", "invalid_value"),
    ({"model": "gpt-4o", "messages": USER, "tools": [{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "strng"}}}}}]},
     "tools[0].function.parameters", "invalid_function_parameters"),
    ({"model": "gpt-4o", "messages": USER, "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "strict": True, "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}}},
     "response_format.json_schema.schema", "invalid_json_schema"),
    ({"model": "gpt-4o", "messages": USER, "tools": [WEATHER],
      "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice", "invalid_value"),
])
def test_bad_requests_get_the_error_envelope(server: ServerProcess, body: dict[str, Any], param: str,
                                             code: str) -> None:
    response = httpx.post(f"{server.base_url}/chat/completions", json=body,
                          headers={"X-LLMSim-Strict-Params": "true"})  # unknown names: the live API's 400
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")
    assert error["message"]


@pytest.mark.parametrize("prefix", ["/openai/v1", "/v1", "/v3", ""])
def test_every_mount_point(server: ServerProcess, prefix: str) -> None:
    client = openai.OpenAI(base_url=server.url + prefix, api_key="sk-test", max_retries=0)
    assert client.chat.completions.create(model="gpt-4o-mini", messages=USER).choices[0].message.content


SCENARIO = ("rules:\n"
            "  - match: {input_contains: weather}\n"
            "    tool_calls: [{name: get_weather, arguments: {city: Oslo, unit: c}}]\n"
            "turns:\n"
            "  - text: Scripted hello.\n")


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    scenario = tmp_path_factory.mktemp("scenario") / "scenario.yaml"
    scenario.write_text(SCENARIO)
    return str(scenario)


@pytest.fixture
def scripted_server(shared_server: Callable[..., ServerProcess], scenario_file: str) -> ServerProcess:
    """One server for the auth test and the scenario's (a start costs a core 1.5 s): sk-test is a key of it, and a
    request refused at admission (a fault, a wrong key) takes no turn of the scenario."""
    return shared_server("--api-key", "sk-right,sk-test", "--scenario", scenario_file)


def test_faults_and_auth_apply_to_chat(scripted_server: ServerProcess) -> None:
    server = scripted_server
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-right", max_retries=0)
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="gpt-4o", messages=USER, extra_headers={"X-LLMSim-Fault": "rate_limit"})
    assert limited.value.response.headers["retry-after"]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.base_url, api_key="sk-wrong", max_retries=0).chat.completions.create(
            model="gpt-4o", messages=USER)


@pytest.mark.parametrize("fault", ["stream_error;after_events=3", "stream_failed;after_events=3"])
def test_a_stream_fault_ends_the_chat_stream_with_an_error(client: openai.OpenAI, fault: str) -> None:
    stream = client.chat.completions.create(model="gpt-4o", messages=USER, stream=True,
                                            extra_headers={"X-LLMSim-Fault": fault})
    received = []
    with pytest.raises(openai.APIError) as error:
        for chunk in stream:
            received.append(chunk)
    assert len(received) == 3
    assert "error" in str(error.value).lower()


def test_a_stream_fault_fails_a_non_streaming_completion(client: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as error:
        client.chat.completions.create(model="gpt-4o", messages=USER, extra_headers={"X-LLMSim-Fault": "stream_failed"})
    assert error.value.body["type"] == "server_error"


def test_a_dropped_stream_raises_in_the_sdk(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="gpt-4o", messages=USER, stream=True,
                                            extra_headers={"X-LLMSim-Fault": "stream_drop;after_events=2"})
    with pytest.raises((httpx.RemoteProtocolError, openai.APIConnectionError)):
        for _ in stream:
            pass


def test_scenarios_script_chat_replies(scripted_server: ServerProcess) -> None:
    server = scripted_server
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    hello = client.chat.completions.create(model="gpt-4o", messages=USER)
    assert hello.choices[0].message.content == "Scripted hello."
    call = client.chat.completions.create(model="gpt-4o", tools=[WEATHER], messages=[
        {"role": "user", "content": "What is the weather?"}]).choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Oslo", "unit": "c"})


def test_streamed_choices_and_logprobs(client: openai.OpenAI) -> None:
    with client.chat.completions.stream(model="gpt-4o", messages=USER, n=2, seed=4, logprobs=True,
                                        top_logprobs=2) as stream:
        chunks = [event.chunk for event in stream if event.type == "chunk"]
        final = stream.get_final_completion()
    assert {c.choices[0].index for c in chunks if c.choices} == {0, 1}
    assert [c.finish_reason for c in final.choices] == ["stop", "stop"]
    whole = client.chat.completions.create(model="gpt-4o", messages=USER, n=2, seed=4)
    assert [c.message.content for c in final.choices] == [c.message.content for c in whole.choices]
    streamed_tokens = [t.token for c in chunks if c.choices and c.choices[0].index == 0 and c.choices[0].logprobs
                       for t in c.choices[0].logprobs.content]
    assert "".join(streamed_tokens) == final.choices[0].message.content
