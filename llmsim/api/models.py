"""GET /models and /models/{id}: the models the profiles define."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api import gemini as gemini_api
from llmsim.api.http import int_arg, services
from llmsim.errors import APIError
from llmsim.messages import models as anthropic_models
from llmsim.timing.profiles import Profile

bp = Blueprint("models", __name__)
ANTHROPIC = "anthropic-version"  # the header every anthropic SDK sends: answer in Anthropic's shapes
GOOGLE = "x-goog-api-key"  # google-genai's key header (or `?key=`): answer in Gemini's shapes


def _google() -> bool:
    return GOOGLE in request.headers or "key" in request.args


def _model(name: str, profile: Profile) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": profile.created, "owned_by": profile.owned_by}


@bp.get("/models")
def list_models() -> ResponseReturnValue:
    if _google():  # google-genai lists models at /v1/models (its default version)
        return gemini_api.list_models()
    if ANTHROPIC in request.headers:  # the anthropic SDKs' models.list
        return jsonify(anthropic_models.page(services().catalog.listed(), int_arg("limit", 20, 1, 1000),
                                             request.args.get("after_id"), request.args.get("before_id")))
    data = [_model(p.id, p) for p in services().catalog.listed()]
    return jsonify({"object": "list", "data": data})


@bp.get("/models/<path:model>")
def get_model(model: str) -> ResponseReturnValue:
    if _google():
        return gemini_api.get_model(model)
    profile = services().catalog.get(model)
    if profile is None or profile.id == "default":
        raise APIError(f"The model '{model}' does not exist or you do not have access to it.", status=404,
                       param="model", code="model_not_found")
    if ANTHROPIC in request.headers:
        return jsonify(anthropic_models.model_info(model, profile))
    return jsonify(_model(model, profile))
