"""The Conversations API and `conversation` on POST /responses, through the official SDK."""

from __future__ import annotations

import httpx
import openai
import pytest
from openai.types.conversations import Message

from llmsim.testing import ServerProcess


def user(text: str) -> dict[str, str]:
    return {"type": "message", "role": "user", "content": text}


def test_create_retrieve_update_delete(client: openai.OpenAI) -> None:
    conversation = client.conversations.create(metadata={"topic": "demo"}, items=[user("Hello!")])
    assert conversation.id.startswith("conv_") and conversation.object == "conversation"
    assert conversation.metadata == {"topic": "demo"} and conversation.created_at > 0

    assert client.conversations.retrieve(conversation.id) == conversation
    updated = client.conversations.update(conversation.id, metadata={"topic": "other", "user": "u1"})
    assert updated.metadata == {"topic": "other", "user": "u1"}
    assert client.conversations.retrieve(conversation.id).metadata == {"topic": "other", "user": "u1"}

    deleted = client.conversations.delete(conversation.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (conversation.id, True, "conversation.deleted")
    with pytest.raises(openai.NotFoundError) as caught:
        client.conversations.retrieve(conversation.id)
    assert caught.value.body["message"] == f"Conversation with id '{conversation.id}' not found."  # type: ignore[index]


def test_initial_items_are_listed_with_ids(client: openai.OpenAI) -> None:
    conversation = client.conversations.create(items=[user("one"), {"role": "assistant", "content": "two"}])
    items = client.conversations.items.list(conversation.id, order="asc").data
    assert [type(item) for item in items] == [Message, Message]
    assert [item.role for item in items] == ["user", "assistant"]  # type: ignore[union-attr]
    assert [item.content[0].text for item in items] == ["one", "two"]  # type: ignore[union-attr]
    assert all(item.id.startswith("msg_") and item.status == "completed" for item in items)  # type: ignore[union-attr]


def test_items_create_retrieve_delete(client: openai.OpenAI) -> None:
    conversation = client.conversations.create()
    added = client.conversations.items.create(conversation.id, items=[user("a"), user("b")])
    assert added.object == "list" and not added.has_more
    assert [item.content[0].text for item in added.data] == ["a", "b"]  # type: ignore[union-attr]
    first = added.data[0]
    assert added.first_id == first.id and added.last_id == added.data[1].id

    assert client.conversations.items.retrieve(first.id, conversation_id=conversation.id) == first
    after_delete = client.conversations.items.delete(first.id, conversation_id=conversation.id)
    assert after_delete.id == conversation.id and after_delete.object == "conversation"
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve(first.id, conversation_id=conversation.id)
    assert [item.id for item in client.conversations.items.list(conversation.id).data] == [added.data[1].id]


def test_at_most_20_items_per_call(client: openai.OpenAI) -> None:
    conversation = client.conversations.create()
    client.conversations.items.create(conversation.id, items=[user(str(i)) for i in range(20)])
    with pytest.raises(openai.BadRequestError) as caught:
        client.conversations.items.create(conversation.id, items=[user(str(i)) for i in range(21)])
    assert caught.value.code == "array_above_max_length" and caught.value.param == "items"
    with pytest.raises(openai.BadRequestError):
        client.conversations.create(items=[user(str(i)) for i in range(21)])
    assert len(client.conversations.items.list(conversation.id, limit=100).data) == 20


def test_list_order_limit_after_and_auto_pagination(client: openai.OpenAI) -> None:
    conversation = client.conversations.create(items=[user(str(i)) for i in range(7)])
    ascending = client.conversations.items.list(conversation.id, order="asc", limit=3)
    assert [item.content[0].text for item in ascending.data] == ["0", "1", "2"]  # type: ignore[union-attr]
    assert ascending.has_more
    nxt = client.conversations.items.list(conversation.id, order="asc", limit=3, after=ascending.last_id)
    assert [item.content[0].text for item in nxt.data] == ["3", "4", "5"]  # type: ignore[union-attr]

    descending = client.conversations.items.list(conversation.id, limit=2)  # desc is the default
    assert [item.content[0].text for item in descending.data] == ["6", "5"]  # type: ignore[union-attr]
    every = [item.content[0].text for item in client.conversations.items.list(conversation.id, limit=2)]  # type: ignore[union-attr]
    assert every == [str(i) for i in reversed(range(7))]


def test_bad_requests(client: openai.OpenAI, server: ServerProcess) -> None:
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve("conv_doesnotexist")
    with pytest.raises(openai.BadRequestError) as caught:
        client.conversations.retrieve("nope")
    assert caught.value.param == "conversation_id"
    with pytest.raises(openai.BadRequestError) as caught:
        client.conversations.create(metadata={f"k{i}": "v" for i in range(17)})
    assert caught.value.code == "object_above_max_properties"
    conversation = client.conversations.create()
    with pytest.raises(openai.BadRequestError) as caught:
        client.conversations.items.list(conversation.id, order="sideways")  # type: ignore[arg-type]
    assert caught.value.param == "order"
    with pytest.raises(openai.BadRequestError) as caught:
        client.conversations.items.create(conversation.id, items=[{"type": "message", "role": "user"}])  # type: ignore[list-item]
    assert caught.value.code == "missing_required_parameter"
    raw = httpx.post(f"{server.base_url}/conversations/{conversation.id}", json={})
    assert raw.status_code == 400 and raw.json()["error"]["param"] == "metadata"
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.delete("msg_missing", conversation_id=conversation.id)


def test_response_in_a_conversation_sees_and_extends_it(client: openai.OpenAI) -> None:
    conversation = client.conversations.create(items=[user("My name is Ada.")])
    first = client.responses.create(model="gpt-4o", input="What is my name?", conversation=conversation.id)
    assert first.conversation is not None and first.conversation.id == conversation.id
    items = client.conversations.items.list(conversation.id, order="asc").data
    assert [item.type for item in items] == ["message", "message", "message"]
    assert items[1].content[0].text == "What is my name?"  # type: ignore[union-attr]
    assert items[2].id == first.output[0].id and items[2].content[0].text == first.output_text  # type: ignore[union-attr]

    alone = client.responses.create(model="gpt-4o", input="Tell me more.")
    second = client.responses.create(model="gpt-4o", input="Tell me more.", conversation={"id": conversation.id})
    assert second.usage is not None and alone.usage is not None
    assert second.usage.input_tokens > alone.usage.input_tokens  # the conversation's items came first
    assert len(client.conversations.items.list(conversation.id, limit=100).data) == 5
    listed = client.responses.input_items.list(second.id).data
    assert [item.content[0].text for item in listed] == ["Tell me more."]  # type: ignore[union-attr]


def test_streamed_response_extends_the_conversation_before_it_ends(client: openai.OpenAI) -> None:
    conversation = client.conversations.create()
    with client.responses.stream(model="gpt-4o", input="Hi", conversation=conversation.id) as stream:
        final = stream.get_final_response()
        listed = client.conversations.items.list(conversation.id, order="asc").data
    assert [item.id for item in listed][1:] == [final.output[0].id]


def test_item_reference_and_logprobs_include(client: openai.OpenAI) -> None:
    conversation = client.conversations.create(items=[user("remember this")])
    response = client.responses.create(model="gpt-4o", input="Hi", conversation=conversation.id,
                                       include=["message.output_text.logprobs"], top_logprobs=2)
    answer = response.output[0].id
    plain = client.conversations.items.retrieve(answer, conversation_id=conversation.id)
    with_logprobs = client.conversations.items.retrieve(answer, conversation_id=conversation.id,
                                                        include=["message.output_text.logprobs"])
    assert plain.content[0].logprobs == []  # type: ignore[union-attr]
    assert with_logprobs.content[0].logprobs  # type: ignore[union-attr]

    first = client.conversations.items.list(conversation.id, order="asc").data[0]
    added = client.conversations.items.create(conversation.id, items=[{"type": "item_reference", "id": first.id}])
    assert added.data[0].content[0].text == "remember this"  # type: ignore[union-attr]


def test_conversation_errors_on_responses(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model="gpt-4o", input="Hi", conversation="conv_missing")
    assert caught.value.param == "conversation"
    conversation = client.conversations.create()
    previous = client.responses.create(model="gpt-4o", input="Hi")
    with pytest.raises(openai.BadRequestError) as mutual:
        client.responses.create(model="gpt-4o", input="Hi", conversation=conversation.id,
                                previous_response_id=previous.id)
    assert mutual.value.code == "mutually_exclusive_parameters"
    assert client.conversations.items.list(conversation.id).data == []


def test_an_incomplete_response_joins_the_conversation(client: openai.OpenAI) -> None:
    conversation = client.conversations.create(items=[user("x")])
    truncated = client.responses.create(model="gpt-4o", input="Hi", conversation=conversation.id, max_output_tokens=16,
                                        text={"verbosity": "high"})
    assert truncated.status == "incomplete"
    assert len(client.conversations.items.list(conversation.id).data) == 3  # as on the live API (issue 32)
