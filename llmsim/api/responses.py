"""The /responses endpoints: create, retrieve (and replay), delete, cancel, input items, input tokens."""

from __future__ import annotations

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api.http import asked, bool_arg, int_arg, json_body, owner, services
from llmsim.api.sse import sse_response
from llmsim.errors import APIError, not_found
from llmsim.responses import background, compaction, run
from llmsim.responses.background import follow
from llmsim.responses.create import cost_headers
from llmsim.shared import compat
from llmsim.store import StoredResponse

bp = Blueprint("responses", __name__)


def _stored(response_id: str) -> StoredResponse:
    record = services().pipeline.stored(response_id, owner())
    if record is None:
        raise not_found("Response", response_id)
    return record


@bp.get("/responses/<response_id>")
def retrieve(response_id: str) -> ResponseReturnValue:
    record = background.settle_orphan(services().pipeline.store, _stored(response_id))
    if not bool_arg("stream"):
        return jsonify(record.response), cost_headers(services().catalog, record.response)
    after = int_arg("starting_after", -1, low=-1)
    return sse_response(follow(services().pipeline.store, response_id, after))  # waits while it runs


@bp.delete("/responses/<response_id>")
def delete(response_id: str) -> ResponseReturnValue:
    _stored(response_id)
    if not services().pipeline.store.delete(response_id):
        raise not_found("Response", response_id)
    return jsonify({"id": response_id, "object": "response.deleted", "deleted": True})


@bp.post("/responses/<response_id>/cancel")
def cancel(response_id: str) -> ResponseReturnValue:
    record = _stored(response_id)
    if not record.response.get("background"):
        raise APIError("Cannot cancel a synchronous response.")
    if record.status in ("completed", "failed", "incomplete"):
        raise APIError(f"Cannot cancel a {record.status} response.")
    record = background.cancel(services().pipeline.store, response_id) or record  # a final one comes back as is
    return jsonify(record.response)


@bp.get("/responses/<response_id>/input_items")
def input_items(response_id: str) -> ResponseReturnValue:
    record = _stored(response_id)
    limit = int_arg("limit", 20, low=1, high=100)
    order = request.args.get("order", "desc")
    if order not in ("asc", "desc"):
        raise APIError(f"Invalid value: '{order}'. Supported values are: 'asc' and 'desc'.", param="order",
                       code="invalid_value")
    items = record.input_items if order == "asc" else record.input_items[::-1]
    after = request.args.get("after")
    if after:
        position = next((i for i, item in enumerate(items) if item.get("id") == after), None)
        if position is None:
            raise not_found("Item", after, param="after")
        items = items[position + 1:]
    page = items[:limit]
    return jsonify({
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    })


@bp.post("/responses/input_tokens")
def input_tokens() -> ResponseReturnValue:
    request = asked(json_body())
    count = run.count_input_tokens(services().pipeline, request.body, request.owner, request.lenient)
    return jsonify({"object": "response.input_tokens", "input_tokens": count}), compat.headers(request.warnings)


@bp.post("/responses/compact")
def compact() -> ResponseReturnValue:
    request = asked(json_body())
    return jsonify(compaction.compact(services().pipeline, request.body, request.owner, request.lenient)), \
        compat.headers(request.warnings)
