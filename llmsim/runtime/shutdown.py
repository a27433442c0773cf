"""Graceful shutdown: on SIGTERM, in-flight work gets `--graceful-timeout` to finish; then what is left is cut.

A cut is not a kill: every greenlet still at work (a request, a background response) gets `ShuttingDown` raised
where it waits, inside the pacing under the event builder, which ends the response as it ends a failed
generation: `response.failed` (Chat Completions: an error chunk) with the code `server_shutting_down`, stored
like any other end. Work that starts waiting after the cut meets the same exception at its next wait
(llmsim/runtime/waits.py), so nothing parks past it. The worker (llmsim/runtime/worker.py) drives the phases;
WebSocket sessions (llmsim/api/websocket.py) close between responses once `draining` is set.
"""

from __future__ import annotations

import time
from typing import Any

import gevent
from gevent import Greenlet, getcurrent


class ShuttingDown(Exception):
    """Raised in work still running when the server's graceful timeout is over."""

    code = "server_shutting_down"

    def __init__(self, message: str = "The server is shutting down and could not finish this response. "
                                      "Retry it on a running server.") -> None:
        super().__init__(message)
        self.message = message


class _State:
    draining = False  # SIGTERM came: no new requests on kept-alive connections, WebSockets close when idle, jobs
    # take no new lines
    cutting = False  # the graceful timeout is over: every wait raises ShuttingDown


state = _State()
_working: dict[Any, None] = {}  # greenlets at work (requests, background responses), in the order they began


def working() -> None:
    """The current greenlet is at work until `done`: a cut raises in it."""
    _working[getcurrent()] = None


def done() -> None:
    _working.pop(getcurrent(), None)


def busy() -> int:
    """How many greenlets are at work."""
    return len(_working)


def spawn_work(function: Any, *args: Any) -> Greenlet:
    """A background greenlet counted as work from its start to its end."""

    def run() -> None:
        working()
        try:
            function(*args)
        finally:
            done()

    return gevent.spawn(run)


def begin() -> None:
    state.draining = True


def cut() -> None:
    """Raise ShuttingDown in every greenlet at work (each where it waits); later waits raise it too."""
    state.cutting = True
    for greenlet in list(_working):
        if greenlet is not getcurrent() and not greenlet.dead:
            if isinstance(greenlet, Greenlet):
                greenlet.kill(ShuttingDown, block=False)
            else:
                gevent.kill(greenlet, ShuttingDown)


def turn() -> None:
    """Let the other greenlets run for a moment. A turn is not a wait: a cut that lands on one is left to the work's
    next wait (`check`), inside the pacing where it ends the response, or the work goes on to its end."""
    try:
        time.sleep(0)  # looked up at call time: gevent's in the workers, a plain yield elsewhere
    except ShuttingDown:
        pass


def check() -> None:
    """At every wait: past the cut, nothing waits any more."""
    if state.cutting:
        raise ShuttingDown()
