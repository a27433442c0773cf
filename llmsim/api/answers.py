"""The template's typed Answer (llmsim/orchestrate.py) as Flask's response: JSON, SSE, or a relayed answer with
the upstream's (or the recording's) status and headers; then the x-ratelimit headers and the request log entry its
admission left."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from flask import Response, current_app, jsonify

from llmsim.api.sse import SSE_HEADERS, batched, cork, sse_response
from llmsim.backends.relay import Relayed
from llmsim.request import Answer, ticket_of


def respond(answer: Answer, named_events: bool = True) -> Response:
    """`named_events`: a relayed stream's SSE frames say their event names (Responses; Chat Completions has none)."""
    if answer.relayed is not None:
        response = relayed_response(answer.relayed, named_events)
    elif answer.json is not None:
        response = current_app.response_class(answer.json, mimetype="application/json")
    elif answer.frames is not None:
        if answer.together:
            cork()
        frames = batched(answer.frames) if answer.together else answer.frames
        response = Response(frames, mimetype=answer.media_type, headers=SSE_HEADERS)
    elif answer.events is not None:
        response = sse_response(answer.events, answer.trailer, together=answer.together)
    else:
        response = jsonify(answer.body)
    response.headers.update(answer.headers)
    if answer.ticket is not None:
        answer.ticket.answered(response.headers, response.status_code)
    return response


def settled(response: Response, error: BaseException) -> Response:
    """An error's answer, with what the admission of the request it ended left for it (if it got that far)."""
    ticket = ticket_of(error)
    if ticket is not None:
        ticket.answered(response.headers, response.status_code)
    return response


def relayed_response(relayed: Relayed, named_events: bool = True) -> Response:
    """JSON, the upstream's SSE bytes as they are, or SSE with `event:` lines where the upstream sent them
    (Responses; Chat Completions sends none). The bytes go to the server as they come (`direct_passthrough`: no
    layer of werkzeug's per chunk)."""
    if relayed.chunks is not None:
        return Response(relayed.chunks, status=relayed.status, mimetype="text/event-stream",
                        headers={**SSE_HEADERS, **relayed.headers}, direct_passthrough=True)
    if relayed.events is None:
        response = jsonify(relayed.body)
        response.status_code = relayed.status
        response.headers.update(relayed.headers)
        return response
    return Response(frames(relayed.events, named_events), status=relayed.status, mimetype="text/event-stream",
                    headers={**SSE_HEADERS, **relayed.headers})


def frames(events: Iterable[tuple[str, str]], named: bool) -> Iterator[str]:
    for kind, data in events:
        yield f"event: {kind}\ndata: {data}\n\n" if kind and named else f"data: {data}\n\n"
