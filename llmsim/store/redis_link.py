"""One connection of the scripts' pool (llmsim/store/redis_client.py `Scripts`) and its round trip.

A JSON answer on Redis costs one round trip, and under gevent that round trip cost more CPU in gevent's socket
layer than in the kernel: `sendall` asks for the send-buffer size and reads the clock before it sends, a `recv`
made before the reply is there fails with EAGAIN (an exception) and then waits under a `Timeout` made for that
one wait. Here a request is one plain `send` on the non-blocking socket gevent wraps (a request fits the send
buffer), then a wait for the reply under a bare timer of the event loop, then one `recv`. Anything else
(a TLS socket, a plain blocking one outside gevent, a write the buffer cannot take at once) goes through the
socket's own calls.
"""

from __future__ import annotations

import socket
from typing import Any

from gevent import get_hub, getcurrent
from gevent import socket as gsocket

RECV_BYTES = 65536


class Link:
    """A redis-py connection (its handshake applies the URL's TLS, password and database) with a hiredis reader
    of its own. Used by one greenlet at a time; dropped (`close`) after any failure, since replies may be left
    unread on it."""

    __slots__ = ("connection", "reader", "sock", "raw", "hub", "seconds")

    def __init__(self, connection: Any, reader: Any) -> None:
        connection.connect()
        self.connection = connection
        self.reader = reader
        self.sock = connection._sock
        self.raw: socket.socket | None = None  # the non-blocking socket under gevent's, when there is one
        self.hub: Any = None
        self.seconds: float | None = self.sock.timeout
        if type(self.sock) is gsocket.socket:  # gevent's plain socket (its TLS one is a subclass)
            self.raw = self.sock._sock
            self.hub = get_hub()

    def exchange(self, data: bytes, count: int) -> list[Any]:
        """Send `data` (packed commands) and read `count` replies; raises OSError when the socket fails or times
        out (the connection must then be closed)."""
        raw = self.raw
        if raw is None:
            self.sock.sendall(data)
            return self._replies(count, self.sock.recv)
        try:
            sent = raw.send(data)
        except BlockingIOError:
            sent = 0
        if sent < len(data):
            self.sock.sendall(memoryview(data)[sent:])
        return self._replies(count, self._wait_recv)

    def _replies(self, count: int, recv: Any) -> list[Any]:
        reader, replies = self.reader, []
        while len(replies) < count:
            reply = reader.gets()
            if reply is False:
                data = recv(RECV_BYTES)
                if not data:
                    raise ConnectionResetError("Redis closed the connection")
                reader.feed(data)
            else:
                replies.append(reply)
        return replies

    def _wait_recv(self, size: int) -> bytes:
        """The next bytes, once the socket is readable (a reply is never there as soon as its request is sent,
        so this waits first rather than failing a `recv` first)."""
        hub, read_event, raw = self.hub, self.sock._read_event, self.raw
        assert raw is not None
        timer = None
        if self.seconds is not None:  # a fresh one each time: a libev timer restarted keeps only what was left
            timer = hub.loop.timer(self.seconds, ref=False)
            timer.start(getcurrent().throw, socket.timeout, update=True)
        try:
            while True:
                hub.wait(read_event)
                try:
                    return raw.recv(size)
                except BlockingIOError:  # woken with nothing to read after all
                    continue
        finally:
            if timer is not None:
                timer.close()

    def close(self) -> None:
        self.connection.disconnect()
