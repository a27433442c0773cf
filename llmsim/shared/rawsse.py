"""A relayed stream's raw SSE bytes, cut into events only where someone needs them one by one.

The proxy forwards an upstream's bytes as they come; splitting them into events costs Python work per event,
so it is done only for a stream fault or a WebSocket client (which take events one at a time) and for a
stored response that is replayed (on demand, from the bytes kept).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from llmsim.shared.events import SerializedEvent  # here: (SSE event name or "", data)


def events(chunks: Iterable[bytes]) -> Iterator[SerializedEvent]:
    """Each complete event as its bytes arrive; comments and events without data are dropped, as a client would."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        if b"\r" in pending:  # CRLF or CR line ends: one form for the cuts below; a CR that ends the bytes
            held = b"\r" if pending.endswith(b"\r") else b""  # so far waits, its LF may come next
            pending = pending[:len(pending) - len(held)].replace(b"\r\n", b"\n").replace(b"\r", b"\n") + held
        *frames, pending = pending.split(b"\n\n")
        for frame in frames:
            event = parse(frame)
            if event is not None:
                yield event
    if pending.strip():
        event = parse(pending)
        if event is not None:
            yield event


def parse(frame: bytes) -> SerializedEvent | None:
    """One frame's event name ("" for none or `message`) and data lines; None when it has no data."""
    kind, data = "", []
    for line in frame.decode("utf-8", "replace").split("\n"):
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = "" if value == "message" else value
    return (kind, "\n".join(data)) if data else None


def frame_at(buffer: bytes | bytearray, position: int) -> bytes | None:
    """The whole frame around `position`, or None while its end has not arrived."""
    start = buffer.rfind(b"\n\n", 0, position)
    end = buffer.find(b"\n\n", position)
    if end < 0:
        return None
    return bytes(buffer[0 if start < 0 else start + 2:end])


class RawEvents:
    """A relayed response's stream kept as its bytes (a store's `replay`): cut into events when replayed."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def events(self, final: dict[str, Any]) -> list[SerializedEvent]:
        return list(events([self.raw]))

    def dump(self) -> None:
        """No compact form: a store other processes read keeps the events."""
        return None
