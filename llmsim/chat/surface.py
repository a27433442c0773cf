"""Chat Completions as a surface (llmsim/surface.py): POST /chat/completions on the one template."""

from __future__ import annotations

from collections.abc import Sequence

from llmsim.chat.create import Create
from llmsim.chat.schema import REFUSED
from llmsim.surface import Route, Surface


class ChatCompletions(Surface):
    name = "chat.completions"
    path = "chat/completions"
    named_events = False  # its SSE frames are bare `data:` lines
    match = ("model", "messages", "tools", "response_format")
    refused = REFUSED

    def routes(self) -> Sequence[Route]:
        return (Route("POST", "/chat/completions", Create(self)),)


CHAT = ChatCompletions()
