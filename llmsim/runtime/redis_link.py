"""One connection of the scripts' pool (llmsim/store/redis_client.py `Scripts`): a redis-py connection's socket
with a hiredis reader of our own.

Under gevent, on a plain socket, a worker's calls share one link, pipelined (llmsim/runtime/redis_pipe.py), which
sends and reads on the non-blocking socket gevent wraps (`raw`), waiting under the event loop's own watchers and
timers. Anything else (a TLS socket, a plain blocking one outside gevent) makes its round trips here, with the
socket's own calls.
"""

from __future__ import annotations

import socket
from typing import Any

from gevent import socket as gsocket

RECV_BYTES = 65536


class Link:
    """A redis-py connection (its handshake applies the URL's TLS, password and database) with a hiredis reader
    of its own. Used by one greenlet at a time; dropped (`close`) after any failure, since replies may be left
    unread on it."""

    __slots__ = ("connection", "reader", "sock", "raw")

    def __init__(self, connection: Any, reader: Any) -> None:
        connection.connect()
        self.connection = connection
        self.reader = reader
        self.sock = connection._sock
        self.raw: socket.socket | None = None  # the non-blocking socket under gevent's, when there is one
        if type(self.sock) is gsocket.socket:  # gevent's plain socket (its TLS one is a subclass)
            self.raw = self.sock._sock  # type: ignore[attr-defined]  # gevent's own, not in its stubs

    def exchange(self, data: bytes, count: int) -> list[Any]:
        """Send `data` (packed commands) and read `count` replies; raises OSError when the socket fails or times
        out (the connection must then be closed)."""
        self.sock.sendall(data)
        reader = self.reader
        replies: list[Any] = []
        while len(replies) < count:
            reply = reader.gets()
            if reply is False:
                data = self.sock.recv(RECV_BYTES)
                if not data:
                    raise ConnectionResetError("Redis closed the connection")
                reader.feed(data)
            else:
                replies.append(reply)
        return replies

    def close(self) -> None:
        self.connection.disconnect()
