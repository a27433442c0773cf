"""The lean path of a forwarded request: a lean surface's create route (POST /responses and /chat/completions) on
`--backend proxy`, answered without Flask's request machinery.

A proxy's time per request is what its clients lose in throughput and TTFT, and a forwarded request needs little
of the app: the upstream validates the body, so it is decoded once (for the model, limits and `stream`) and never
modelled; no route is matched and no request object is built; the upstream's stream bytes go to the server as they
come, without werkzeug's layers per chunk. This is transport only: the environ becomes the typed request the app's
routes make, the same template answers it (its relay road: admission, the backend, store, settling, the metrics'
Meter; llmsim/relaying.py), and its answer becomes bytes with what the app's hooks add (the
x-ratelimit headers and request log entry of its ticket, the request count, the standard headers).

Whatever is out of the ordinary takes the app's path instead, which answers it as before: API keys configured
(authentication and scoping), a Redis store (its held writes), LLMSim's speed header, a body that is not plain
JSON with a length within the limit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask, Response
from werkzeug.http import HTTP_STATUS_CODES

from llmsim import orchestrate
from llmsim.api import chaos, decode, stamp, writes
from llmsim.api import metrics as api_metrics
from llmsim.api.answers import relayed_response
from llmsim.api.errors import rendered
from llmsim.api.http import SPEED_HEADER
from llmsim.api.sse import SSE_HEADERS
from llmsim.backends.relay import Relayed
from llmsim.chaos.admission import FAULT_HEADER
from llmsim.errors import APIError, internal_error
from llmsim.metrics.answers import answered
from llmsim.request import ApiRequest, Ticket, ticket_of
from llmsim.runtime import waits
from llmsim.runtime.waits import ClientGone
from llmsim.services import Services
from llmsim.surface import Generation, Surface
from llmsim.surfaces import SURFACES

log = logging.getLogger("llmsim")
# the lean path's routes: every lean surface's create route (llmsim/surface.py), and its generation
ROUTES: dict[str, tuple[Surface, Generation[Any]]] = {
    f"{prefix}/{surface.path}": (surface, route.run)  # a Generation: not callable
    for surface in SURFACES if surface.lean for route in surface.routes()
    if route.rule == f"/{surface.path}" and not callable(route.run) for prefix in surface.prefixes}
SPEED_KEY = "HTTP_" + SPEED_HEADER.upper().replace("-", "_")
FAULT_KEY = "HTTP_" + FAULT_HEADER.upper().replace("-", "_")

# a relayed stream's own headers, lower-case as the relayed ones (kept_headers) and the x-ratelimit ones are
SSE = {"content-type": "text/event-stream; charset=utf-8",
       **{name.lower(): value for name, value in SSE_HEADERS.items()}}

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class Passthrough:
    """A relayed stream's answer: its status and headers, then the upstream's bytes as they come, handed to the
    server as they are (no response object, no layer per chunk)."""

    def __init__(self, relayed: Relayed) -> None:
        self.status_code = relayed.status
        self.headers = {**SSE, **relayed.headers}
        self.chunks = relayed.chunks

    def __call__(self, _environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        reason = HTTP_STATUS_CODES.get(self.status_code, "UNKNOWN").upper()
        start_response(f"{self.status_code} {reason}", list(self.headers.items()))
        return self.chunks  # type: ignore[return-value]


def applies(app: Flask) -> bool:
    """Whether the app's backend forwards and nothing the lean path leaves out is configured."""
    services: Services = app.extensions["llmsim"]
    return (services.pipeline.backend.name == "proxy" and not services.settings.api_keys
            and writes.EXTENSION not in app.extensions)


class Forwarding:
    """WSGI: forwarded requests answered here, everything else by `wsgi` (the Flask app's own)."""

    def __init__(self, app: Flask, wsgi: WSGIApp) -> None:
        self.app, self.wsgi = app, wsgi
        services: Services = app.extensions["llmsim"]
        self.pipeline = services.pipeline
        self.max_body = services.settings.max_body_bytes
        self.metrics = app.extensions[api_metrics.EXTENSION]

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        route = ROUTES.get(environ.get("PATH_INFO", "")) if environ.get("REQUEST_METHOD") == "POST" else None
        length = self._plain(environ) if route is not None else None
        if route is None or length is None:
            return self.wsgi(environ, start_response)
        request_id, started = stamp.request_id(), time.perf_counter()
        surface = route[0]
        with self.app.app_context():  # as on the app's path (jsonify)
            response, ticket = self._answer(route, environ, length, request_id)
            stamp.stamp(response.headers, request_id, started)
            streamed = isinstance(response, Passthrough)  # stored as it ends: its Meter updates the gauges then
            answered(self.metrics, self.pipeline, f"/{surface.path}", response.status_code, not streamed)
            if ticket is not None:
                ticket.answered(response.headers, response.status_code)
        return response(environ, start_response)

    def _plain(self, environ: dict[str, Any]) -> int | None:
        """The body's length when the request is one the lean path answers; None: the app's path."""
        length = environ.get("CONTENT_LENGTH", "")
        mimetype = environ.get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
        if not length.isdigit() or int(length) > self.max_body or mimetype != "application/json" \
                or SPEED_KEY in environ or "HTTP_TRANSFER_ENCODING" in environ:
            return None
        return int(length)

    def _answer(self, route: tuple[Surface, Generation[Any]], environ: dict[str, Any], length: int,
                request_id: str) -> tuple[Response | Passthrough, Ticket | None]:
        """The answer, and the ticket its admission left (if it got that far)."""
        surface, generation = route
        waits.watch(environ.get("gunicorn.socket"))
        try:
            raw = environ["wsgi.input"].read(length)
            answer = orchestrate.create(self.pipeline, generation, asked(environ, decode.loads(raw), raw))
            if answer.relayed is None:  # a proxy always answers; this would be a bug
                raise RuntimeError("the proxy backend gave no answer")
            if answer.relayed.chunks is not None:
                return Passthrough(answer.relayed), answer.ticket
            return relayed_response(answer.relayed, named_events=surface.named_events), answer.ticket
        except ClientGone as error:
            return Response(chaos.cut()), ticket_of(error)
        except APIError as error:
            return rendered(error, surface, request_id), ticket_of(error)
        except Exception as error:
            log.exception("unhandled error")
            return rendered(internal_error(), surface, request_id), ticket_of(error)


def asked(environ: dict[str, Any], body: Any, raw: bytes) -> ApiRequest:
    """The typed request the app's routes make (llmsim/api/http.py `asked`), from what the lean path admits: no
    API keys configured (one scope), no speed header; a proxy forwards the body's bytes as they are."""
    scheme, _, key = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    return ApiRequest(body, api_key=key.strip() or None if scheme.lower() == "bearer" else None,
                      fault=environ.get(FAULT_KEY), raw=raw)
