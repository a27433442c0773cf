"""A client connection whose small writes cost one system call, and whose writes made together leave together.

gevent's `sendall` asks the kernel for the socket's send-buffer size (a `getsockopt`) and reads the clock
before its first `send`, on every call: for a paced stream, whose every event is a write of a few hundred
bytes, that is a second system call per event. Here a write first tries one plain `send`, which takes
the whole of a small write whenever the buffer has room, and only what is left goes through gevent's
`sendall` (waiting for room, honouring the socket's timeout).

gunicorn writes a response's head, its body (each chunk the app yields) and, for a chunked body, its last
empty chunk each on its own: three `send`s for a stream nothing paces, two for a JSON answer, where one
would do. A connection may hold its writes back (`hold`): the head until the write that follows it
(which gunicorn makes at once), or every write until `flush` (`cork`: for an answer whose whole body is
ready, or the events that end a paced stream, which nothing waits between). The worker flushes what is held
when a request ends, and a request's waits (llmsim/timing/waits.py) before they wait.
"""

from __future__ import annotations

from typing import Any

from gevent import socket as gsocket

CORK_LIMIT = 64 * 1024  # held bytes past which a corked connection sends them anyway


class _Held:
    """Writes held back: `corked`, all of them until a flush; else only the first, until the next."""

    __slots__ = ("parts", "size", "corked")

    def __init__(self, corked: bool) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.corked = corked


_held: dict[gsocket.socket, _Held] = {}  # the connections holding writes back, while their request runs


class Connection(gsocket.socket):  # type: ignore[misc]
    """gevent's socket, with `sendall` trying one non-blocking `send` first, and holding writes back if asked."""

    __slots__ = ()

    def sendall(self, data: Any, flags: int = 0) -> None:
        held = _held.get(self)
        if held is not None:
            data = bytes(data)
            if held.corked and held.size + len(data) < CORK_LIMIT or not held.parts:
                held.parts.append(data)
                held.size += len(data)
                return
            held.parts.append(data)
            data = b"".join(held.parts)
            if held.corked:
                held.parts, held.size = [], 0
            else:
                del _held[self]
        elif not isinstance(data, bytes):  # memoryviews of wider items and the like: gevent's own way
            super().sendall(data, flags)
            return
        try:
            sent = self._sock.send(data, flags)  # type: ignore[attr-defined]  # gevent's OS socket, non-blocking: no wait
        except BlockingIOError:
            sent = 0
        if sent < len(data):
            super().sendall(memoryview(data)[sent:], flags)

    def release_held(self) -> None:
        """Send what is held, before a wait (llmsim/timing/waits.py, which knows the connection, not this module)."""
        flush(self)

    def send(self, data: Any, *args: Any, **kwargs: Any) -> int:
        held = _held.get(self)
        if held is not None and held.parts:  # a write not through `sendall` (gunicorn's `100 Continue`): after them
            flush(self)
        return super().send(data, *args, **kwargs)  # type: ignore[no-any-return]

    def sendfile(self, file: Any, *args: Any, **kwargs: Any) -> int:
        held = _held.get(self)
        if held is not None and held.parts:  # gunicorn sends a file's head with `sendall`, the file from the kernel
            flush(self)
        return super().sendfile(file, *args, **kwargs)  # type: ignore[no-any-return]


def adopt(client: gsocket.socket) -> gsocket.socket:
    """`client`, now a Connection (same object, same descriptor and state: only its class changes)."""
    if type(client) is gsocket.socket:
        client.__class__ = Connection
    return client


def hold(client: Any) -> None:
    """`client`'s next write waits for the one after it (or a flush): a response's head goes with its body."""
    if type(client) is Connection:
        _held[client] = _Held(corked=False)


def cork(client: Any) -> None:
    """`client`'s writes wait for `flush` (or until CORK_LIMIT bytes are held): only for a body nothing waits in."""
    if type(client) is Connection:
        held = _held.get(client)
        if held is None:
            _held[client] = _Held(corked=True)
        else:
            held.corked = True


def flush(client: Any) -> None:
    """Send what `client` holds, in one write, and hold no more."""
    held = _held.pop(client, None)
    if held is not None and held.parts:
        client.sendall(b"".join(held.parts))
