"""POST /embeddings: the HTTP side of llmsim/embeddings/create.py."""

from __future__ import annotations

from flask import Blueprint
from flask.typing import ResponseReturnValue

from llmsim.api.answers import respond
from llmsim.api.http import asked, json_body, services
from llmsim.embeddings import create as embeddings

bp = Blueprint("embeddings", __name__)


@bp.post("/embeddings")
def create() -> ResponseReturnValue:
    return respond(embeddings.create(services().pipeline, asked(json_body())))
