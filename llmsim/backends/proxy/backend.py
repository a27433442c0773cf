"""Forwards Responses and Chat Completions requests to an upstream and streams its events back as they come.

Nothing is buffered. Unless recording, a stream is handed on as the upstream's bytes, each read as it
arrives: parsing every event here would cost more than the rest of the proxy (the pipeline finds the few
events it needs in the bytes). Recording parses each event, with its time since the request, for the
cassette. The upstream key is read from an environment variable once and only
ever put in the Authorization header of upstream requests; the cassette writer removes it from anything it
writes.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator

import httpx
from httpx_sse import EventSource

from llmsim.backends.base import Delta, Prompt
from llmsim.backends.cassette import Cassette, Writer, kept_headers
from llmsim.backends.relay import Exchange, Reply, TimedEvent, upstream_error
from llmsim.chaos.faults import ConnectionDropped
from llmsim.config import Settings
from llmsim.errors import APIError

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 600.0  # the longest an upstream may stay silent mid-answer
# identity: a stream's bytes are forwarded as they come, so they must come uncompressed
STREAM_HEADERS = {"Accept": "text/event-stream", "Accept-Encoding": "identity"}
JSON_HEADERS = {"Accept": "application/json"}


class ProxyBackend:
    name = "proxy"

    def __init__(self, upstream: str, api_key: str | None = None, writer: Writer | None = None,
                 on_record: Callable[[Cassette], None] | None = None) -> None:
        self.upstream = upstream.rstrip("/")
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.writer = writer
        self.on_record = on_record  # replay's `--on-miss proxy` adds what was recorded to its library
        # TCP_NODELAY: a request's headers and body go out as two writes, and Nagle would hold the body back
        # until the upstream's delayed ACK (tens of ms on a busy keep-alive connection).
        transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                                        limits=httpx.Limits(max_connections=None, max_keepalive_connections=256))
        self.client = httpx.Client(transport=transport,
                                   timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT))

    @classmethod
    def from_settings(cls, settings: Settings, **options: object) -> ProxyBackend:
        if not settings.upstream:
            raise ValueError("--backend proxy needs --upstream URL")
        key = os.environ.get(settings.upstream_api_key_env) or None
        writer = Writer(settings.record_dir, secrets=(key,) if key else ()) if settings.record_dir else None
        return cls(settings.upstream, key, writer, **options)  # type: ignore[arg-type]

    def relay(self, exchange: Exchange) -> Reply:
        order, started = time.time_ns(), time.monotonic()
        request = self.client.build_request(
            "POST", f"{self.upstream}/{exchange.endpoint}", json=exchange.body,
            headers={**self._auth, **(STREAM_HEADERS if exchange.stream else JSON_HEADERS)})
        try:
            response = self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise APIError(f"The upstream {self.upstream} could not be reached ({type(exc).__name__}).",
                           status=502, type="server_error", code="upstream_unreachable") from None
        headers = kept_headers(response.headers)
        tape = Cassette(exchange.endpoint, exchange.body, response.status_code, headers, order=order)
        if response.status_code < 400 and response.headers.get("content-type", "").startswith("text/event-stream"):
            if self.writer is None:
                return Reply(response.status_code, headers, chunks=self._chunks(response))
            return Reply(response.status_code, headers, events=self._events(response, started, tape))
        try:
            body = json.loads(response.read())
        except (ValueError, httpx.HTTPError):
            body = None
        finally:
            response.close()
        if body is None:
            raise APIError(f"The upstream answered {response.status_code} with a body that is not JSON.",
                           status=502, type="server_error", code="bad_upstream_response")
        tape.body, tape.elapsed = body, time.monotonic() - started
        self._record(tape)
        if response.status_code >= 400:
            raise upstream_error(response.status_code, body, headers)
        return Reply(response.status_code, headers, body=body)

    @staticmethod
    def _chunks(response: httpx.Response) -> Iterator[bytes]:
        """The stream's bytes, each read as it arrives (a read takes what the socket holds, up to 64 KiB)."""
        try:
            yield from response.iter_bytes()  # decoded, should an upstream compress regardless
        except httpx.HTTPError:
            raise ConnectionDropped() from None  # the upstream cut the stream: so does this one
        finally:
            response.close()  # a client gone mid-stream stops the upstream too

    def _events(self, response: httpx.Response, started: float, tape: Cassette) -> Iterator[TimedEvent]:
        """Each event as it is parsed; the cassette is written once the upstream has said everything."""
        try:
            for sse in EventSource(response).iter_sse():
                event = time.monotonic() - started, "" if sse.event == "message" else sse.event, sse.data
                tape.events.append(event)
                yield event
        except httpx.HTTPError:
            raise ConnectionDropped() from None  # the upstream cut the stream: so does this one, unrecorded
        finally:
            response.close()  # a client gone mid-stream stops the upstream too
        self._record(tape)

    def _record(self, tape: Cassette) -> None:
        if self.writer is not None:
            written = self.writer.write(tape)
            if self.on_record is not None:
                self.on_record(written)

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        raise APIError("This request needs a generating backend; the proxy only forwards /responses and "
                       "/chat/completions.", code="unsupported_with_proxy")
