"""The Responses API as a surface (llmsim/surface.py): POST /responses on the one template; its stored objects'
routes (retrieve, cancel, input items, ...) and WebSocket mode are its transport's, llmsim/api/responses.py and
llmsim/api/websocket.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmsim.responses import schema
from llmsim.responses.create import Create
from llmsim.surface import Route, Surface


class Responses(Surface):
    name = "responses"
    path = "responses"
    final = "response"  # its stream ends with the final Response, which carries the usage
    token_marks = (b".delta\ndata:", None)  # the end of a `*.delta` event's name line
    stores_relayed = True
    json_from_stream = True  # a recorded stream's final Response answers a JSON request too
    match = ("model", "instructions", "input", "tools", "text", "previous_response_id", "conversation")
    refused = schema.REFUSED

    def routes(self) -> Sequence[Route]:
        return (Route("POST", "/responses", Create(self)),)

    def relayed_error(self, code: str, message: str, param: str | None, sequence: int) -> dict[str, Any]:
        return {"type": "error", "sequence_number": sequence, "code": code, "message": message, "param": param}


RESPONSES = Responses()
