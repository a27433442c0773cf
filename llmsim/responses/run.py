"""What only a Responses request does on its way: its history (`previous_response_id`, a conversation), the
store's record of it, background mode, and its events' loop, which stores the response before the client can see
its end. The steps the one template runs (llmsim/orchestrate.py) are in llmsim/responses/create.py."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmsim.errors import APIError, not_found
from llmsim.generation import Delta
from llmsim.responses import schema, translate
from llmsim.responses.background import BackgroundRunner, follow
from llmsim.responses.events import TERMINAL, EventBuilder, dumps_event
from llmsim.responses.replay import DeltaLog, Replay
from llmsim.shared.events import PacedEvent, SerializedEvent, dumps
from llmsim.store import StorageUnavailable, StoredResponse
from llmsim.store.workers import this_worker

if TYPE_CHECKING:
    from llmsim.chaos.faults import Admission
    from llmsim.pipeline import Pipeline


@dataclass
class Run:
    """A Responses request made: the events to send (already serialized) and, once drained, the final Response.
    Storing happens when the stream ends."""

    builder: EventBuilder
    events: Iterator[SerializedEvent]
    stream: bool
    record: StoredResponse  # put in the store at the end when the request asked; WebSocket mode also keeps it
    waits: bool = True  # False: nothing paces, slows or cuts the events, so a transport may send them together
    admission: Admission | None = None  # its ticket: what the answer carries (llmsim/chaos/admission.py)

    @property
    def response(self) -> dict[str, Any]:
        return self.builder.response

    def drain(self) -> dict[str, Any]:
        for _ in self.events:
            pass
        return self.response


def item_finder(pipeline: Pipeline, owner: str) -> Callable[[str], dict[str, Any] | None]:
    """`item_reference` (and items sent back by id) resolve among the stored responses of the caller's scope."""
    return functools.partial(pipeline.store.find_item, owner=owner)


def history(pipeline: Pipeline, previous_response_id: str | None, conversation_id: str | None,
            recent: StoredResponse | None = None, owner: str = "") -> list[dict[str, Any]]:
    if previous_response_id and conversation_id:
        raise APIError(
            "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or "
            "'conversation'.", param=None, code="mutually_exclusive_parameters",
        )
    if conversation_id:
        items = pipeline.conversations.items(conversation_id) if pipeline.conversation(conversation_id, owner) \
            else None
        if items is None:
            raise not_found("Conversation", conversation_id, param="conversation")
        return items
    if not previous_response_id:
        return []
    previous = recent if recent is not None and recent.id == previous_response_id else \
        pipeline.stored(previous_response_id, owner)
    if previous is None:
        raise APIError(f"Previous response with id '{previous_response_id}' not found.",  # a 400 live
                       param="previous_response_id", code="previous_response_not_found")
    return previous.context()


def count_input_tokens(pipeline: Pipeline, body: Any, owner: str = "", lenient: list[str] | None = None) -> int:
    request = schema.parse(schema.InputTokensRequest, body, lenient)
    profile = pipeline.catalog.resolve(request.model or "default")
    earlier = history(pipeline, request.previous_response_id, request.conversation_id, owner=owner)
    items = earlier + translate.normalize_items(request.input, earlier, item_finder(pipeline, owner))
    return translate.count_input_tokens(items, request.instructions, translate.echo_tools(request),
                                        profile.encoding)


def events(pipeline: Pipeline, builder: EventBuilder, deltas: Iterator[Any], record: StoredResponse, store: bool,
           stream: bool) -> Iterator[SerializedEvent | PacedEvent]:
    """The serialized events (only the types when not streaming: nobody reads the data)."""
    log = DeltaLog()
    builder.render = stream  # this loop takes the text deltas the builder serializes itself
    for event in builder.run(log.recording(deltas)):
        if isinstance(event, tuple):  # a text delta the builder serialized itself
            yield event
            continue
        kind = event["type"]
        if kind in TERMINAL:  # settled before the client can see the end: nothing completed is lost
            add_turn(pipeline, record.input_items, builder.response)
            if store:
                record.replay = Replay(log, builder)
                try:
                    pipeline.store.put(record)
                except StorageUnavailable as failure:  # too late for a 503: the stream's own error ends it
                    if not stream:
                        raise
                    yield "error", dumps_event(builder.error("storage_unavailable", failure.message))
                    return
        yield kind, dumps_event(event) if stream else ""


def background(pipeline: Pipeline, builder: EventBuilder, deltas: Iterator[Delta], record: StoredResponse,
               stream: bool, admission: Admission) -> Run:
    """Answer at once with the queued response; a worker generates it, the store carries its events."""
    queued = [(event["type"], dumps(event)) for event in builder.queue()]
    pipeline.store.put(StoredResponse(copy.deepcopy(builder.response), record.input_items, record.history, queued,
                                      worker=this_worker(), owner=record.owner))
    if pipeline.runner is None:  # a pipeline built bare (in tests): its workers when first asked
        pipeline.runner = BackgroundRunner(pipeline.store)
    pipeline.runner.submit(builder.detached(), deltas, functools.partial(add_turn, pipeline, record.input_items))
    sent = follow(pipeline.store, builder.response["id"]) if stream else iter(list(queued))
    return Run(builder, sent, stream, record, admission=admission)


def add_turn(pipeline: Pipeline, items: list[dict[str, Any]], response: dict[str, Any]) -> None:
    """A completed (or incomplete: cut at max_output_tokens) response in a conversation adds its input and
    output items to it, as the live API does."""
    conversation = response.get("conversation")
    if conversation and response["status"] in ("completed", "incomplete"):
        pipeline.conversations.add_items(conversation["id"], [*items, *response["output"]])
