"""Every error an API request ends in, rendered in one place: in the envelope of the surface it belongs to
(llmsim/api/which.py; llmsim/surface.py `envelope`), with the headers it carries and what its admission left."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from llmsim.api import which
from llmsim.api.answers import settled
from llmsim.errors import APIError, internal_error
from llmsim.runtime.shutdown import ShuttingDown
from llmsim.store.base import StorageUnavailable
from llmsim.surface import HttpFailure, Surface

log = logging.getLogger("llmsim")
RETRY = {"retry-after": "1"}


def rendered(error: APIError, surface: Surface, request_id: str) -> Response:
    body, status = surface.envelope(error, request_id)
    response = jsonify(body)
    response.status_code = status
    response.headers.update(error.headers)
    return response


def render(error: APIError, cause: BaseException | None = None) -> Response:
    """`error` in the envelope of this request's surface; `cause`: what ended the request (its ticket)."""
    return settled(rendered(error, which.surface(), which.request_id()), cause or error)


def install(app: Flask, body_limit: int, unavailable: tuple[type[Exception], ...]) -> None:
    """The app's error handlers. `unavailable`: the errors of a store that is away (Redis down), each a 503."""

    @app.errorhandler(APIError)
    def _api_error(error: APIError) -> Response:
        return render(error)

    @app.errorhandler(HTTPException)
    def _http_error(error: HTTPException) -> Response:
        allowed = tuple(sorted(getattr(error, "valid_methods", None) or []))
        failure = HttpFailure(error.code or 500, request.method, request.path, error.description or error.name,
                              allowed, body_limit)
        response = render(which.surface().http_error(failure))
        if failure.status == 405:
            response.headers["Allow"] = ", ".join(allowed)
        return response

    for kind in unavailable:
        app.register_error_handler(kind, store_unavailable)

    @app.errorhandler(StorageUnavailable)
    def _storage_unavailable(error: StorageUnavailable) -> Response:
        """The store's disk is full, read-only or locked: a 503 saying so (the SDKs retry it), never a 500."""
        log.warning("storage unavailable: %s", error)
        return render(APIError(error.message, status=503, type="server_error", code="storage_unavailable",
                               headers=RETRY), error)

    @app.errorhandler(ShuttingDown)
    def _shutting_down(error: ShuttingDown) -> Response:
        """Cut by a shutdown before its answer began (waiting for admission, say): a 503 to retry elsewhere."""
        return render(APIError(error.message, status=503, type="server_error", code=error.code, headers=RETRY),
                      error)

    @app.errorhandler(Exception)
    def _unexpected(error: Exception) -> Response:
        log.exception("unhandled error")
        return render(internal_error(), error)


def store_unavailable(error: BaseException) -> Response:
    """Redis is away: a 503 the SDKs retry; the pool reconnects by itself once it is back."""
    log.warning("redis unavailable: %s", error)
    return render(APIError("The server is overloaded or not ready yet.", status=503, type="server_error",
                           headers=RETRY), error)
