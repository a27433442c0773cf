"""`item_reference` and reasoning items sent back by id resolve against every stored response, as the real API
resolves them (the Vercel AI SDK rebuilds history this way, without `previous_response_id`); what the real
API rejects is rejected here too."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from llmsim.testing import ServerProcess
from stateful import wait_final

WEATHER = {"type": "function", "name": "get_weather", "strict": True, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}
USER = {"role": "user", "content": "Weather in Paris?"}


def ref(item_id: str) -> dict[str, str]:
    return {"type": "item_reference", "id": item_id}


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.db'}"


@pytest.fixture(params=["memory", "sqlite"])
def store_client(request: pytest.FixtureRequest, sqlite_store: str, shared_server: Callable[..., ServerProcess],
                 server: ServerProcess, sdk_client: Callable[..., openai.OpenAI]) -> openai.OpenAI:
    """One server per store: the session's for memory, the module's for SQLite; each test refers only to items it
    stored itself."""
    return sdk_client(shared_server("--store", sqlite_store) if request.param == "sqlite" else server)


def test_references_to_items_of_any_stored_response(store_client: openai.OpenAI) -> None:
    first = store_client.responses.create(model="gpt-4o", input="Remember the word 'teal'.")
    store_client.responses.create(model="gpt-4o", input="Unrelated.")  # the first is not the latest
    question = store_client.responses.input_items.list(first.id).data[0]
    second = store_client.responses.create(model="gpt-4o", input=[  # type: ignore[list-item]
        ref(question.id), ref(first.output[0].id), {"role": "user", "content": "Which word?"}])
    listed = store_client.responses.input_items.list(second.id, order="asc").data
    assert [item.id for item in listed][:2] == [question.id, first.output[0].id]
    assert listed[1].content[0].text == first.output_text  # type: ignore[union-attr]
    with pytest.raises(openai.NotFoundError) as caught:
        store_client.responses.create(model="gpt-4o", input=[ref("msg_unknown")])  # type: ignore[list-item]
    assert caught.value.body["message"] == "Item with id 'msg_unknown' not found."  # type: ignore[index]


def test_a_reference_whose_type_is_null_or_missing_is_a_reference(store_client: openai.OpenAI) -> None:
    """The SDK's ItemReference has an optional `type`: `null` or none at all still names an item (was a 500)."""
    first = store_client.responses.create(model="gpt-4o", input="Remember the word 'teal'.")
    question = store_client.responses.input_items.list(first.id).data[0]
    for reference in ({"type": None, "id": question.id}, {"id": question.id}):
        second = store_client.responses.create(model="gpt-4o", input=[reference])  # type: ignore[list-item]
        assert store_client.responses.input_items.list(second.id).data[0].id == question.id
        counted = store_client.responses.input_tokens.count(model="gpt-4o", input=[reference])  # type: ignore[list-item]
        assert counted.input_tokens == second.usage.input_tokens  # type: ignore[union-attr]
        for call in (store_client.responses.create, store_client.responses.input_tokens.count):
            with pytest.raises(openai.NotFoundError) as caught:
                call(model="gpt-4o", input=[{**reference, "id": "msg_unknown"}])  # type: ignore[list-item,operator]
            assert caught.value.body["message"] == "Item with id 'msg_unknown' not found."  # type: ignore[index]


def test_a_reasoning_tool_loop_by_reference(store_client: openai.OpenAI) -> None:
    """The AI SDK's second step with gpt-5: reasoning and call by reference, then the call's output."""
    step = store_client.responses.create(model="gpt-5", input=[USER], tools=[WEATHER], tool_choice="required")  # type: ignore[list-item]
    reasoning, call = step.output
    assert reasoning.type == "reasoning" and call.type == "function_call"
    answer = store_client.responses.create(model="gpt-5", tools=[WEATHER], input=[  # type: ignore[list-item]
        USER, ref(reasoning.id), ref(call.id),
        {"type": "function_call_output", "call_id": call.call_id, "output": "18 C"}])
    assert answer.status == "completed" and answer.output_text


