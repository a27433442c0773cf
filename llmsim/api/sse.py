"""Server-sent events framing: `event: TYPE` and `data: JSON`, one blank line between events."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from flask import Response

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}


def frames(events: Iterable[tuple[str, str]]) -> Iterator[str]:
    for kind, data in events:
        yield f"event: {kind}\ndata: {data}\n\n"


def sse_response(events: Iterable[tuple[str, str]]) -> Response:
    return Response(frames(events), mimetype="text/event-stream", headers=SSE_HEADERS)
