"""Which surface a request belongs to: the one whose route answered it, else the one whose own prefix its path is
under, else the default (OpenAI's). That surface renders its errors (llmsim/api/errors.py), adds its answers'
headers and says where its API key is."""

from __future__ import annotations

from flask import request

from llmsim.surface import Surface
from llmsim.surfaces import DEFAULT, SURFACES

ARRIVED = "llmsim.arrived"  # the WSGI environ's key for the request's id and arrival time (llmsim/app.py)
_BY_BLUEPRINT: dict[str, Surface] = {}  # a mounted blueprint's name → its surface
_BY_PREFIX = sorted(((prefix, surface) for surface in SURFACES for prefix in surface.exclusive_prefixes),
                    key=lambda pair: len(pair[0]), reverse=True)


def mounted(blueprint: str, surface: Surface) -> None:
    _BY_BLUEPRINT[blueprint] = surface


def surface() -> Surface:
    """The surface whose envelope and headers this request's answer takes."""
    found = _BY_BLUEPRINT.get(request.blueprint or "")
    if found is not None:
        return found
    path = request.path
    for prefix, owner in _BY_PREFIX:
        if path == prefix or path.startswith(prefix + "/"):
            return owner
    return DEFAULT


def request_id() -> str:
    return str(request.environ.get(ARRIVED, ("",))[0])
