"""The Gemini API's HTTP side (llmsim/gemini/create.py): `models/{model}:{method}` under /v1beta, /v1 and the same
under /gemini; SSE with `?alt=sse`, else the JSON-array stream; errors in Google's envelope."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from flask import Blueprint, Flask, Response, jsonify, request
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import HTTPException

from llmsim.api.answers import respond, settled
from llmsim.api.http import asked, int_arg, json_body, services
from llmsim.api.sse import SSE_HEADERS
from llmsim.errors import APIError, internal_error
from llmsim.gemini import create as gemini
from llmsim.gemini import envelope
from llmsim.request import Answer

bp = Blueprint("gemini", __name__)
listing = Blueprint("gemini_models", __name__)  # not at /v1, where GET /v1/models is OpenAI's
log = logging.getLogger("llmsim")
PREFIXES = ("/v1beta", "/v1", "/gemini/v1beta", "/gemini/v1")
METHODS = ("generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents")


def mount(app: Flask) -> None:
    for prefix in PREFIXES:
        app.register_blueprint(bp, url_prefix=prefix, name=f"gemini{prefix.replace('/', '_')}")
        if prefix != "/v1":
            app.register_blueprint(listing, url_prefix=prefix, name=f"gemini_models{prefix.replace('/', '_')}")


def _version() -> str:
    return "v1" if request.path.startswith(("/v1/", "/gemini/v1/")) else "v1beta"


@bp.post("/models/<path:target>")
def call(target: str) -> ResponseReturnValue:
    model, _, method = target.partition(":")
    pipeline, version = services().pipeline, _version()
    if method == "generateContent":
        return respond(gemini.generate(pipeline, asked(json_body()), model, False, version))
    if method == "streamGenerateContent":
        return _stream(gemini.generate(pipeline, asked(json_body()), model, True, version))
    if method == "countTokens":
        return jsonify(gemini.count_tokens(pipeline, asked(json_body()), model, version))
    if method == "embedContent":
        return respond(gemini.embed(pipeline, asked(json_body()), model, version))
    if method == "batchEmbedContents":
        return respond(gemini.batch_embed(pipeline, asked(json_body()), model, version))
    raise APIError(f"Invalid URL ({request.method} {request.path})", status=404, type="NOT_FOUND")


def _stream(answer: Answer) -> Response:
    if request.args.get("alt") == "sse":
        return respond(Answer(frames=(f"data: {data}\r\n\r\n" for _, data in answer.events or ()),
                              headers=answer.headers, ticket=answer.ticket, together=answer.together))
    response = Response(_array(answer.events or iter(())), mimetype="application/json", headers=SSE_HEADERS)
    response.headers.update(answer.headers)
    if answer.ticket is not None:
        answer.ticket.answered(response.headers, response.status_code)
    return response


def _array(events: Iterator[tuple[str, str]]) -> Iterator[str]:
    """The JSON-array stream: `[` the first chunk, then `,` and each next one, then `]`."""
    first = True
    for _, data in events:
        yield ("[" if first else "\r\n,") + data
        first = False
    yield "[]" if first else "]"


@listing.get("/models")
def list_models() -> ResponseReturnValue:
    return jsonify(gemini.list_models(services().pipeline, int_arg("pageSize", 50, 0, 1000),
                                      request.args.get("pageToken")))


@listing.get("/models/<path:model>")
def get_model(model: str) -> ResponseReturnValue:
    return jsonify(gemini.get_model(services().pipeline, model, _version()))


def _model() -> str | None:
    target = (request.view_args or {}).get("target") or (request.view_args or {}).get("model")
    return str(target).partition(":")[0] if target else None


def _error(error: APIError) -> Response:
    response = jsonify(envelope.body(error, _model()))
    response.status_code = envelope.status(error)
    response.headers.update(error.headers)
    return response


def _api_error(error: APIError) -> Response:
    return settled(_error(error), error)


def _http_error(error: HTTPException) -> Response:
    return _error(APIError(error.description or error.name, status=error.code or 500))


def _unexpected(error: Exception) -> Response:
    log.exception("unhandled error")
    return settled(_error(internal_error()), error)


for _blueprint in (bp, listing):
    _blueprint.register_error_handler(APIError, _api_error)
    _blueprint.register_error_handler(HTTPException, _http_error)
    _blueprint.register_error_handler(Exception, _unexpected)
