"""POST /v1/messages and /v1/messages/count_tokens (also under /anthropic/v1): the HTTP side of
llmsim/messages/create.py. Errors under its prefixes (raised here or before routing: a 401, 404, 405, 413, an
outage) leave in Anthropic's envelope with its `request-id` header (llmsim/app.py asks `owns`), and rate-limit
headers under Anthropic's names too (llmsim/messages/envelope.py)."""

from __future__ import annotations

from flask import Blueprint, Flask, Response, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api.answers import respond
from llmsim.api.http import asked, json_body, services
from llmsim.errors import APIError
from llmsim.messages import create as messages
from llmsim.messages import envelope

bp = Blueprint("messages", __name__)
PREFIXES = ("/v1", "/anthropic/v1")
ARRIVED = "llmsim.arrived"  # llmsim/app.py's environ key: this request's id and arrival time


def mount(app: Flask) -> None:
    for prefix in PREFIXES:
        app.register_blueprint(bp, url_prefix=prefix, name=f"messages{prefix.replace('/', '_')}")


@bp.post("/messages")
def create() -> ResponseReturnValue:
    return respond(messages.create(services().pipeline, asked(json_body())))


@bp.post("/messages/count_tokens")
def count_tokens() -> ResponseReturnValue:
    return respond(messages.count_tokens(services().pipeline, asked(json_body())))


def _request_id() -> str:
    return str(request.environ.get(ARRIVED, ("",))[0])


@bp.after_request
def _headers(response: Response) -> Response:
    response.headers["request-id"] = _request_id()
    for name, value in envelope.ratelimit_headers(dict(response.headers)).items():
        response.headers.setdefault(name, value)
    for name in envelope.internal_headers():
        response.headers.pop(name, None)
    return response


def owns(path: str) -> bool:
    """Whether an error at `path` (a 404, a 405, an outage before routing) answers in Anthropic's envelope."""
    return path.startswith(f"{PREFIXES[1]}/") or path == f"{PREFIXES[0]}/messages" or \
        path.startswith(f"{PREFIXES[0]}/messages/")


def error_response(error: APIError, status: int | None = None) -> Response:
    """`error` in Anthropic's envelope, with its `request-id`; `status`: kept as it is (a store's outage is a 503
    with its cause, not the 529 of an overloaded model)."""
    response = jsonify(envelope.body(error, _request_id(), status))
    response.status_code = status or envelope.status(error)
    response.headers.update(envelope.headers(error))
    response.headers["request-id"] = _request_id()
    return response
