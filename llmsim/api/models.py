"""GET /models and /models/{id}: the models the profiles define, in the shapes of the surface whose header the
request carries (an anthropic SDK's `anthropic-version`: llmsim/surface.py `listing_header`), else OpenAI's."""

from __future__ import annotations

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue

from llmsim.api.http import services
from llmsim.errors import APIError
from llmsim.surface import Surface
from llmsim.surfaces import DEFAULT, SURFACES

bp = Blueprint("models", __name__)
LISTINGS = tuple((surface.listing_header, surface) for surface in SURFACES if surface.listing_header)


def _lister() -> Surface:
    headers = request.headers
    return next((surface for header, surface in LISTINGS if header in headers), DEFAULT)


@bp.get("/models")
def list_models() -> ResponseReturnValue:
    return jsonify(_lister().list_models(services().catalog, request.args))


@bp.get("/models/<path:model>")
def get_model(model: str) -> ResponseReturnValue:
    profile = services().catalog.get(model)
    if profile is None or profile.id == "default":
        raise APIError(f"The model '{model}' does not exist or you do not have access to it.", status=404,
                       param="model", code="model_not_found")
    return jsonify(_lister().model_info(model, profile))
