"""What every surface's stream is made of, whatever its taxonomy: a serialized event, the paced text runs a
transport sends itself, and the one JSON encoding on the wire."""

from __future__ import annotations

from typing import Any

from llmsim import wire

SerializedEvent = tuple[str, str]  # (event type, or an SSE event name or "", and its JSON data)
PACED_TEXT = "llmsim.paced_text"  # the kind that comes with a PacedText: not an event type any client sees
_encode = wire.dumps


class PacedText:
    """Not an event: a run's text-delta events (their JSON), which a transport sends one by one, each when `pace`
    says it is due, recording when each left in `pace.sent`; with no `pace`, all at once. Only SSE asks for them."""

    __slots__ = ("data", "pace")

    def __init__(self, data: list[str], pace: Any) -> None:
        self.data = data
        self.pace = pace


PacedEvent = tuple[str, PacedText]  # (PACED_TEXT, the PacedText)


def dumps(data: Any) -> str:
    """An event's (or any API object's) wire form: compact JSON, UTF-8 as is."""
    return _encode(data)
