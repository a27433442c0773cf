"""The /responses endpoints: create, retrieve (and replay), delete, cancel, input items, input tokens."""

from __future__ import annotations

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api.chaos import gate
from llmsim.api.http import bool_arg, int_arg, json_body, services
from llmsim.api.sse import sse_response
from llmsim.errors import APIError, not_found
from llmsim.store import StoredResponse

bp = Blueprint("responses", __name__)
SEED_HEADER = "X-LLMSim-Seed"


def _seed() -> int | None:
    raw = request.headers.get(SEED_HEADER)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise APIError(f"Invalid {SEED_HEADER} header: expected an integer, got '{raw}'.", param=SEED_HEADER,
                       code="invalid_value") from None


def _stored(response_id: str) -> StoredResponse:
    record = services().pipeline.store.get(response_id)
    if record is None:
        raise not_found("Response", response_id)
    return record


@bp.post("/responses")
def create() -> ResponseReturnValue:
    run = services().pipeline.create(json_body(), seed=_seed(), admit=gate("responses"))
    if run.stream:
        return sse_response(run.events)
    response = run.drain()
    if response["status"] == "failed":
        error = response["error"] or {}
        raise APIError(error.get("message", "The model failed."), status=500, type="server_error",
                       code=error.get("code"))
    return jsonify(response)


@bp.get("/responses/<response_id>")
def retrieve(response_id: str) -> ResponseReturnValue:
    record = _stored(response_id)
    if not bool_arg("stream"):
        return jsonify(record.response)
    after = int_arg("starting_after", -1, low=-1)
    return sse_response(record.events[after + 1:])  # an event's sequence_number is its index


@bp.delete("/responses/<response_id>")
def delete(response_id: str) -> ResponseReturnValue:
    if not services().pipeline.store.delete(response_id):
        raise not_found("Response", response_id)
    return jsonify({"id": response_id, "object": "response.deleted", "deleted": True})


@bp.post("/responses/<response_id>/cancel")
def cancel(response_id: str) -> ResponseReturnValue:
    record = _stored(response_id)
    if not record.response.get("background"):
        raise APIError("Cannot cancel a synchronous response.")
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
    count = services().pipeline.count_input_tokens(json_body())
    return jsonify({"object": "response.input_tokens", "input_tokens": count})
