"""The /responses endpoints: create, retrieve (and replay), delete, cancel, input items, input tokens."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api import relay, writes
from llmsim.api.chaos import gate
from llmsim.api.http import bool_arg, int_arg, json_body, owner, seed_header, services, speed_header, text_mode_header
from llmsim.api.sse import sse_response
from llmsim.errors import APIError, not_found
from llmsim.pipeline import Run
from llmsim.responses import compaction
from llmsim.store import StoredResponse, background
from llmsim.store.background import follow
from llmsim.timing.pricing import COST_HEADER, Pricing, response_cost

bp = Blueprint("responses", __name__)
def _pricing(model: str) -> Pricing | None:
    catalog = services().catalog
    return (catalog.get(model) or catalog.default).pricing


def _cost_headers(response: dict) -> dict[str, str]:
    cost = response_cost(_pricing(response["model"]), response)
    return {COST_HEADER: cost} if cost is not None else {}


def _cost_comment(pricing: Pricing | None, response: dict) -> str | None:
    cost = response_cost(pricing, response)
    return None if cost is None else f"{COST_HEADER}: {cost}"


def _stored(response_id: str) -> StoredResponse:
    record = services().pipeline.stored(response_id, owner())
    if record is None:
        raise not_found("Response", response_id)
    return record


def _run(body: Any, answer: relay.Answer) -> Run:
    return services().pipeline.create(body, seed=seed_header(), speed=speed_header(),
                                      admit=answer.admit or gate("responses"), text_mode=text_mode_header(),
                                      owner=owner(), paced_runs=True)


@bp.post("/responses")
def create() -> ResponseReturnValue:
    body = json_body()
    answer = relay.answer("responses", body, speed_header(), raw=True)
    if answer.relayed is not None:
        return relay.http_response(answer.relayed)
    writes.hold()  # a JSON answer's writes (and admission, if it can wait) go to Redis together: one round trip
    run = _run(body, answer)
    if run.stream:  # the cost is known only at the end: an SSE comment after the last event
        pricing = _pricing(run.response["model"])
        return sse_response(run.events, lambda: _cost_comment(pricing, run.response), together=not run.waits)
    run.drain()
    if not writes.commit():  # made under faults or a scenario the fleet has since changed: made again under its own
        run = _run(body, answer)
        run.drain()
    response = run.response
    if response["status"] == "failed":
        error = response["error"] or {}
        raise APIError(error.get("message", "The model failed."), status=500, type="server_error",
                       code=error.get("code"))
    # As jsonify writes it; encoded once with the stored response (llmsim/store/base.py `response_json`)
    return current_app.response_class(run.record.response_json() + "\n", mimetype="application/json"), \
        _cost_headers(response)


@bp.get("/responses/<response_id>")
def retrieve(response_id: str) -> ResponseReturnValue:
    record = background.settle_orphan(services().pipeline.store, _stored(response_id))
    if not bool_arg("stream"):
        return jsonify(record.response), _cost_headers(record.response)
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
    count = services().pipeline.count_input_tokens(json_body(), owner())
    return jsonify({"object": "response.input_tokens", "input_tokens": count})


@bp.post("/responses/compact")
def compact() -> ResponseReturnValue:
    return jsonify(compaction.compact(services().pipeline, json_body(), owner()))
