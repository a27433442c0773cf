"""The core flows through the official openai SDK against a real server."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from llmsim.testing import ServerProcess

EVENT = TypeAdapter(ResponseStreamEvent)


def test_create_returns_a_complete_response(client: openai.OpenAI, server: ServerProcess) -> None:
    response = client.responses.create(model="gpt-4o", input="Write a one-sentence bedtime story.")
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    assert response.model == "gpt-4o-2024-08-06"
    assert response.output_text
    [message] = response.output
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    usage = response.usage
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.output_tokens_details.reasoning_tokens == 0
    assert usage.input_tokens_details.cached_tokens == 0

    raw = httpx.get(f"{server.base_url}/responses/{response.id}").json()
    missing = {f.alias or name for name, f in Response.model_fields.items()} - raw.keys()
    assert not missing, f"fields of the SDK's Response type missing from the JSON: {missing}"


def test_request_fields_are_echoed(client: openai.OpenAI) -> None:
    tool = {"type": "function", "name": "get_weather", "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    response = client.responses.create(
        model="gpt-4.1", input="hi", instructions="Be brief.", temperature=0.3, top_p=0.9, max_output_tokens=500,
        metadata={"suite": "core"}, store=True, truncation="auto", parallel_tool_calls=False, user="u-1",
        tools=[tool], tool_choice="none", text={"verbosity": "low"}, safety_identifier="s-1",
        prompt_cache_key="k-1", service_tier="flex",
    )
    assert response.instructions == "Be brief."
    assert (response.temperature, response.top_p, response.max_output_tokens) == (0.3, 0.9, 500)
    assert response.metadata == {"suite": "core"}
    assert response.truncation == "auto" and response.parallel_tool_calls is False and response.user == "u-1"
    assert response.tool_choice == "none" and response.tools[0].name == "get_weather"
    assert response.tools[0].strict is True
    assert response.text.verbosity == "low" and response.text.format.type == "text"
    assert response.safety_identifier == "s-1" and response.prompt_cache_key == "k-1"
    assert response.service_tier == "flex"
    assert response.reasoning.effort is None and response.background is False


def test_stream_helper_and_final_response(client: openai.OpenAI) -> None:
    with client.responses.stream(model="gpt-5", input="Tell me a story", reasoning={"summary": "auto"}) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed"
    assert "".join(deltas) == final.output_text
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output[0].summary[0].text


def test_raw_stream_event_order_and_sequence_numbers(client: openai.OpenAI) -> None:
    stream = client.responses.create(model="o4-mini", input="Explain tides", stream=True,
                                     reasoning={"effort": "low", "summary": "detailed"})
    events = list(stream)
    types = [e.type for e in events]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert types[-1] == "response.completed"
    reasoning_part = ["response.reasoning_summary_part.added", "response.reasoning_summary_text.delta"]
    assert types[3:5] == reasoning_part
    text_at = types.index("response.output_text.delta")
    assert types[text_at - 3: text_at] == [
        "response.output_item.done", "response.output_item.added", "response.content_part.added"]
    assert types[-4:-1] == ["response.output_text.done", "response.content_part.done", "response.output_item.done"]
    summary_done = ["response.reasoning_summary_text.done", "response.reasoning_summary_part.done"]
    assert types[text_at - 5: text_at - 3] == summary_done
    done = [e for e in events if e.type == "response.output_item.done"]
    assert [e.output_index for e in done] == [0, 1] and [e.item.type for e in done] == ["reasoning", "message"]
    message_done = done[1].item
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert message_done.content[0].text == text
    final = events[-1].response
    assert final.output_text == text and final.usage.output_tokens_details.reasoning_tokens > 0
    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert final.output[0].summary[0].text == summary
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert all(e.item_id == message_done.id and e.output_index == 1 and e.content_index == 0 for e in deltas)


def test_every_sse_frame_parses_as_an_sdk_event(server: ServerProcess) -> None:
    body = {"model": "gpt-5", "input": "hi", "stream": True, "reasoning": {"summary": "concise"},
            "include": ["reasoning.encrypted_content"]}
    with httpx.stream("POST", f"{server.base_url}/responses", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = response.read().decode()
    frames = [[line for line in block.split("\n") if not line.startswith(":")]  # ":" lines are SSE comments
              for block in text.split("\n\n") if block.strip()]
    frames = [frame for frame in frames if frame]
    for event_line, data_line in frames:
        data = json.loads(data_line.removeprefix("data: "))
        assert event_line == f"event: {data['type']}"
        EVENT.validate_python(data)
    final = json.loads(frames[-1][1].removeprefix("data: "))["response"]
    assert final["output"][0]["encrypted_content"]


def test_retrieve_delete_and_input_items(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o-mini", input=[
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": [{"type": "input_text", "text": "Bonjour"}]},
        {"type": "message", "role": "user", "content": "Second"},
    ])
    assert client.responses.retrieve(response.id).output_text == response.output_text

    items = client.responses.input_items.list(response.id)
    assert [item.role for item in items.data] == ["user", "user", "developer"]  # newest first by default
    assert all(item.id.startswith("msg_") for item in items.data)
    assert items.data[0].content[0].text == "Second"
    assert items.first_id == items.data[0].id and items.last_id == items.data[-1].id and not items.has_more

    first_page = client.responses.input_items.list(response.id, limit=2, order="asc")
    assert [i.role for i in first_page.data] == ["developer", "user"] and first_page.has_more
    rest = client.responses.input_items.list(response.id, order="asc", after=first_page.last_id)
    assert [i.content[0].text for i in rest.data] == ["Second"] and not rest.has_more
    every = [i.id for i in client.responses.input_items.list(response.id, order="asc", limit=1)]
    assert every == [i.id for i in first_page.data + rest.data]  # auto-pagination follows `after`

    deleted = client.responses.delete(response.id)
    assert deleted is None or getattr(deleted, "deleted", True)
    with pytest.raises(openai.NotFoundError) as error:
        client.responses.retrieve(response.id)
    assert error.value.body["message"] == f"Response with id '{response.id}' not found."


def test_delete_answers_the_deleted_object(server: ServerProcess, client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="hi")
    body = httpx.delete(f"{server.base_url}/responses/{response.id}").json()
    assert body == {"id": response.id, "object": "response.deleted", "deleted": True}
    assert httpx.delete(f"{server.base_url}/responses/{response.id}").status_code == 404


def test_input_tokens_count_matches_create_usage(client: openai.OpenAI) -> None:
    kwargs = {"model": "gpt-4o", "input": "How many tokens is this sentence?", "instructions": "Be exact."}
    counted = client.responses.input_tokens.count(**kwargs)
    created = client.responses.create(**kwargs)
    assert counted.input_tokens == created.usage.input_tokens
    longer = client.responses.input_tokens.count(model="gpt-4o", input="How many tokens is this sentence? " * 20)
    assert longer.input_tokens > counted.input_tokens


def test_three_turn_chain_carries_history_but_not_instructions(client: openai.OpenAI) -> None:
    first = client.responses.create(model="gpt-4o", input="My name is Ada.", instructions="Talk like a pirate.")
    second = client.responses.create(model="gpt-4o", input="What is my name?", previous_response_id=first.id)
    third = client.responses.create(model="gpt-4o", input="And again?", previous_response_id=second.id)
    assert second.previous_response_id == first.id and third.previous_response_id == second.id
    assert second.instructions is None
    assert first.usage.input_tokens < second.usage.input_tokens < third.usage.input_tokens
    # The third turn's prompt is the whole chain: 3 user inputs and 2 answers, nothing from instructions.
    expected = client.responses.input_tokens.count(model="gpt-4o", input=[
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": first.output_text},
        {"role": "user", "content": "What is my name?"},
        {"role": "assistant", "content": second.output_text},
        {"role": "user", "content": "And again?"},
    ])
    assert third.usage.input_tokens == expected.input_tokens


def test_chain_keeps_function_calls_and_outputs(client: openai.OpenAI) -> None:
    call = {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": '{"q": "x"}'}
    first = client.responses.create(model="gpt-4o", input=[{"role": "user", "content": "look it up"}, call])
    second = client.responses.create(model="gpt-4o", previous_response_id=first.id, input=[
        {"type": "function_call_output", "call_id": "call_1", "output": "42"}])
    items = client.responses.input_items.list(first.id, order="asc")
    assert [i.type for i in items.data] == ["message", "function_call"]
    with_history = client.responses.input_tokens.count(model="gpt-4o", previous_response_id=first.id, input=[
        {"type": "function_call_output", "call_id": "call_1", "output": "42"}])
    assert second.usage.input_tokens == with_history.input_tokens


def test_store_false_is_not_retrievable_nor_chainable(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="secret", store=False)
    assert response.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)
    with pytest.raises(openai.BadRequestError) as error:  # the live API's status for an unknown previous response
        client.responses.create(model="gpt-4o", input="next", previous_response_id=response.id)
    assert error.value.body["code"] == "previous_response_not_found"
    assert error.value.body["param"] == "previous_response_id"


@pytest.mark.parametrize("stream", [False, True])
def test_max_output_tokens_makes_the_response_incomplete(client: openai.OpenAI, stream: bool) -> None:
    kwargs = {"model": "gpt-4o", "input": "Write an essay", "max_output_tokens": 16, "text": {"verbosity": "high"}}
    if stream:
        events = list(client.responses.create(stream=True, **kwargs))
        assert events[-1].type == "response.incomplete"
        response = events[-1].response
        done = [e for e in events if e.type == "response.output_item.done"][-1]
        assert done.item.status == "incomplete"
    else:
        response = client.responses.create(**kwargs)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage.output_tokens == 16


def test_reasoning_can_use_the_whole_budget(client: openai.OpenAI) -> None:
    response = client.responses.create(model="o3", input="think hard", max_output_tokens=16,
                                       reasoning={"effort": "high"})
    assert response.status == "incomplete"
    assert [item.type for item in response.output] == ["reasoning"]
    assert response.usage.output_tokens == response.usage.output_tokens_details.reasoning_tokens == 16


def test_stream_helper_sees_an_incomplete_response_as_the_real_api_sends_it(client: openai.OpenAI) -> None:
    with client.responses.stream(model="gpt-4o", input="long", max_output_tokens=20) as stream:
        last = [event for event in stream][-1]
        with pytest.raises(RuntimeError, match="response.completed"):  # the SDK's own rule
            stream.get_final_response()
    assert last.type == "response.incomplete"
    assert last.response.status == "incomplete" and last.response.usage.output_tokens == 20


def test_logprobs_when_included(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="hi", top_logprobs=3,
                                       include=["message.output_text.logprobs"])
    part = response.output[0].content[0]
    assert part.logprobs and "".join(lp.token for lp in part.logprobs) == part.text
    assert all(len(lp.top_logprobs) == 3 and lp.logprob <= 0 for lp in part.logprobs)
    plain = client.responses.create(model="gpt-4o", input="hi")
    assert plain.output[0].content[0].logprobs == []


def test_replay_stored_stream_after_a_sequence_number(client: openai.OpenAI, server: ServerProcess) -> None:
    events = list(client.responses.create(model="gpt-4o", input="hi", stream=True))
    response_id = events[-1].response.id
    replayed = list(client.responses.retrieve(response_id, stream=True, starting_after=4))
    assert [e.sequence_number for e in replayed] == list(range(5, len(events)))
    assert [e.type for e in replayed] == [e.type for e in events[5:]]
    everything = list(client.responses.retrieve(response_id, stream=True))
    assert len(everything) == len(events)


def test_cancel_of_a_synchronous_response_is_refused(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="hi")
    with pytest.raises(openai.BadRequestError) as error:
        client.responses.cancel(response.id)
    assert error.value.body["message"] == "Cannot cancel a synchronous response."
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_missing")


@pytest.mark.parametrize("prefix", ["/openai/v1", "/v1", ""])
def test_every_base_url_style_works(server: ServerProcess, prefix: str) -> None:
    client = openai.OpenAI(base_url=f"{server.url}{prefix}", api_key="sk-test", max_retries=0)
    response = client.responses.create(model="gpt-4o", input="hi")
    assert client.responses.retrieve(response.id).id == response.id
