"""/v1/batches: OpenAI's Batch API, the HTTP side of llmsim/jobs/openai_batches.py."""

from __future__ import annotations

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api.files import jobs
from llmsim.api.http import asked, int_arg, json_body, owner

bp = Blueprint("batches", __name__)


@bp.post("/batches")
def create() -> ResponseReturnValue:
    return jsonify(jobs().batches.create(asked(json_body())))


@bp.get("/batches")
def list_batches() -> ResponseReturnValue:
    return jsonify(jobs().batches.page(owner(), request.args.get("after"), int_arg("limit", 20, low=1, high=100)))


@bp.get("/batches/<batch_id>")
def retrieve(batch_id: str) -> ResponseReturnValue:
    return jsonify(jobs().batches.retrieve(owner(), batch_id))


@bp.post("/batches/<batch_id>/cancel")
def cancel(batch_id: str) -> ResponseReturnValue:
    return jsonify(jobs().batches.cancel(owner(), batch_id))
