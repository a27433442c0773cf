"""Server-sent events framing: `event: TYPE` and `data: JSON`, one blank line between events."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from flask import Response

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}


def frames(events: Iterable[tuple[str, str]], trailer: Callable[[], str | None] | None = None) -> Iterator[str]:
    """`trailer`: a comment after the last event (clients ignore `:` lines), for what is known only at the end."""
    for kind, data in events:
        yield f"event: {kind}\ndata: {data}\n\n"
    comment = trailer() if trailer else None
    if comment:
        yield f": {comment}\n\n"


def sse_response(events: Iterable[tuple[str, str]], trailer: Callable[[], str | None] | None = None) -> Response:
    return Response(frames(events, trailer), mimetype="text/event-stream", headers=SSE_HEADERS)
