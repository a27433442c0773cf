"""The lean path of a forwarded request: POST /responses and /chat/completions on `--backend proxy`, answered
without Flask's request machinery.

A proxy's time per request is what its clients lose in throughput and TTFT, and a forwarded request needs little
of the app: the upstream validates the body, so it is decoded once (for the model, limits and `stream`) and never
modelled; no route is matched and no request object is built; the upstream's stream bytes go to the server as they
come, without werkzeug's layers per chunk. What applies is the app's own code, called directly: the chaos gate
and rate limits (relay.admit), the pipeline's relay (store, settling, the metrics' Meter), the x-ratelimit headers
and the request log entry (chaos.answered), the request count (metrics.answered) and the standard headers (stamp).

Whatever is out of the ordinary takes the app's path instead, which answers it as before: API keys configured
(authentication and scoping), a Redis store (its held writes), LLMSim's speed header, a body that is not plain
JSON with a length within the limit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask, Response, jsonify
from werkzeug.datastructures import EnvironHeaders
from werkzeug.http import HTTP_STATUS_CODES

from llmsim.api import PREFIXES, chaos, decode, relay, stamp, writes
from llmsim.api import metrics as api_metrics
from llmsim.api.http import SPEED_HEADER
from llmsim.api.sse import SSE_HEADERS
from llmsim.backends.relay import ENDPOINTS, Exchange, Relayed
from llmsim.errors import APIError, internal_error
from llmsim.runtime import waits
from llmsim.runtime.waits import ClientGone
from llmsim.services import Services

log = logging.getLogger("llmsim")
ROUTES = {f"{prefix}/{endpoint}": endpoint for prefix in PREFIXES for endpoint in ENDPOINTS}
SPEED_KEY = "HTTP_" + SPEED_HEADER.upper().replace("-", "_")

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
    return (getattr(services.pipeline.backend, "name", None) == "proxy" and not services.settings.api_keys
            and writes.EXTENSION not in app.extensions)


class Forwarding:
    """WSGI: forwarded requests answered here, everything else by `wsgi` (the Flask app's own)."""

    def __init__(self, app: Flask, wsgi: WSGIApp) -> None:
        self.app, self.wsgi = app, wsgi
        services: Services = app.extensions["llmsim"]
        self.pipeline = services.pipeline
        self.max_body = services.settings.max_body_bytes
        self.chaos = app.extensions[chaos.EXTENSION]
        self.metrics = app.extensions[api_metrics.EXTENSION]

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        endpoint = ROUTES.get(environ.get("PATH_INFO", "")) if environ.get("REQUEST_METHOD") == "POST" else None
        length = self._plain(environ) if endpoint is not None else None
        if endpoint is None or length is None:
            return self.wsgi(environ, start_response)
        request_id, started = stamp.request_id(), time.perf_counter()
        with self.app.app_context():  # `g` for the gate's per-request notes, as on the app's path
            response = self._answer(endpoint, environ, length)
            stamp.stamp(response.headers, request_id, started)
            streamed = isinstance(response, Passthrough)  # stored as it ends: its Meter updates the gauges then
            api_metrics.answered(self.metrics, self.pipeline, f"/{endpoint}", response.status_code, not streamed)
            chaos.answered(self.chaos, response.headers, response.status_code)
        return response(environ, start_response)

    def _plain(self, environ: dict[str, Any]) -> int | None:
        """The body's length when the request is one the lean path answers; None: the app's path."""
        length = environ.get("CONTENT_LENGTH", "")
        mimetype = environ.get("CONTENT_TYPE", "").partition(";")[0].strip().lower()
        if not length.isdigit() or int(length) > self.max_body or mimetype != "application/json" \
                or SPEED_KEY in environ or "HTTP_TRANSFER_ENCODING" in environ:
            return None
        return int(length)

    def _answer(self, endpoint: str, environ: dict[str, Any], length: int) -> Response | Passthrough:
        waits.watch(environ.get("gunicorn.socket"))
        try:
            raw = environ["wsgi.input"].read(length)
            body = decode.loads(raw)
            if not isinstance(body, dict):
                raise APIError("Invalid request body: expected a JSON object.", code="invalid_type")
            admission = relay.admit(endpoint, body, EnvironHeaders(environ))
            relayed = self.pipeline.relay(Exchange(endpoint, body, raw), admission, raw=True)
            if relayed is None:  # a proxy always answers; this would be a bug
                raise RuntimeError("the proxy backend gave no answer")
            if relayed.chunks is not None:
                return Passthrough(relayed)
            return relay.http_response(relayed, named_events=endpoint == "responses")
        except ClientGone:
            return Response(chaos.cut())
        except APIError as error:
            response = jsonify(error.body())
            response.status_code = error.status
            response.headers.update(error.headers)
            return response
        except Exception:
            log.exception("unhandled error")
            response = jsonify(internal_error().body())
            response.status_code = 500
            return response
