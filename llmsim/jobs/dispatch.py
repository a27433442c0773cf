"""One request for a URL, run without HTTP: what a batch line is. It takes the same road as an HTTP request to
that URL (its surface's orchestrator: schema, scenarios, rate limits, faults, backend, store, metrics) and comes
back as the status and body the client would have read, errors in that surface's envelope.

This is the one seam between the job runner and the surfaces: a table of URL → orchestrator, to be the surface
contract's registry once every surface has one registration."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmsim import ids
from llmsim.chat import create as chat
from llmsim.errors import APIError, internal_error
from llmsim.messages import create as messages
from llmsim.messages import envelope
from llmsim.request import Answer, ApiRequest, ticket_of
from llmsim.responses import create as responses
from llmsim.runtime.shutdown import ShuttingDown
from llmsim.store.base import StorageUnavailable

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline

log = logging.getLogger("llmsim")
Create = Callable[["Pipeline", ApiRequest], Answer]
Render = Callable[[APIError, str], tuple[int, Any]]  # an error → (status, body) in the surface's envelope


def openai_error(error: APIError, request_id: str) -> tuple[int, Any]:
    return error.status, error.body()


def anthropic_error(error: APIError, request_id: str) -> tuple[int, Any]:
    return envelope.status(error), envelope.body(error, request_id)


@dataclass(frozen=True)
class Route:
    endpoint: str  # as the metrics name it (the route without its mount prefix)
    create: Create
    render: Render


ROUTES: dict[str, Route] = {
    "/v1/responses": Route("/responses", responses.create, openai_error),
    "/v1/chat/completions": Route("/chat/completions", chat.create, openai_error),
    "/v1/messages": Route("/messages", messages.create, anthropic_error),
}


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    request_id: str


def served(url: str) -> bool:
    return url in ROUTES


def run(pipeline: Pipeline, url: str, asked: ApiRequest,
        on_answer: Callable[[str, int], None] | None = None) -> Reply:
    """`asked.body` posted to `url` (one of ROUTES), answered whole (a line never streams). `on_answer`: told the
    endpoint and status, as the HTTP hook counts an answered request. ShuttingDown passes through: the job stops."""
    route = ROUTES[url]
    request_id = ids.new("req", 32)
    status, body = _answered(pipeline, route, asked, request_id)
    if on_answer is not None:
        on_answer(route.endpoint, status)
    return Reply(status, body, request_id)


def _answered(pipeline: Pipeline, route: Route, asked: ApiRequest, request_id: str) -> tuple[int, Any]:
    try:
        try:
            answer = route.create(pipeline, asked)
            status, body = _body(answer)
            if answer.ticket is not None:
                answer.ticket.answered({}, status)
        finally:
            if pipeline.batch is not None:
                pipeline.batch.release()  # what the transport does as an answer leaves
    except ShuttingDown:
        raise
    except APIError as error:
        status, body = route.render(error, request_id)
        _settle(error, status)
        return status, body
    except StorageUnavailable as error:
        status, body = route.render(APIError(error.message, status=503, type="server_error",
                                             code="storage_unavailable"), request_id)
        _settle(error, status)
        return status, body
    except Exception as error:  # noqa: BLE001 - a line's failure is its error result, never the job's end
        if _unavailable(error):
            failure = APIError("The server is overloaded or not ready yet.", status=503, type="server_error")
        else:
            log.exception("batch line failed")
            failure = internal_error()
        status, body = route.render(failure, request_id)
        _settle(error, status)
        return status, body
    return status, body


def _body(answer: Answer) -> tuple[int, Any]:
    if answer.relayed is not None:
        return answer.relayed.status, answer.relayed.body
    if answer.json is not None:
        return 200, json.loads(answer.json)
    return 200, answer.body


def _settle(error: BaseException, status: int) -> None:
    ticket = ticket_of(error)
    if ticket is not None:
        ticket.answered({}, status)


def _unavailable(error: Exception) -> bool:
    """Redis away (its client's connection errors), without importing redis where no store needs it."""
    return type(error).__module__.startswith("redis") and type(error).__name__ in ("ConnectionError", "TimeoutError")
