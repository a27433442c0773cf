"""Background mode through the official SDK: queued answers, polling, cancel, resumable streams."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest

from llmsim.responses import background
from llmsim.responses.events import EventBuilder
from llmsim.store import Database, MemoryStore, SQLiteStore, StoredResponse
from llmsim.testing import ServerProcess
from stateful import PACED, client_for, slow_profiles, until, wait_final


@pytest.fixture(scope="module")
def slow_server(shared_server: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory
                ) -> ServerProcess:
    return shared_server("--profiles-dir", str(slow_profiles(tmp_path_factory.mktemp("profiles"))))


@pytest.fixture(scope="module")
def slow(slow_server: ServerProcess) -> Iterator[openai.OpenAI]:
    with client_for(slow_server) as client:
        yield client


def test_answers_queued_at_once_then_completes(client: openai.OpenAI) -> None:
    queued = client.responses.create(model="gpt-4o", input="Write a haiku.", background=True)
    assert queued.status == "queued" and queued.background is True and queued.output == []
    done = wait_final(client, queued.id)
    assert done.status == "completed" and done.output_text and done.background is True

    events = list(client.responses.retrieve(queued.id, stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events[:3]] == ["response.created", "response.queued", "response.in_progress"]
    assert events[0].response.status == "queued" and events[-1].type == "response.completed"  # type: ignore[union-attr]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == done.output_text


def test_get_shows_queued_then_in_progress_then_completed(slow: openai.OpenAI) -> None:
    created = slow.responses.create(model="slow-model", input="Hi", background=True, text={"verbosity": "medium"},
                                    extra_headers=PACED)
    seen = [created.status]

    def final() -> bool:
        status = slow.responses.retrieve(created.id).status
        if status != seen[-1]:
            seen.append(status)  # type: ignore[arg-type]
        return status in ("completed", "failed", "cancelled", "incomplete")

    until(final)
    assert seen == ["queued", "in_progress", "completed"]


def test_cancel_really_stops_generation(slow: openai.OpenAI, client: openai.OpenAI) -> None:
    request = {"model": "slow-model", "input": "Tell me everything.", "text": {"verbosity": "high"}}
    full = client.responses.create(**request, extra_headers={"X-LLMSim-Seed": "11"}).output_text  # type: ignore[call-overload]

    stream = slow.responses.create(**request, background=True, stream=True,  # type: ignore[call-overload]
                                   extra_headers={**PACED, "X-LLMSim-Seed": "11"})
    deltas: list[str] = []
    kinds: list[str] = []
    response_id = ""
    cancelled = None
    for event in stream:
        kinds.append(event.type)
        if event.type == "response.created":
            response_id = event.response.id
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
            if len(deltas) == 3:
                cancelled = slow.responses.cancel(response_id)
    # The stream ended by itself: generation stopped, and a terminal event carries the cancelled response.
    assert cancelled is not None and cancelled.status == "cancelled"
    assert not {"response.completed", "response.failed"} & set(kinds)
    assert kinds[-2:] == ["response.output_item.done", "response.incomplete"]
    assert event.response.status == "cancelled"  # type: ignore[union-attr]

    final = slow.responses.retrieve(response_id)
    assert final.status == "cancelled" and final.output[0].status == "incomplete"  # type: ignore[union-attr]
    text = final.output[0].content[0].text  # type: ignore[union-attr]
    assert text == "".join(deltas) and full.startswith(text) and len(text) < len(full)
    replay = list(slow.responses.retrieve(response_id, stream=True))
    assert [e.type for e in replay] == kinds
    assert slow.responses.cancel(response_id).status == "cancelled"  # cancelling again changes nothing


def test_resume_with_starting_after_while_running(slow: openai.OpenAI) -> None:
    stream = slow.responses.create(model="slow-model", input="Tell me a story.", background=True, stream=True,
                                   text={"verbosity": "high"}, extra_headers={"X-LLMSim-Speed": "4"})  # 10 ms a token:
    # 90 to 400 tokens, still running (for a second at least) when the client has left after 5
    first_part: list[str] = []
    last = -1
    response_id = ""
    for event in stream:
        last = event.sequence_number
        if event.type == "response.created":
            response_id = event.response.id
        if event.type == "response.output_text.delta":
            first_part.append(event.delta)
            if len(first_part) == 5:
                break
    stream.close()  # the client goes away; the response carries on without it
    assert slow.responses.retrieve(response_id).status == "in_progress"

    resumed = list(slow.responses.retrieve(response_id, stream=True, starting_after=last))
    assert [e.sequence_number for e in resumed] == list(range(last + 1, last + 1 + len(resumed)))
    assert resumed[-1].type == "response.completed"
    rest = [e.delta for e in resumed if e.type == "response.output_text.delta"]
    assert "".join(first_part + rest) == resumed[-1].response.output_text  # type: ignore[union-attr]


def test_background_needs_store(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="Hi", background=True, store=False)
    assert "store" in caught.value.message


def test_cancel_rules(client: openai.OpenAI) -> None:
    synchronous = client.responses.create(model="gpt-4o", input="Hi")
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.cancel(synchronous.id)
    assert caught.value.body["message"] == "Cannot cancel a synchronous response."  # type: ignore[index]
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_missing")
    queued = client.responses.create(model="gpt-4o", input="Hi", background=True)
    assert wait_final(client, queued.id).status == "completed"
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.cancel(queued.id)
    assert caught.value.body["message"] == "Cannot cancel a completed response."  # type: ignore[index]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_queued_response_cancelled_ends_its_stream(store: str, tmp_path: Path) -> None:
    """No worker ever ran it, so nothing else would write its stream's end."""
    responses = MemoryStore() if store == "memory" else SQLiteStore(Database(tmp_path / "s.db"))
    builder = EventBuilder({"id": "resp_1", "status": "queued", "output": []})
    responses.put(StoredResponse(builder.response, [], [], [(e["type"], json.dumps(e)) for e in builder.queue()]))
    assert background.cancel(responses, "resp_1").status == "cancelled"  # type: ignore[union-attr]
    events = [json.loads(data) for _, data in list(background.follow(responses, "resp_1"))]
    assert [e["type"] for e in events] == ["response.created", "response.queued", "response.incomplete"]
    assert [e["sequence_number"] for e in events] == [0, 1, 2] and events[-1]["response"]["status"] == "cancelled"


def test_background_response_in_a_conversation(client: openai.OpenAI) -> None:
    conversation = client.conversations.create()
    queued = client.responses.create(model="gpt-4o", input="Hi", background=True, conversation=conversation.id)
    done = wait_final(client, queued.id)
    listed = client.conversations.items.list(conversation.id, order="asc").data
    assert [item.id for item in listed][1:] == [item.id for item in done.output]


def test_background_chain(client: openai.OpenAI) -> None:
    first = wait_final(client, client.responses.create(model="gpt-4o", input="Hi", background=True).id)
    second = client.responses.create(model="gpt-4o", input="More", previous_response_id=first.id)
    assert second.status == "completed"
    assert second.usage is not None and first.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens
