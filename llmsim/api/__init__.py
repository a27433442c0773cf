"""HTTP transport: blueprints mounted at /openai/v1, /v1, /v3 (OpenVINO Model Server's path) and bare."""

from __future__ import annotations

from flask import Flask

from llmsim.api import chat, conversations, embeddings, models, responses, websocket
from llmsim.api.http import require_api_key

PREFIXES = ("/openai/v1", "/v1", "/v3", "")
BLUEPRINTS = (responses.bp, websocket.bp, models.bp, conversations.bp, chat.bp, embeddings.bp)


def mount(app: Flask) -> None:
    app.before_request(require_api_key)
    for blueprint in BLUEPRINTS:
        for prefix in PREFIXES:
            app.register_blueprint(blueprint, url_prefix=prefix or None,
                                   name=f"{blueprint.name}{prefix.replace('/', '_')}")
