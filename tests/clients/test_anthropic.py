"""The anthropic Python SDK against a real LLMSim's Messages API (the pytest plugin's `llmsim` fixture: speed 0,
seed 0, a clean server state per test): create, stream, tools, thinking, count_tokens, errors and retries."""

from __future__ import annotations

from typing import Any

import pytest

from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("anthropic")

MODEL = "claude-sonnet-4-6"
WEATHER = {"name": "get_weather", "description": "Get the current weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def client(llmsim: LLMSim, **options: Any) -> Any:
    import anthropic

    return anthropic.Anthropic(**{"base_url": llmsim.server.url, "api_key": "sk-ant-test", "max_retries": 0,
                                  **options})


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_create(llmsim: LLMSim) -> None:
    raw = client(llmsim).messages.with_raw_response.create(model=MODEL, max_tokens=300,
                                                           messages=ask("What is a good name for a cat?"))
    message = raw.parse()
    assert raw.headers["request-id"].startswith("req_")
    assert message.id.startswith("msg_") and message.role == "assistant" and message.model == MODEL
    assert message.stop_reason == "end_turn" and message.content[0].type == "text" and message.content[0].text
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert llmsim.fault_log[-1]["endpoint"] == "messages"


def test_create_at_the_anthropic_prefix(llmsim: LLMSim) -> None:
    import anthropic

    sdk = anthropic.Anthropic(base_url=llmsim.server.url + "/anthropic", api_key="k", max_retries=0)
    assert sdk.messages.create(model=MODEL, max_tokens=50, messages=ask("Hi")).content


def test_stream(llmsim: LLMSim) -> None:
    with client(llmsim).messages.stream(model=MODEL, max_tokens=400, messages=ask("Why is the sky blue?")) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text and final.content[0].text == text and final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 1


def test_stream_events_in_order(llmsim: LLMSim) -> None:
    events = list(client(llmsim).messages.create(model=MODEL, max_tokens=300, stream=True, messages=ask("Hello")))
    kinds = [event.type for event in events]
    assert kinds[:2] == ["message_start", "content_block_start"], kinds  # the SDK drops `ping`
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"], kinds
    assert all(kind == "content_block_delta" for kind in kinds[2:-3])
    assert events[-2].delta.stop_reason == "end_turn" and events[-2].usage.output_tokens > 0


def test_tool_round_trip(llmsim: LLMSim) -> None:
    sdk = client(llmsim)
    messages = ask("What is the weather in Paris?")
    first = sdk.messages.create(model=MODEL, max_tokens=500, tools=[WEATHER], tool_choice={"type": "any"},
                                messages=messages)
    calls = [block for block in first.content if block.type == "tool_use"]
    assert first.stop_reason == "tool_use" and calls and calls[0].name == "get_weather"
    assert calls[0].id.startswith("toolu_") and isinstance(calls[0].input["city"], str)
    results = [{"type": "tool_result", "tool_use_id": call.id, "content": "Sunny, 22 C"} for call in calls]
    second = sdk.messages.create(model=MODEL, max_tokens=500, tools=[WEATHER], messages=[
        *messages, {"role": "assistant", "content": first.content}, {"role": "user", "content": results}])
    assert second.stop_reason == "end_turn" and "22" in second.content[0].text


def test_tool_input_streams_as_json(llmsim: LLMSim) -> None:
    with client(llmsim).messages.stream(model=MODEL, max_tokens=500, tools=[WEATHER],
                                        tool_choice={"type": "tool", "name": "get_weather"},
                                        messages=ask("Weather in Oslo?")) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert "input_json" in kinds and final.content[-1].type == "tool_use"
    assert set(final.content[-1].input) >= {"city"}


def test_parallel_calls_unless_disabled(llmsim: LLMSim) -> None:
    sdk = client(llmsim)
    other = {**WEATHER, "name": "get_time", "description": "Get the local time in a city."}
    question = ask("What is the weather in Paris and the time in Tokyo?")
    both = sdk.messages.create(model=MODEL, max_tokens=500, tools=[WEATHER, other], tool_choice={"type": "any"},
                               messages=question)
    one = sdk.messages.create(model=MODEL, max_tokens=500, tools=[WEATHER, other], messages=question,
                              tool_choice={"type": "any", "disable_parallel_tool_use": True})
    assert len([b for b in both.content if b.type == "tool_use"]) == 2
    assert len([b for b in one.content if b.type == "tool_use"]) == 1


def test_extended_thinking(llmsim: LLMSim) -> None:
    sdk = client(llmsim)
    messages = ask("How many primes are below 20?")
    first = sdk.messages.create(model=MODEL, max_tokens=4000, thinking={"type": "enabled", "budget_tokens": 2000},
                                messages=messages)
    thinking, text = first.content[0], first.content[-1]
    assert thinking.type == "thinking" and thinking.thinking and len(thinking.signature) > 40
    assert text.type == "text" and first.usage.output_tokens <= 4000
    again = sdk.messages.create(model=MODEL, max_tokens=4000, thinking={"type": "enabled", "budget_tokens": 2000},
                                messages=[*messages, {"role": "assistant", "content": first.content},
                                          {"role": "user", "content": "And below 30?"}])
    assert again.content[0].type == "thinking"
    with sdk.messages.stream(model=MODEL, max_tokens=4000, thinking={"type": "enabled", "budget_tokens": 1024},
                             messages=messages) as stream:
        deltas = {event.delta.type for event in stream if event.type == "content_block_delta"}
    assert {"thinking_delta", "signature_delta", "text_delta"} <= deltas


def test_adaptive_and_disabled_thinking(llmsim: LLMSim) -> None:
    sdk = client(llmsim)
    adaptive = sdk.messages.create(model=MODEL, max_tokens=2000, thinking={"type": "adaptive"}, messages=ask("Hi"))
    disabled = sdk.messages.create(model=MODEL, max_tokens=2000, thinking={"type": "disabled"}, messages=ask("Hi"))
    assert adaptive.content[0].type == "thinking" and adaptive.content[0].signature
    assert [block.type for block in disabled.content] == ["text"]


def test_thinking_budget_must_fit(llmsim: LLMSim) -> None:
    import anthropic

    with pytest.raises(anthropic.BadRequestError, match="budget_tokens"):
        client(llmsim).messages.create(model=MODEL, max_tokens=1500, messages=ask("Hi"),
                                       thinking={"type": "enabled", "budget_tokens": 2000})


def test_stop_sequence(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [{"text": "one two three STOP four five"}]})
    message = client(llmsim).messages.create(model=MODEL, max_tokens=100, stop_sequences=["STOP"], messages=ask("x"))
    assert message.stop_reason == "stop_sequence" and message.stop_sequence == "STOP"
    assert message.content[0].text == "one two three "
    llmsim.load_scenario({"turns": [{"text": "alpha beta ST gamma STOP delta"}]})
    with client(llmsim).messages.stream(model=MODEL, max_tokens=100, stop_sequences=["STOP"],
                                        messages=ask("x")) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed == final.content[0].text == "alpha beta ST gamma " and final.stop_reason == "stop_sequence"


