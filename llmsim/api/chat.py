"""POST /chat/completions: the HTTP side of llmsim/chat/create.py."""

from __future__ import annotations

from flask import Blueprint
from flask.typing import ResponseReturnValue

from llmsim.api.answers import respond
from llmsim.api.http import asked, json_body, services
from llmsim.chat import create as chat

bp = Blueprint("chat", __name__)


@bp.post("/chat/completions")
def create() -> ResponseReturnValue:
    return respond(chat.create(services().pipeline, asked(json_body())), named_events=False)
