"""The paced stream's writer: a paced TextRun's frames, each sent when it is due.

A paced stream's text is known before it is sent (the sim backend makes it at once, the event builder
renders a run's text deltas at once), so what is left per token is to send its bytes when they are due.
In a gevent worker the worker's pacing timer (ticks.py) writes them itself, in the hub: per token one heap
entry and one `send`, with no switch into the request's greenlet and no step through the layers between
it and the socket (the WSGI server, Flask's iterators, the SSE framing). Frames due in the same tick go
out in one write. Meanwhile the request's greenlet waits, and does what the hub must not: wait for room
for the rest of a write the socket buffer could not take, and end the request with ClientGone when its
client has left (a failed write, or a hang-up seen, looked for at most once a second).

Elsewhere (Flask's test client, plain threads) the frames come out one by one after the pacer's waits.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, cast

from gevent import getcurrent

from llmsim.runtime import ticks, waits

if TYPE_CHECKING:
    from llmsim.timing.pacing import RunPace

PARKED, GONE = object(), object()  # what a step left: a heap entry to wait for; a client that has left
PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT


def release(frames: Sequence[bytes], pace: RunPace, sock: socket.socket | None, chunked: bool) -> Iterator[bytes]:
    """`frames`, the i-th due `pace.delays[i]` ms after the one before. With the request's client socket `sock`
    in a gevent worker, they are written to it from the hub (`chunked`: in HTTP/1.1 chunks, as the WSGI server
    writes the body) and nothing is yielded; else each is yielded when due."""
    shared = ticks.ticker()
    raw = getattr(sock, "_sock", None)  # gevent's socket wraps the non-blocking one
    if shared is None or raw is None or pace.schedule.clock is not time.monotonic:
        yield from _waited(frames, pace)
        return
    Writer(frames, pace, sock, raw, chunked, shared).run()  # type: ignore[arg-type]


def _waited(frames: Sequence[bytes], pace: RunPace) -> Iterator[bytes]:
    schedule, clock = pace.schedule, time.perf_counter
    for frame, ms in zip(frames, pace.delays, strict=True):
        schedule.wait(ms)
        pace.sent.append(clock())
        yield frame


class Writer:
    """One run's frames written from the hub at their ticks; the request's greenlet waits in `run`."""

    __slots__ = ("frames", "delays", "due", "sent", "sock", "raw", "send", "chunked", "ticker", "next", "target",
                 "entry", "fire", "greenlet", "checked")

    def __init__(self, frames: Sequence[bytes], pace: RunPace, sock: socket.socket, raw: socket.socket,
                 chunked: bool, ticker: ticks.Ticker) -> None:
        self.frames = frames
        self.delays = pace.delays
        self.due = pace.schedule.due
        self.sent = pace.sent
        self.sock = sock
        self.raw = raw
        self.send = raw.send
        self.chunked = chunked
        self.ticker = ticker
        self.next = 0  # the first frame not sent
        self.target: float | None = None  # when frame `next` is due, once drawn
        self.entry: list[Any] | None = None
        self.fire: Any = None
        self.greenlet: Any = None
        self.checked = time.monotonic()

    def run(self) -> None:
        """Wait until every frame is sent; raises ClientGone when the client has left."""
        self.greenlet = getcurrent()
        self.fire = self._fire
        hub = self.ticker.hub
        try:
            status = self._step(False)
            while True:
                if status is PARKED:
                    status = hub.switch()  # `_fire` switches back with what is left to do
                if status is None:
                    return
                if status is GONE:
                    raise waits.ClientGone()
                try:
                    # the rest of a write (bytes, the one status left): wait here for room, within the socket's timeout
                    self.sock.sendall(cast(bytes, status))
                except OSError:
                    raise waits.ClientGone() from None
                status = self._step(False)
        finally:
            self.fire = None  # no cycle left through the bound method
            if self.entry is not None:
                self.entry[2] = None  # killed while parked: its tick passes it by

    def _fire(self) -> None:
        """In the hub, at the tick of frame `next`."""
        status = self._step(True)
        if status is not PARKED:
            self.entry = None
            self.greenlet.switch(status)

    def _step(self, woken: bool) -> object:
        """Send every frame due now (frame `next` is when `woken` at its tick) in one write. What is left:
        PARKED (until the next frame's tick), None (all sent), GONE, or the bytes the socket did not take."""
        frames, delays, due = self.frames, self.delays, self.due
        total = len(frames)
        now = time.monotonic()
        first = end = self.next
        target = self.target
        if woken:  # the tick rounds: due by its middle is due
            target = None
            end += 1
        while end < total:
            if target is None:
                target = due(delays[end], now)
            if target > now:
                break
            target = None
            end += 1
        self.target = target
        if end > first:
            data = frames[first] if end - first == 1 else b"".join(frames[first:end])
            if self.chunked:
                data = b"%X\r\n%s\r\n" % (len(data), data)
            try:
                sent = self.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                return GONE
            if end - first == 1:
                self.sent.append(time.perf_counter())
            else:
                self.sent.extend(repeat(time.perf_counter(), end - first))
            self.next = end
            if sent < len(data):
                return data[sent:]
            if end == total:
                return None
        if now - self.checked >= waits.CHECK_EVERY:
            self.checked = now
            if _hung_up(self.raw):
                return GONE
        self.entry = self.ticker.call_at(target, self.fire)  # type: ignore[arg-type]
        return PARKED


def _hung_up(raw: socket.socket) -> bool:
    """Whether the peer has closed its end, without waiting (the hub must not). Bytes of a next request are not
    a hang-up."""
    try:
        return not raw.recv(1, PEEK)
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True
