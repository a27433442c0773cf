"""Following a relayed stream (proxy, replay) without rebuilding it: what an injected fault needs to end it
the way the event builder would, what the store keeps, and the usage that settles rate limits.

Only lifecycle events (and chunks that carry usage) are parsed; every other event passes as text. A stream
forwarded as raw bytes is searched for its final event (or usage) instead of cut into events.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from llmsim.generation import Finish, Usage
from llmsim.shared.rawsse import events as split_events
from llmsim.shared.rawsse import frame_at, parse

if TYPE_CHECKING:
    from llmsim.surface import Surface

LIFECYCLE = frozenset({"response.created", "response.queued", "response.in_progress", "response.completed",
                       "response.incomplete", "response.failed"})
FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
TERMINAL = FINAL | {"error"}
FINAL_MARKS = tuple(kind.encode() for kind in sorted(FINAL))  # in a final event's bytes (and maybe in text)
LONGEST_FINAL = max(len(mark) for mark in FINAL_MARKS)


class RelayedStream:
    """Stands in for a surface's builder when a StreamFault ends a relayed stream (`fail`, `error`, `dumps`: the
    surface's `relayed_error`, llmsim/surface.py)."""

    terminal = TERMINAL

    def __init__(self, surface: Surface) -> None:
        self.surface = surface
        self.chat = surface.final == "usage"  # no final response: settled from its usage
        self.usage_key = surface.usage_key
        self.usage_text = f'"{surface.usage_key}":{{'  # in an event that carries usage
        self.usage_mark = self.usage_text.encode()
        self.longest_mark = max(LONGEST_FINAL, len(self.usage_mark))
        self.response: dict[str, Any] | None = None  # the latest Response snapshot
        self.usage: dict[str, Any] | None = None
        self.last = ""  # the last event's data, for its sequence_number
        self.scanned = 0  # raw bytes: where the next look for a mark starts

    def observe(self, kind: str, data: str) -> bool:
        """Takes note of one event; True when it carried the final response."""
        self.last = data
        if kind in LIFECYCLE or (self.chat and self.usage_text in data):
            event = json.loads(data)
            if self.chat:
                self.usage = event.get(self.usage_key)
                return False
            self.response = event.get("response")
            self.usage = (self.response or {}).get("usage") or self.usage
            return kind in FINAL
        return False

    def observe_raw(self, buffer: bytes | bytearray) -> bool:
        """Looks for the final event (Chat Completions: the usage) in the stream's bytes so far, from where the
        last look ended; True when the final response was seen. A mark inside text is parsed and passed over."""
        start = self.scanned
        self.scanned = max(start, len(buffer) - self.longest_mark)  # a mark cut by a read is found next time
        for mark in (self.usage_mark,) if self.chat else FINAL_MARKS:
            position = buffer.find(mark, start)
            while position >= 0:
                frame = frame_at(buffer, position)
                if frame is None:  # its end has not arrived: look again from here
                    self.scanned = min(self.scanned, position)
                    break
                event = parse(frame)
                if event is not None and self.observe(*event):
                    return True
                position = buffer.find(mark, position + len(mark))
        return False

    def observe_all(self, buffer: bytes | bytearray) -> bool:
        """Every event of a stream whose marks were not found (an upstream with other line ends, say)."""
        return any([self.observe(kind, data) for kind, data in split_events([bytes(buffer)])])

    def observe_body(self, body: Any) -> None:
        """A JSON answer: a Response or a chat completion."""
        if isinstance(body, dict):
            self.usage = body.get(self.usage_key)
            if body.get("object") == "response":
                self.response = body

    def finish(self) -> Finish | None:
        """The usage as a Finish, for settling rate limits; None when the answer gave none."""
        if not isinstance(self.usage, dict):
            return None
        return Finish("stop", Usage(*self.surface.relayed_tokens(self.usage)))

    @property
    def _sequence(self) -> int:
        try:
            return int(json.loads(self.last).get("sequence_number", -1)) + 1
        except (ValueError, AttributeError):
            return 0

    def fail(self, code: str, message: str) -> Iterator[dict[str, Any]]:
        if self.chat:
            yield self.error(code, message)
            return
        response = copy.deepcopy(self.response or {})
        response.update(status="failed", error={"code": code, "message": message})
        yield {"type": "response.failed", "sequence_number": self._sequence, "response": response}

    def error(self, code: str, message: str, param: str | None = None) -> dict[str, Any]:
        return self.surface.relayed_error(code, message, param, self._sequence)

    def dumps(self, event: dict[str, Any]) -> str:
        return self.surface.relayed_dumps(event)
