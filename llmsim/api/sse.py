"""Server-sent events framing: `event: TYPE` and `data: JSON`, one blank line between events.

Each chunk the body yields is one socket write. Events that are ready together go out together:
a stream nothing paces is written in a few large chunks instead of one write per event.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, repeat
from typing import Any, cast

from flask import Response, request

from llmsim.responses.events import PACED_TEXT, TEXT_DELTA
from llmsim.runtime import sockets, waits
from llmsim.runtime.release import release
from llmsim.runtime.shutdown import ShuttingDown

Client = tuple[socket.socket | None, bool]  # the request's connection, and whether its body goes in HTTP chunks

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}
CHUNK_CHARS = 64 * 1024  # a coalesced write's size, at most (about): what one socket buffer takes


FRAME = "event: {}\ndata: {}\n\n"
RUN_HEAD, RUN_END = FRAME.format(TEXT_DELTA, "{}").split("{}")  # a run's text delta's frame, around its data


def frames(events: Iterable[tuple[str, Any]], trailer: Callable[[], str | None] | None = None,
           together: bool = False, client: Client | None = None) -> Iterator[str | bytes]:
    """`trailer`: a comment after the last event (clients ignore `:` lines), for what is known only at the end.
    `together`: nothing waits between the events, so they are sent in as few writes as fit. `client`: where a
    paced run's text deltas are written (llmsim/runtime/release.py)."""
    if together:
        return batched(chain(map(_together, events), _comment(trailer)))
    return _frames(events, trailer, client)


def _together(event: tuple[str, Any]) -> str:
    """An event's frame; a run's text deltas' frames (a PacedText) all in one."""
    kind, data = event
    return "".join(chain.from_iterable(_run(data.data))) if kind == PACED_TEXT else FRAME.format(kind, data)


def _run(data: list[str]) -> Iterator[tuple[str, str, str]]:
    """The frames of a run's text deltas (their JSON `data`), in pieces to join: no format call each."""
    return zip(repeat(RUN_HEAD), data, repeat(RUN_END))


def _frames(events: Iterable[tuple[str, Any]], trailer: Callable[[], str | None] | None,
            client: Client | None) -> Iterator[str | bytes]:
    for kind, data in events:
        if kind == PACED_TEXT and data.pace is None:  # a run's text deltas, not paced: sent at once
            yield _together((kind, data))
            continue
        if kind == PACED_TEXT:  # a paced run's text deltas: sent each when due
            paced = list(map(str.encode, map("".join, _run(data.data))))
            sock, chunked = client or (None, False)
            sockets.flush(sock)  # what the socket holds goes first: the run is written to it directly
            try:
                yield from release(paced, data.pace, sock, chunked)
            except ShuttingDown:  # cut mid-run: the events go on, and the next wait ends the response failed
                pass
            sockets.cork(sock)  # the events that end the run's item and the response: one write, at the end or the
            continue  # next wait (llmsim/runtime/waits.py sends what is held before it waits)
        yield FRAME.format(kind, data)
    yield from _comment(trailer)


def _comment(trailer: Callable[[], str | None] | None) -> Iterator[str]:
    comment = trailer() if trailer else None
    if comment:
        yield f": {comment}\n\n"


def batched(texts: Iterable[str]) -> Iterator[str]:
    """`texts` joined into writes of about CHUNK_CHARS: for a stream nothing waits in."""
    pending: list[str] = []
    size = 0
    for text in texts:
        pending.append(text)
        size += len(text)
        if size >= CHUNK_CHARS:
            yield "".join(pending)
            pending.clear()
            size = 0
    if pending:
        yield "".join(pending)


def sse_response(events: Iterable[tuple[str, Any]], trailer: Callable[[], str | None] | None = None,
                 together: bool = False) -> Response:
    """The events as an SSE body; a paced run's text deltas go straight to this request's client connection."""
    client = (waits.watched(), request.environ.get("SERVER_PROTOCOL") != "HTTP/1.0")  # 1.1: gunicorn chunks the body
    if together:
        cork()
    body = cast("Iterator[str]", frames(events, trailer, together, client))  # werkzeug takes str and bytes alike
    return Response(body, mimetype="text/event-stream", headers=SSE_HEADERS)


def cork() -> None:
    """This response's whole body is ready at once (nothing waits in it): its head, body and end leave in one
    write when the request ends (llmsim/runtime/sockets.py), not one each."""
    sockets.cork(request.environ.get("gunicorn.socket"))
