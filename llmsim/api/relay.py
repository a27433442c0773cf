"""The HTTP side of proxy and replay: rate limits and faults from the raw body, then the relayed answer
sent with the upstream's (or the recording's) status and headers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from flask import Response, jsonify

from llmsim.api import chaos
from llmsim.api.http import owner, services
from llmsim.api.metrics import metered
from llmsim.api.sse import SSE_HEADERS
from llmsim.backends.cassette import canonical
from llmsim.backends.relay import Exchange, Relayed
from llmsim.chaos.faults import Admission, Gate
from llmsim.errors import APIError
from llmsim.generation import Prompt
from llmsim.pipeline import Pipeline

CHARS_PER_TOKEN = 4  # a rate-limit estimate of the input; the answer's usage settles the real count


@dataclass
class Answer:
    relayed: Relayed | None = None  # the backend's answer
    admit: Gate | None = None  # else: the admission already made, for `create`


def answer(endpoint: str, body: Any, speed: float | None, pipeline: Pipeline | None = None,
           raw: bool = False) -> Answer:
    """The relaying backend's answer to `body`; an empty Answer when the backend generates. `raw`: the caller
    sends a live stream's bytes as they come (HTTP), not event by event (WebSocket)."""
    pipeline = pipeline or services().pipeline
    if not hasattr(pipeline.backend, "relay"):
        return Answer()
    if not isinstance(body, dict):
        raise APIError("Invalid request body: expected a JSON object.", code="invalid_type")
    admission = admit(endpoint, body)
    relayed = pipeline.relay(Exchange(endpoint, body), admission, speed, owner(), raw=raw)
    return Answer(relayed, None if relayed is not None else lambda _prompt, _stream, _whole: admission)


def admit(endpoint: str, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> Admission:
    """The chaos gate and the metrics' Meter, from what the body says: model, metadata, a token estimate and
    the output limit. `headers`: the request's (default: Flask's request)."""
    model = str(body.get("model") or "")
    catalog = services().catalog
    profile = catalog.get(model) or catalog.default
    said = [body.get(name) for name in ("instructions", "input", "messages") if body.get(name) is not None]
    limit = body.get("max_output_tokens") or body.get("max_completion_tokens") or body.get("max_tokens")
    metadata = body.get("metadata")
    stream = bool(body.get("stream"))
    prompt = Prompt(model=model, profile=profile, turns=[], input_tokens=len(canonical(said)) // CHARS_PER_TOKEN,
                    max_output_tokens=limit if isinstance(limit, int) else None,
                    metadata=metadata if isinstance(metadata, dict) else {})
    return metered(prompt, stream, lambda: chaos.admit(  # measured at the edge like any other request
        endpoint.replace("/", "."), model, model_id=profile.id, metadata=prompt.metadata,
        input_tokens=prompt.input_tokens, max_output_tokens=prompt.max_output_tokens, stream=stream,
        profile_limits=profile.rate_limits, headers=headers))


def http_response(relayed: Relayed, named_events: bool = True) -> Response:
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
