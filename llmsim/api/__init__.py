"""HTTP transport: blueprints mounted at /openai/v1, /v1 and bare, so any base_url style works."""

from __future__ import annotations

from flask import Flask

from llmsim.api import models, responses
from llmsim.api.http import require_api_key

PREFIXES = ("/openai/v1", "/v1", "")
BLUEPRINTS = (responses.bp, models.bp)


def mount(app: Flask) -> None:
    app.before_request(require_api_key)
    for blueprint in BLUEPRINTS:
        for prefix in PREFIXES:
            app.register_blueprint(blueprint, url_prefix=prefix or None,
                                   name=f"{blueprint.name}{prefix.replace('/', '_')}")
