"""GET /models and /models/{id}: the models the profiles define."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify
from flask.typing import ResponseReturnValue

from llmsim.api.http import services
from llmsim.errors import APIError
from llmsim.timing.profiles import Profile

bp = Blueprint("models", __name__)


def _model(name: str, profile: Profile) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": profile.created, "owned_by": profile.owned_by}


@bp.get("/models")
def list_models() -> ResponseReturnValue:
    data = [_model(p.id, p) for p in services().catalog.listed()]
    return jsonify({"object": "list", "data": data})


@bp.get("/models/<path:model>")
def get_model(model: str) -> ResponseReturnValue:
    profile = services().catalog.get(model)
    if profile is None or profile.id == "default":
        raise APIError(f"The model '{model}' does not exist or you do not have access to it.", status=404,
                       param="model", code="model_not_found")
    return jsonify(_model(model, profile))
