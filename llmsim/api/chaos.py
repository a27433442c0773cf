"""Chaos at the HTTP edge: the chaos state on the app (the admin API and the dashboard read it), and a connection
a fault or the client ended closed quietly. What is admitted, and how it fails, is decided below the transport
(llmsim/chaos/admission.py)."""

from __future__ import annotations

from collections.abc import Iterator

from flask import Flask, Response, current_app

from llmsim.api.answers import settled
from llmsim.chaos.faults import ConnectionDropped
from llmsim.chaos.state import ChaosState
from llmsim.runtime.waits import ClientGone

EXTENSION = "llmsim.chaos"


def state() -> ChaosState:
    return current_app.extensions[EXTENSION]


def install(app: Flask, chaos: ChaosState) -> None:
    """Chaos state on the app, quiet connection drops."""
    app.extensions[EXTENSION] = chaos

    @app.errorhandler(ClientGone)
    def _drop(error: ClientGone) -> Response:
        return settled(Response(cut()), error)


def cut() -> Iterator[bytes]:
    """The body of an answer to a client that is gone: raised while the server writes it, it closes the socket,
    sending nothing."""
    raise ConnectionDropped()
    yield  # pragma: no cover - makes this a generator
