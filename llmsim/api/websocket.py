"""Responses WebSocket mode: `response.create` events in, the same typed events as SSE out.

The upgrade is a GET on the /responses path itself (what `client.responses.connect()`
opens); the API key is checked before the upgrade by the app-wide `require_api_key`.
Responses run one after another on a connection. As on the real API, the most recent
response stays in a connection-local cache, so `previous_response_id` chains from it
even with `store: false`, and a failed turn evicts it.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Protocol

from flask import Blueprint, Response, current_app, request

from llmsim import orchestrate
from llmsim.api import decode
from llmsim.api.http import asked, services
from llmsim.chaos.faults import ConnectionDropped
from llmsim.errors import APIError
from llmsim.pipeline import Pipeline
from llmsim.request import ApiRequest, Ticket, ticket_of
from llmsim.responses.create import Create
from llmsim.responses.surface import RESPONSES
from llmsim.runtime import shutdown
from llmsim.runtime.wsconn import WholeFrames
from llmsim.shared.events import dumps
from llmsim.store import StoredResponse

# simple_websocket and wsproto (~4 MB, ~30 ms a worker start) are imported by the first WebSocket, not at start-up.

bp = Blueprint("responses_ws", __name__)
CLIENT_EVENTS = ("response.create",)
POLL_SECONDS = 1.0  # how often a silent connection looks whether the server is shutting down
PING_EVERY = 25.0  # seconds between pings (at most): a client that answers none by the next is closed
log = logging.getLogger(__name__)


class Connection(Protocol):
    """The part of simple_websocket's Server a session uses."""

    def receive(self, timeout: float | None = None) -> Any: ...

    def send(self, data: str) -> None: ...

    def close(self, reason: int | None = None, message: str | None = None) -> None: ...


@bp.route("/responses", websocket=True)
def responses_socket() -> Response:
    """Everything that can refuse the upgrade (a bad LLMSim header, a malformed handshake) is checked before the
    `101`, so a refusal is a plain HTTP answer in the OpenAI envelope, never text on an upgraded socket."""
    from wsproto.frame_protocol import CloseReason

    upgrade = asked(None)
    settings = current_app.extensions["llmsim"].settings
    ws = accept(request.environ, settings.ws_idle_timeout, settings.max_body_bytes)
    session = Session(ws, services().pipeline, upgrade, idle=settings.ws_idle_timeout)
    try:
        session.serve()
    except Exception:  # after the 101 nothing but WebSocket frames may be written: an internal error is a 1011
        log.exception("websocket session failed")
        session.closing = (CloseReason.INTERNAL_ERROR, "internal error")
    try:
        ws.close(*session.closing)
    except Exception:  # noqa: BLE001  # already closed, or the socket is gone: nothing more to say
        pass
    if session.ticket is not None:  # the connection's answer finishes its last request's entry
        session.ticket.answered({}, 200)
    return Upgraded()


def accept(environ: dict[str, Any], idle: float, max_message: int) -> Any:
    """The `101` and a simple-websocket Server whose frames are written whole (llmsim/runtime/wsconn.py); a
    handshake wsproto refuses is the client's 400, before anything is written."""
    from simple_websocket import Server
    from wsproto.utilities import RemoteProtocolError

    sock = environ.get("gunicorn.socket")
    if sock is not None:
        environ = {**environ, "gunicorn.socket": WholeFrames(sock, write_timeout=idle)}
    try:
        return Server(environ, ping_interval=min(PING_EVERY, idle), max_message_size=max_message)
    except RemoteProtocolError as error:
        raise APIError(f"Invalid WebSocket upgrade: {error}.", code="invalid_websocket_upgrade") from None


class Upgraded(Response):
    """The answer of an upgraded request: its bytes were the WebSocket's. Under gunicorn, StopIteration tells the
    worker to close the connection without writing a response (as flask-sock does); elsewhere, an empty body."""

    def __call__(self, environ: Any, start_response: Any) -> Any:
        if "gunicorn.socket" in environ:
            raise StopIteration()
        return []


