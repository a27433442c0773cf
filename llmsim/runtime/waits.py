"""Every wait a request makes: cooperative under gevent, and cut short when its client has hung up.

The transport names the request's client connection once (`watch`); pacing and fault waits then keep an
eye on it, so a client that leaves frees its request instead of leaving it parked for the whole wait.
Short waits (a token's gap) only look at the connection about once a second, so pacing stays cheap.

Short waits park on the worker's shared pacing timer (ticks.py). `time.sleep` and `select.select` are
looked up at call time, never bound at import: gevent patches them
in the worker after this module may have been loaded, and a bound original would block every greenlet.
"""

from __future__ import annotations

import errno
import select
import socket
import time
from contextvars import ContextVar
from dataclasses import dataclass

from llmsim.runtime import shutdown, ticks

CHECK_EVERY = 1.0  # seconds between looks at the connection while short waits follow one another


class ClientGone(ConnectionResetError):
    """The client hung up while its request waited; the server drops the connection quietly."""

    def __init__(self, message: str = "client disconnected") -> None:
        super().__init__(errno.ECONNRESET, message)


@dataclass
class _Watched:
    sock: socket.socket
    checked: float


_client: ContextVar[_Watched | None] = ContextVar("llmsim_client", default=None)


def watch(sock: socket.socket | None) -> None:
    """Waits in this greenlet (this request, and its streamed body) watch `sock`; None: plain waits."""
    _client.set(None if sock is None else _Watched(sock, time.monotonic()))


def watched() -> socket.socket | None:
    """The connection this greenlet's waits watch (see `watch`)."""
    found = _client.get()
    return None if found is None else found.sock


def _hung_up(sock: socket.socket, timeout: float) -> bool:
    """Whether the peer closed its end within `timeout` seconds. Bytes of a next request are not a hang-up."""
    try:
        readable, _, _ = select.select([sock], [], [], timeout)
        if not readable:
            return False
        return not sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError, TimeoutError):  # nothing to read after all: still there
        return False
    except (OSError, ValueError):  # reset, or closed under us
        return True


def check() -> None:
    """Raise ClientGone if the watched client has hung up (ShuttingDown past the graceful timeout), without waiting."""
    shutdown.check()
    watched = _client.get()
    if watched is not None:
        watched.checked = time.monotonic()
        if _hung_up(watched.sock, 0):
            raise ClientGone()


def wait(seconds: float) -> None:
    """Sleep `seconds`; raise ClientGone as soon as the watched client is seen to have hung up (and ShuttingDown,
    past the graceful timeout: llmsim/runtime/shutdown.py)."""
    shutdown.check()
    watched = _client.get()
    if watched is None:
        ticks.sleep(seconds)
        return
    held = getattr(watched.sock, "release_held", None)  # the transport's writes held back (llmsim/runtime/sockets.py)
    if held is not None:
        try:
            held()  # leave before the wait, not after it
        except OSError:
            raise ClientGone() from None
    now = time.monotonic()
    if seconds < CHECK_EVERY:
        if now - watched.checked >= CHECK_EVERY:
            watched.checked = now
            if _hung_up(watched.sock, 0):
                raise ClientGone()
        ticks.sleep(seconds)  # the worker's shared pacing timer
        return
    deadline = now + seconds
    if _hung_up(watched.sock, seconds):
        raise ClientGone()
    watched.checked = time.monotonic()
    time.sleep(max(0.0, deadline - watched.checked))  # woken early by a pipelined request: the clock is left