def test_max_tokens_stop_reason(llmsim: LLMSim) -> None:
    message = client(llmsim).messages.create(model=MODEL, max_tokens=5, messages=ask("Tell me a long story."))
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens <= 5


def test_count_tokens(llmsim: LLMSim) -> None:
    sdk = client(llmsim)
    body: dict[str, Any] = {"model": MODEL, "system": "You are terse.", "tools": [WEATHER],
                            "messages": ask("What is the weather in Rome?")}
    counted = sdk.messages.count_tokens(**body)
    made = sdk.messages.create(max_tokens=200, **body)
    assert counted.input_tokens == made.usage.input_tokens > 0


def test_prompt_caching(llmsim: LLMSim) -> None:
    sdk = client(llmsim)
    system = [{"type": "text", "text": "You answer questions about this manual. " + "The manual says. " * 600,
               "cache_control": {"type": "ephemeral"}}]
    first = sdk.messages.create(model=MODEL, max_tokens=100, system=system, messages=ask("Question one?"))
    second = sdk.messages.create(model=MODEL, max_tokens=100, system=system, messages=ask("Question two?"))
    assert first.usage.cache_creation_input_tokens > 1024 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0 and second.usage.input_tokens < 50


def test_error_envelope(llmsim: LLMSim) -> None:
    import anthropic

    with pytest.raises(anthropic.BadRequestError) as caught:
        client(llmsim).messages.create(model=MODEL, max_tokens=10, messages=[{"role": "robot", "content": "x"}])
    body = caught.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "messages.0.role" in body["error"]["message"]
    assert body["request_id"] == caught.value.response.headers["request-id"] == caught.value.request_id


def test_429_retried_by_the_sdk(llmsim: LLMSim) -> None:
    llmsim.set_faults({"kind": "rate_limit", "first": 1, "retry_after": 0.2})
    message = client(llmsim, max_retries=2).messages.create(model=MODEL, max_tokens=50, messages=ask("Hi"))
    assert message.content
    log = llmsim.fault_log
    assert log[0]["status"] == 429 and log[1]["status"] == 200, log


