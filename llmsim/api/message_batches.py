"""/v1/messages/batches (also under /anthropic/v1): Anthropic's Message Batches, the HTTP side of
llmsim/jobs/message_batches.py; its answers and errors are the Messages surface's (Anthropic's envelope and
headers)."""

from __future__ import annotations

from flask import Blueprint, Flask, Response, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api import which
from llmsim.api.files import jobs
from llmsim.api.http import asked, int_arg, json_body, owner
from llmsim.messages.surface import MESSAGES

bp = Blueprint("message_batches", __name__)


def mount(app: Flask) -> None:
    for prefix in MESSAGES.prefixes:
        name = f"message_batches{prefix.replace('/', '_')}"
        app.register_blueprint(bp, url_prefix=prefix, name=name)
        which.mounted(name, MESSAGES)


def _base() -> str:
    """Where this request's API is (its results_url points there): the host and the prefix it came under."""
    prefix = next(p for p in sorted(MESSAGES.prefixes, key=len, reverse=True) if request.path.startswith(p + "/"))
    return request.host_url.rstrip("/") + prefix


@bp.post("/messages/batches")
def create() -> ResponseReturnValue:
    return jsonify(jobs().message_batches.create(asked(json_body()), _base()))


@bp.get("/messages/batches")
def list_batches() -> ResponseReturnValue:
    return jsonify(jobs().message_batches.page(owner(), request.args.get("after_id"), request.args.get("before_id"),
                                               int_arg("limit", 20, low=1, high=1000), _base()))


@bp.get("/messages/batches/<batch_id>")
def retrieve(batch_id: str) -> ResponseReturnValue:
    return jsonify(jobs().message_batches.retrieve(owner(), batch_id, _base()))


@bp.post("/messages/batches/<batch_id>/cancel")
def cancel(batch_id: str) -> ResponseReturnValue:
    return jsonify(jobs().message_batches.cancel(owner(), batch_id, _base()))


@bp.delete("/messages/batches/<batch_id>")
def delete(batch_id: str) -> ResponseReturnValue:
    return jsonify(jobs().message_batches.delete(owner(), batch_id))


@bp.get("/messages/batches/<batch_id>/results")
def results(batch_id: str) -> ResponseReturnValue:
    return Response(jobs().message_batches.results(owner(), batch_id), mimetype="application/x-jsonl")