class Session:
    """One connection: reads client events and answers each `response.create` with its stream."""

    def __init__(self, ws: Connection, pipeline: Pipeline, asked: ApiRequest | None = None,
                 idle: float | None = None) -> None:
        """`asked`: the upgrade request (its key, seed, speed, fault, text mode), each message its body. `idle`:
        seconds the client may stay silent between responses before the connection is closed."""
        self.ws = ws
        self.idle = idle
        self.closing: tuple[int | None, str | None] = (None, None)  # the close frame's code and reason
        self.pipeline = pipeline
        self.asked = asked or ApiRequest(None)
        self.recent: StoredResponse | None = None
        self.ticket: Ticket | None = None  # the last admitted request's

    def serve(self) -> None:
        """Until the client goes away: a closed socket ends the loop and any response being streamed."""
        from simple_websocket import ConnectionClosed

        try:
            while True:
                message = self.receive()
                if message is None:
                    return
                self.handle(message)
        except (ConnectionClosed, ConnectionDropped, OSError):  # dropped: an injected fault cuts the connection
            return
        except shutdown.ShuttingDown:  # the cut reached the session outside a response's pacing (while it wrote)
            from wsproto.frame_protocol import CloseReason

            self.closing = (CloseReason.SERVICE_RESTART, "the server is shutting down")

    def receive(self) -> str | bytes | None:
        """The client's next message; None when the connection should close (idle too long, or the server is
        shutting down: it looks every POLL_SECONDS). A closed connection raises instead."""
        from wsproto.frame_protocol import CloseReason

        silent = 0.0
        while not shutdown.state.draining:
            step = POLL_SECONDS if self.idle is None else min(POLL_SECONDS, self.idle - silent)
            message = self.ws.receive(timeout=step)
            if message is not None:
                return message
            silent += step
            if self.idle is not None and silent >= self.idle:
                self.closing = (CloseReason.GOING_AWAY, f"idle for {self.idle:g} seconds")
                return None
        self.closing = (CloseReason.SERVICE_RESTART, "the server is shutting down")
        return None

    def handle(self, message: str | bytes) -> None:
        body: dict[str, Any] = {}
        stream_id: str | None = None
        try:
            body = client_event(message)
            stream_id = body.pop("stream_id", None)
            self.respond(body, stream_id)
        except APIError as error:
            if self.recent is not None and body.get("previous_response_id") == self.recent.id:
                self.recent = None  # a failed continuation evicts its parent, as the real API does
            self.send(error_event(error), stream_id)

    def respond(self, body: dict[str, Any], stream_id: str | None) -> None:
        if body.get("background"):
            raise APIError("Background mode is not supported over WebSocket.", param="background",
                           code="unsupported_parameter")
        generate = body.pop("generate", True)
        if not isinstance(generate, bool):
            raise APIError("Invalid type for 'generate': expected a boolean.", param="generate", code="invalid_type")
        body.pop("type")
        try:
            turn = Create(RESPONSES, recent=self.recent, generate=generate, paced_runs=False, holds=False)
            answer = orchestrate.create(self.pipeline, turn, replace(self.asked, body={**body, "stream": True}),
                                        raw=False)
        except BaseException as error:
            self.ticket = ticket_of(error) or self.ticket
            raise
        self.ticket = answer.ticket or self.ticket
        if answer.relayed is not None:  # proxy, replay: their own events, one after another on this socket
            for _, data in answer.relayed.events or iter([("", dumps(answer.relayed.body))]):
                self.send(data, stream_id)
            return
        run = answer.run
        assert run is not None
        events = run.events
        try:
            for _, data in events:
                self.send(data, stream_id)
        finally:
            events.close()  # type: ignore[attr-defined]  # a client gone mid-stream stops the backend too
        self.recent = run.record if run.response["status"] != "failed" else None

    def send(self, data: str, stream_id: str | None) -> None:
        if stream_id is not None:  # echo the lane into the already-serialized event
            data = f'{data[:-1]},"stream_id":{dumps(stream_id)}}}'
        self.ws.send(data)


def client_event(message: str | bytes) -> dict[str, Any]:
    """A client event as a dict, or the error the real API answers a malformed one with."""
    body = decode.loads(message, code="invalid_json")
    if not isinstance(body, dict):
        raise APIError("Invalid client event: expected a JSON object.", code="invalid_type")
    kind = body.get("type")
    if kind is None:
        raise APIError("Missing required parameter: 'type'.", param="type", code="missing_required_parameter")
    if kind not in CLIENT_EVENTS:
        supported = ", ".join(f"'{k}'" for k in CLIENT_EVENTS)
        raise APIError(f"Invalid value: '{kind}'. Supported values are: {supported}.", param="type",
                       code="invalid_value")
    return body


def error_event(error: APIError) -> str:
    """The `error` event of WebSocket mode: the HTTP error body plus the status it would have had."""
    event: dict[str, Any] = {"type": "error", "status": error.status, **error.body()}
    if error.headers:
        event["error"]["headers"] = error.headers
    return dumps(event)
