"""A client connection whose small writes cost one system call.

gevent's `sendall` asks the kernel for the socket's send-buffer size (a `getsockopt`) and reads the clock
before its first `send`, on every call: for a paced stream, whose every event is a write of a few hundred
bytes, that is a second system call per event. Here a write first tries one plain `send`, which takes
the whole of a small write whenever the buffer has room, and only what is left goes through gevent's
`sendall` (waiting for room, honouring the socket's timeout).
"""

from __future__ import annotations

from typing import Any

from gevent import socket as gsocket


class Connection(gsocket.socket):  # type: ignore[misc]
    """gevent's socket, with `sendall` trying one non-blocking `send` first."""

    __slots__ = ()

    def sendall(self, data: Any, flags: int = 0) -> None:
        if not isinstance(data, bytes):  # memoryviews of wider items and the like: gevent's own way
            super().sendall(data, flags)
            return
        try:
            sent = self._sock.send(data, flags)  # the underlying socket is non-blocking: never waits here
        except BlockingIOError:
            sent = 0
        if sent < len(data):
            super().sendall(memoryview(data)[sent:], flags)


def adopt(client: gsocket.socket) -> gsocket.socket:
    """`client`, now a Connection (same object, same descriptor and state: only its class changes)."""
    if type(client) is gsocket.socket:
        client.__class__ = Connection
    return client
