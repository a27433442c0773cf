"""The upgraded socket as simple-websocket sees it: every frame is written whole, or the connection is closed.

simple-websocket 1.1.0 writes a frame with one `sock.send()` and drops what a partial write left (its issue #45;
the fix on its main branch is unreleased, and makes concurrent sends interleave without a lock). A client that
reads slowly fills the kernel's buffer, a long event's frame is cut, and the stream is corrupt from there on.

Here `send` writes all its bytes (gevent's `sendall`: the greenlet waits while the socket is not writable), under
one lock per connection, so a ping or pong from simple-websocket's reader greenlet never lands inside a frame.
Nothing is queued in user space: the sender waits, so what a connection holds is the one frame being written.
A frame not taken within `write_timeout` seconds (a client that stopped reading) closes the connection: a frame
cut half-way can never be finished, so every later write fails at once.
"""

from __future__ import annotations

import socket
from typing import Any

import gevent
from gevent.lock import RLock


class WriteTimeout(ConnectionError):
    """A frame waited longer than the write timeout for the client to read it; the connection is closed."""


class WholeFrames:
    """A socket whose `send` is `sendall` under a lock and a deadline; everything else is the socket's own."""

    def __init__(self, sock: socket.socket, write_timeout: float) -> None:
        self._sock = sock
        self._lock = RLock()
        self.write_timeout = write_timeout
        self.broken = False

    def send(self, data: Any, flags: int = 0) -> int:
        with self._lock:
            if self.broken:
                raise BrokenPipeError("the connection was closed after a write that did not finish")
            try:
                with gevent.Timeout(self.write_timeout, WriteTimeout(f"a frame waited {self.write_timeout:g} s "
                                                                     "for the client to read it")):
                    self._sock.sendall(data, flags)
            except BaseException:  # timed out, reset, or killed half-way: the frame may be cut, so no more frames
                self.broken = True
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)  # the reader greenlet sees the end and stops too
                except OSError:
                    pass
                raise
        return len(data)

    def __getattr__(self, name: str) -> Any:  # recv, fileno, close, shutdown: the socket's
        return getattr(self._sock, name)
