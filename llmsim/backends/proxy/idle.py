"""Cuts upstream streams that fall silent, without a timer per read.

A read timeout on the socket arms and disarms a timer for every chunk the upstream sends (under gevent, a
Timeout object per wait): at 100 paced streams, about a sixth of a forwarder's CPU. Instead each stream notes
when its last bytes came, and one sweep every few seconds shuts the connections silent for longer than the
limit; their pending read then fails as a timed-out one would.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Seen:
    """One stream's connection and when its last bytes came (`time.monotonic()`)."""

    __slots__ = ("sock", "last")

    def __init__(self, sock: socket.socket | None) -> None:
        self.sock = sock
        self.last = time.monotonic()


class IdleCutter:
    def __init__(self, limit: float, every: float = 5.0) -> None:
        self.limit, self.every = limit, every
        self.streams: dict[int, Seen] = {}
        self._sweeper: threading.Thread | None = None

    @contextmanager
    def watching(self, sock: socket.socket | None) -> Iterator[Seen]:
        """While a stream is read: its reader sets `last` as bytes come; silent past the limit, it is shut.
        None: no connection to watch (its answer was read whole already)."""
        seen = Seen(sock)
        if sock is None:
            yield seen
            return
        self.streams[id(seen)] = seen
        if self._sweeper is None:  # a green thread in a gevent worker (time.sleep is looked up when called)
            self._sweeper = threading.Thread(target=self._sweep, name="llmsim-idle-upstreams", daemon=True)
            self._sweeper.start()
        try:
            yield seen
        finally:
            self.streams.pop(id(seen), None)

    def _sweep(self) -> None:
        while True:
            time.sleep(self.every)
            self.cut(time.monotonic())

    def cut(self, now: float) -> None:
        for seen in list(self.streams.values()):
            if now - seen.last > self.limit:
                self.streams.pop(id(seen), None)
                try:
                    seen.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]  # watched ones have one
                except OSError:
                    pass