def test_a_background_response_is_referenced_once_done(store_client: openai.OpenAI) -> None:
    done = wait_final(store_client, store_client.responses.create(model="gpt-4o", input="Hi", background=True).id)
    again = store_client.responses.create(model="gpt-4o", input=[ref(done.output[0].id)])  # type: ignore[list-item]
    assert again.status == "completed"


def _not_found(client: openai.OpenAI, item_id: str) -> bool:
    try:
        client.responses.create(model="gpt-4o", input=[ref(item_id)])  # type: ignore[list-item]
    except openai.NotFoundError:
        return True
    return False


def test_unstored_deleted_evicted_and_expired_items_are_not_found(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI], tmp_path: Path) -> None:
    for flags in [(), ("--store", f"sqlite:///{tmp_path / 'store.db'}")]:
        client = sdk_client(start_server("--store-max-entries", "2", "--store-ttl", "2", *flags))
        unstored = client.responses.create(model="gpt-4o", input="Hi", store=False)
        deleted = client.responses.create(model="gpt-4o", input="Hi")
        client.responses.delete(deleted.id)
        evicted = client.responses.create(model="gpt-4o", input="Hi")
        kept = [client.responses.create(model="gpt-4o", input="Hi") for _ in range(2)]
        assert not _not_found(client, kept[0].output[0].id)
        assert _not_found(client, unstored.output[0].id) and _not_found(client, deleted.output[0].id)
        assert _not_found(client, evicted.output[0].id)
        time.sleep(2.1)
        assert _not_found(client, kept[1].output[0].id)


def test_reasoning_sent_back_from_an_unstored_response(client: openai.OpenAI) -> None:
    """Real API: 404, items are not persisted when store is false; the encrypted content is the way."""
    unstored = client.responses.create(model="gpt-5", input="Hi", store=False, include=["reasoning.encrypted_content"])
    reasoning = unstored.output[0].to_dict()
    assert reasoning["type"] == "reasoning"
    follow_up = [reasoning, {"role": "user", "content": "And then?"}]
    assert client.responses.create(model="gpt-5", input=follow_up, store=False).status == "completed"  # type: ignore[arg-type]
    without: dict[str, Any] = {k: v for k, v in reasoning.items() if k != "encrypted_content"}
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model="gpt-5", input=[without, {"role": "user", "content": "And then?"}])  # type: ignore[list-item]
    assert caught.value.body["message"].startswith(  # type: ignore[index]
        f"Item with id '{reasoning['id']}' not found. Items are not persisted when `store` is set to false.")
    stored = client.responses.create(model="gpt-5", input="Hi").output[0].to_dict()
    stored.pop("encrypted_content", None)
    assert client.responses.create(model="gpt-5", input=[stored, {"role": "user", "content": "More"}]).status \
        == "completed"  # type: ignore[list-item]


def test_a_reasoning_models_call_needs_its_reasoning_item(client: openai.OpenAI) -> None:
    step = client.responses.create(model="gpt-5", input=[USER], tools=[WEATHER], tool_choice="required")  # type: ignore[list-item]
    reasoning, call = (item.to_dict() for item in step.output)
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "18 C"}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-5", tools=[WEATHER], input=[USER, call, output])  # type: ignore[list-item]
    assert caught.value.body["message"] == (  # type: ignore[index]
        f"Item '{call['id']}' of type 'function_call' was provided without its required 'reasoning' item: "
        f"'{reasoning['id']}'.")
    for history in ([USER, reasoning, call, output], [USER, ref(reasoning["id"]), call, output]):
        assert client.responses.create(model="gpt-5", tools=[WEATHER], input=history).status == "completed"  # type: ignore[arg-type]
    plain = client.responses.create(model="gpt-4o", input=[USER], tools=[WEATHER], tool_choice="required")  # type: ignore[list-item]
    replay = [USER, plain.output[0].to_dict(), {**output, "call_id": plain.output[0].call_id}]  # type: ignore[union-attr]
    assert client.responses.create(model="gpt-5", tools=[WEATHER], input=replay).status == "completed"  # type: ignore[arg-type]
