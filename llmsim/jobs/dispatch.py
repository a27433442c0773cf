"""One request for a URL, run without HTTP: what a batch line is. The surface contract's registry finds the route
a request to that URL takes (llmsim/orchestrate.py `route_for`), and it runs on the same road as over HTTP (`run`:
its surface's schema, scenarios, rate limits, faults, backend, store, metrics); it comes back as the status and
body the client would have read, an error in that surface's envelope."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmsim import ids, orchestrate
from llmsim.errors import APIError, internal_error
from llmsim.request import Answer, ApiRequest, ticket_of
from llmsim.runtime.shutdown import ShuttingDown
from llmsim.store.base import StorageUnavailable

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface

log = logging.getLogger("llmsim")
METHOD = "POST"  # a batch line's only method


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    request_id: str


def served(url: str) -> bool:
    """Whether a route of a registered surface answers a POST to `url` (/v1/embeddings once a surface has it)."""
    return orchestrate.route_for(METHOD, url) is not None


def run(pipeline: Pipeline, url: str, asked: ApiRequest,
        on_answer: Callable[[str, int], None] | None = None) -> Reply:
    """`asked.body` posted to `url`, answered whole (a line never streams). `on_answer`: told the endpoint (as the
    metrics label it) and the status, as the HTTP hook counts an answered request. ShuttingDown passes through:
    the job stops there."""
    routed = orchestrate.route_for(METHOD, url)
    if routed is None:
        raise ValueError(f"no route answers POST {url}")  # `served` was asked when the job was made
    request_id = ids.new("req", 32)
    status, body = _answered(pipeline, routed, asked, request_id)
    if on_answer is not None:
        on_answer(routed.surface.metrics_label(routed.route.rule), status)
    return Reply(status, body, request_id)


def _answered(pipeline: Pipeline, routed: orchestrate.Routed, asked: ApiRequest,
              request_id: str) -> tuple[int, Any]:
    surface = routed.surface
    try:
        try:
            answer = orchestrate.run(pipeline, surface, routed.route, asked)
            status, body = _body(answer)
            if answer.ticket is not None:
                answer.ticket.answered({}, status)
        finally:
            if pipeline.batch is not None:
                pipeline.batch.release()  # what the transport does as an answer leaves
    except ShuttingDown:
        raise
    except APIError as error:
        return _error(surface, error, error, request_id)
    except StorageUnavailable as error:
        return _error(surface, APIError(error.message, status=503, type="server_error", code="storage_unavailable"),
                      error, request_id)
    except Exception as error:  # noqa: BLE001 - a line's failure is its error result, never the job's end
        if _unavailable(error):
            return _error(surface, surface.overloaded(), error, request_id)
        log.exception("batch line failed")
        return _error(surface, internal_error(), error, request_id)
    return status, body


def _error(surface: Surface, error: APIError, cause: BaseException, request_id: str) -> tuple[int, Any]:
    body, status = surface.envelope(error, request_id)
    ticket = ticket_of(cause)
    if ticket is not None:
        ticket.answered({}, status)
    return status, body


def _body(answer: Answer) -> tuple[int, Any]:
    if answer.relayed is not None:
        return answer.relayed.status, answer.relayed.body
    if answer.json is not None:
        return 200, json.loads(answer.json)
    return 200, answer.body


def _unavailable(error: Exception) -> bool:
    """Redis away (its client's connection errors), without importing redis where no store needs it."""
    return type(error).__module__.startswith("redis") and type(error).__name__ in ("ConnectionError", "TimeoutError")
