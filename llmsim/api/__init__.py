"""HTTP transport: every surface's routes under its prefixes (llmsim/api/surfaces.py), and the OpenAI API's other
blueprints (stored responses, WebSocket mode, models, conversations) at /openai/v1, /v1, /v3 (OpenVINO Model
Server's path) and bare."""

from __future__ import annotations

from flask import Flask

from llmsim.api import conversations, models, responses, surfaces, websocket
from llmsim.api.http import require_api_key
from llmsim.surface import OPENAI_PREFIXES

PREFIXES = OPENAI_PREFIXES
BLUEPRINTS = (responses.bp, websocket.bp, models.bp, conversations.bp)


def mount(app: Flask) -> None:
    app.before_request(require_api_key)
    surfaces.mount(app)
    for blueprint in BLUEPRINTS:
        for prefix in PREFIXES:
            app.register_blueprint(blueprint, url_prefix=prefix or None,
                                   name=f"{blueprint.name}{prefix.replace('/', '_')}")