def test_429_as_anthropic_sends_it(llmsim: LLMSim) -> None:
    import anthropic

    with pytest.raises(anthropic.RateLimitError) as caught:
        client(llmsim).messages.create(model=MODEL, max_tokens=50, messages=ask("Hi"),
                                       extra_headers={"X-LLMSim-Fault": "rate_limit;retry_after=3"})
    headers = caught.value.response.headers
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert "docs.claude.com" in caught.value.body["error"]["message"]
    assert headers["retry-after"] == "3" and headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert headers["anthropic-ratelimit-requests-reset"].endswith("Z")


def test_otpm_limit_refused_and_retried_by_the_sdk(llmsim: LLMSim) -> None:
    """OTPM reserves max_tokens at admission and settles to the output made; a refusal's retry-after-ms is what
    the SDK waits before its retry goes through."""
    import anthropic

    llmsim.set_faults(rate_limits={"otpm": 6000, "itpm": 100_000})
    raw = client(llmsim).messages.with_raw_response.create(model=MODEL, max_tokens=1000, messages=ask("Hi"))
    made = raw.parse().usage.output_tokens
    assert raw.headers["anthropic-ratelimit-output-tokens-limit"] == "6000"
    assert raw.headers["anthropic-ratelimit-output-tokens-remaining"] == "5000"
    assert raw.headers["anthropic-ratelimit-input-tokens-limit"] == "100000"
    with pytest.raises(anthropic.RateLimitError) as caught:
        client(llmsim).messages.create(model=MODEL, max_tokens=6000, messages=ask("Hi"))
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert "output tokens per minute" in caught.value.body["error"]["message"]
    headers = caught.value.response.headers
    assert 0 < int(headers["retry-after-ms"]) <= made * 10 + 10  # what the first used, at 100 tokens a second
    assert int(headers["anthropic-ratelimit-output-tokens-remaining"]) >= 6000 - made - 1  # settled
    message = client(llmsim, max_retries=2).messages.create(model=MODEL, max_tokens=6000, messages=ask("Hi"))
    assert message.content
    statuses = [entry["status"] for entry in llmsim.fault_log]
    assert statuses[:2] == [200, 429] and statuses[-1] == 200 and set(statuses[2:-1]) <= {429}, statuses


def test_529_overloaded_retried(llmsim: LLMSim) -> None:
    import anthropic

    with pytest.raises(anthropic.APIStatusError) as caught:
        client(llmsim).messages.create(model=MODEL, max_tokens=50, messages=ask("Hi"),
                                       extra_headers={"X-LLMSim-Fault": "overloaded"})
    assert caught.value.status_code == 529 and caught.value.body["error"]["type"] == "overloaded_error"
    llmsim.set_faults({"kind": "overloaded", "first": 1})
    assert client(llmsim, max_retries=2).messages.create(model=MODEL, max_tokens=50, messages=ask("Hi")).content
    assert [entry["status"] for entry in llmsim.fault_log[-2:]] == [529, 200]


def test_500_api_error(llmsim: LLMSim) -> None:
    import anthropic

    with pytest.raises(anthropic.InternalServerError) as caught:
        client(llmsim).messages.create(model=MODEL, max_tokens=50, messages=ask("Hi"),
                                       extra_headers={"X-LLMSim-Fault": "server_error"})
    assert caught.value.body["error"]["type"] == "api_error"


def test_mid_stream_fault_is_an_error_event(llmsim: LLMSim) -> None:
    import anthropic

    stream = client(llmsim).messages.stream(model=MODEL, max_tokens=400, messages=ask("Why is the sky blue?"),
                                            extra_headers={"X-LLMSim-Fault": "stream_error;after_events=4"})
    with pytest.raises(anthropic.APIStatusError, match="Internal server error"), stream as events:
        for _ in events.text_stream:
            pass


def test_scenario_tool_calls_become_tool_use(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Lima"}}]},
                                    {"text": "It is warm in Lima."}]})
    sdk = client(llmsim)
    first = sdk.messages.create(model=MODEL, max_tokens=100, tools=[WEATHER], messages=ask("Weather?"))
    call = first.content[-1]
    assert call.type == "tool_use" and call.input == {"city": "Lima"} and first.stop_reason == "tool_use"
    second = sdk.messages.create(model=MODEL, max_tokens=100, tools=[WEATHER], messages=[
        *ask("Weather?"), {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "warm"}]}])
    assert second.content[0].text == "It is warm in Lima."


def test_models_list(llmsim: LLMSim) -> None:
    sdk = client(llmsim)
    ids = [model.id for model in sdk.models.list()]
    assert "claude-sonnet-4-6" in ids and "claude-opus-4-5" in ids
    assert sdk.models.retrieve("claude-haiku-4-5").display_name.startswith("Claude")
