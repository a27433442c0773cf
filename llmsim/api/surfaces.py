"""Every registered surface's routes (llmsim/surfaces.py), mounted under its prefixes: each route's view reads the
request into an ApiRequest (its body, the route's variables and the query in `params`), runs it (a Generation on
the one template, llmsim/orchestrate.py, or a plain operation) and writes the Answer."""

from __future__ import annotations

import re
from collections.abc import Callable

from flask import Blueprint, Flask
from flask.typing import ResponseReturnValue

from llmsim import orchestrate
from llmsim.api import which
from llmsim.api.answers import respond
from llmsim.api.http import asked, json_body, query, services
from llmsim.surface import Route, Surface
from llmsim.surfaces import SURFACES


def mount(app: Flask) -> None:
    for surface in SURFACES:
        for prefix in surface.prefixes:  # a blueprint per prefix: a route may be mounted under some of them only
            blueprint = Blueprint(f"surface_{surface.name.replace('.', '_')}{prefix.replace('/', '_')}", __name__)
            for route in surface.routes():
                if route.prefixes is None or prefix in route.prefixes:
                    blueprint.add_url_rule(route.rule, endpoint=re.sub(r"\W", "_", f"{route.method}{route.rule}"),
                                           view_func=_view(surface, route), methods=[route.method])
            app.register_blueprint(blueprint, url_prefix=prefix or None)
            which.mounted(blueprint.name, surface)


def _view(surface: Surface, route: Route) -> Callable[..., ResponseReturnValue]:
    reads_body = route.method in ("POST", "PUT", "PATCH")
    named = surface.named_events

    def view(**params: str) -> ResponseReturnValue:
        body = json_body() if reads_body else None
        if args := query():
            params = {**args, **params}
        return respond(orchestrate.run(services().pipeline, surface, route, asked(body, params)), named_events=named)

    return view
