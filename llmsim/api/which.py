"""Which surface a request belongs to: the one whose route answered it, else the one whose own prefix its path is
under, else the default (OpenAI's). That surface renders its errors (llmsim/api/errors.py), adds its answers'
headers and says where its API key is."""

from __future__ import annotations

from flask import request

from llmsim.surface import Surface
from llmsim.surfaces import DEFAULT, SURFACES

ARRIVED = "llmsim.arrived"  # the WSGI environ's key for the request's id and arrival time (llmsim/app.py)
CLAIMED = "llmsim.surface"  # the WSGI environ's key for a surface a route claimed the request for (`claim`)
_BY_BLUEPRINT: dict[str, Surface] = {}  # a mounted blueprint's name → its surface
_LISTING: set[str] = set()  # the model listing's blueprints: the surface whose listing header the request carries
_LISTINGS = tuple((surface.listing_header, surface) for surface in SURFACES if surface.listing_header)
_BY_PREFIX = sorted(((prefix, surface) for surface in SURFACES for prefix in surface.exclusive_prefixes),
                    key=lambda pair: len(pair[0]), reverse=True)


def mounted(blueprint: str, surface: Surface) -> None:
    _BY_BLUEPRINT[blueprint] = surface


def claim(owner: Surface) -> None:
    """This request is `owner`'s, whatever route answers it: a route two APIs share (/v1/files, OpenAI's and
    Anthropic's), which tells them apart by the request's headers."""
    request.environ[CLAIMED] = owner


def listing(blueprint: str) -> None:
    """`blueprint` lists models (GET /models): its requests belong to the surface whose header they carry."""
    _LISTING.add(blueprint)


def lister() -> Surface:
    """The surface whose listing header (llmsim/surface.py `listing_header`) this request carries, else the
    default: whose shapes a model listing answers in, whose key it reads, whose envelope its errors take."""
    headers = request.headers
    return next((surface for header, surface in _LISTINGS if header in headers), DEFAULT)


def surface() -> Surface:
    """The surface whose envelope and headers this request's answer takes."""
    found = request.environ.get(CLAIMED) or _BY_BLUEPRINT.get(request.blueprint or "")
    if found is not None:
        return found
    if request.blueprint in _LISTING:
        return lister()
    path = request.path
    for prefix, owner in _BY_PREFIX:
        if path == prefix or path.startswith(prefix + "/"):
            return owner
    return DEFAULT


def request_id() -> str:
    return str(request.environ.get(ARRIVED, ("",))[0])
