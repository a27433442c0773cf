"""Forwards Responses, Chat Completions and (to an Anthropic-compatible upstream) Messages requests to an
upstream and streams its events back as they come.

Nothing is buffered. Unless recording, a stream is handed on as the upstream's bytes, each chunk as it
arrives: parsing every event here would cost more than the rest of the proxy (the pipeline finds the few
events it needs in the bytes). Recording cuts each event out, with its time since the request, for the
cassette. The upstream key is read from an environment variable once and only ever put in the Authorization
header of upstream requests (`x-api-key` for Messages); the cassette writer removes it from anything it writes.

The upstream connections are urllib3's pool: taking and returning a connection costs the same however many
are open (httpx's pool walks and polls every connection on each request, which at 100 streams cost the
proxy more than all the rest of its work).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING

import urllib3
from urllib3.exceptions import HTTPError

from llmsim.backends.cassette import Cassette, Writer, kept_headers
from llmsim.backends.proxy.idle import IdleCutter
from llmsim.backends.proxy.keys import upstream_key
from llmsim.backends.relay import Exchange, Reply, TimedEvent, upstream_error
from llmsim.chaos.faults import ConnectionDropped
from llmsim.config import Settings
from llmsim.errors import APIError
from llmsim.generation import Delta, Prompt
from llmsim.shared import rawsse

if TYPE_CHECKING:
    from llmsim.surface import Surface

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 600.0  # the longest an upstream may stay silent (before its answer, and mid-answer)
IDLE_CONNECTIONS = 1024  # kept open for reuse; more may be open at once (a busy moment's extra ones are closed)
READ_SIZE = 64 * 1024  # an upstream that does not send chunked: what one read takes, at most
# identity: a stream's bytes are forwarded as they come, so they should come uncompressed
STREAM_HEADERS = {"Accept": "text/event-stream", "Accept-Encoding": "identity", "Content-Type": "application/json"}
JSON_HEADERS = {"Accept": "application/json", "Content-Type": "application/json"}
TIMEOUTS = urllib3.Timeout(connect=CONNECT_TIMEOUT, read=READ_TIMEOUT)


def upstream_pool(upstream: str, timeout: urllib3.Timeout | None = TIMEOUTS) -> urllib3.HTTPConnectionPool:
    """The connections to the upstream's host (one host: no PoolManager to look it up per request). urllib3
    sets TCP_NODELAY: a request's headers and body go out as two writes, and Nagle would hold the body back until
    the upstream's delayed ACK (tens of ms on a busy keep-alive connection)."""
    return urllib3.connection_from_url(upstream, maxsize=IDLE_CONNECTIONS, block=False, retries=False,
                                       timeout=timeout)


class ProxyBackend:
    name = "proxy"
    computes = False  # it generates nothing (relayed answers are streamed as the upstream sends them)

    def __init__(self, upstream: str, api_key: str | None = None, writer: Writer | None = None,
                 on_record: Callable[[Cassette], None] | None = None, idle_limit: float = READ_TIMEOUT) -> None:
        self.upstream = upstream.rstrip("/")
        self.path = urllib3.util.parse_url(self.upstream).path or ""
        self.key = api_key
        self.headers: dict[tuple[bool, Surface], dict[str, str]] = {}  # by (`stream`, the surface: its auth)
        self.writer = writer
        self.on_record = on_record  # replay's `--on-miss proxy` adds what was recorded to its library
        self.pool = upstream_pool(self.upstream)
        self.idle = IdleCutter(idle_limit)

    @classmethod
    def from_settings(cls, settings: Settings, **options: object) -> ProxyBackend:
        if not settings.upstream:
            raise ValueError("--backend proxy needs --upstream URL")
        key = upstream_key(settings)
        writer = Writer(settings.record_dir, secrets=(key,) if key else ()) if settings.record_dir else None
        return cls(settings.upstream, key, writer, **options)  # type: ignore[arg-type]

    def _headers(self, exchange: Exchange) -> dict[str, str]:
        """The upstream request's headers for a surface: its key where the surface's API takes it."""
        surface, key = exchange.surface, self.key
        auth: dict[str, str] = {} if not key else {"Authorization": f"Bearer {key}"} \
            if surface.upstream_auth == "bearer" else {surface.upstream_auth: key}
        headers = {**surface.upstream_headers, **auth, **(STREAM_HEADERS if exchange.stream else JSON_HEADERS)}
        self.headers[exchange.stream, surface] = headers
        return headers

    def relay(self, exchange: Exchange) -> Reply:
        order, started = time.time_ns(), time.monotonic()
        headers = self.headers.get((exchange.stream, exchange.surface)) or self._headers(exchange)
        try:
            response = self.pool.urlopen("POST", f"{self.path}/{exchange.endpoint}",
                                         body=exchange.raw or json.dumps(exchange.body).encode(),
                                         headers=headers, preload_content=False)
        except (HTTPError, OSError) as exc:
            raise APIError(f"The upstream {self.upstream} could not be reached ({type(exc).__name__}).",
                           status=502, type="server_error", code="upstream_unreachable") from None
        headers = kept_headers(response.headers)
        tape = Cassette(exchange.endpoint, exchange.body, response.status, headers, order=order)
        if response.status < 400 and response.headers.get("content-type", "").startswith("text/event-stream"):
            if self.writer is None:
                return Reply(response.status, headers, chunks=self._chunks(response))
            return Reply(response.status, headers, events=self._events(response, started, tape))
        try:
            body = json.loads(response.read())
        except (ValueError, HTTPError, OSError):
            body = None
        finally:
            response.release_conn()
        if body is None:
            raise APIError(f"The upstream answered {response.status} with a body that is not JSON.",
                           status=502, type="server_error", code="bad_upstream_response")
        tape.body, tape.elapsed = body, time.monotonic() - started
        self._record(tape)
        if response.status >= 400:
            raise upstream_error(response.status, body, headers)
        return Reply(response.status, headers, body=body)

    def _chunks(self, response: urllib3.BaseHTTPResponse) -> Generator[bytes, None, None]:
        """The stream's bytes as the upstream sent them: one chunk of its chunked encoding at a time, decoded
        should it compress regardless. Its silences are watched by the idle cutter, not by a timer per read."""
        done = False
        sock = getattr(response.connection, "sock", None)  # urllib3 sets the timeout again for its next request
        if sock is not None:
            sock.settimeout(None)
        clock = time.monotonic
        try:
            with self.idle.watching(sock) as seen:
                reads = response.read_chunked(decode_content=True) if response.chunked else \
                    iter(lambda: response.read1(READ_SIZE), b"")
                for chunk in reads:
                    seen.last = clock()
                    yield chunk
            done = True
        except (HTTPError, OSError):
            raise ConnectionDropped() from None  # the upstream cut the stream: so does this one
        finally:
            if not done:
                response.close()  # a client gone mid-stream stops the upstream too
            response.release_conn()

    def _events(self, response: urllib3.BaseHTTPResponse, started: float, tape: Cassette) -> Iterator[TimedEvent]:
        """Each event as it is cut out; the cassette is written once the upstream has said everything."""
        chunks = self._chunks(response)
        try:
            for kind, data in rawsse.events(chunks):
                event = time.monotonic() - started, kind, data
                tape.events.append(event)
                yield event
        finally:
            chunks.close()  # a client gone mid-stream stops the upstream too
        self._record(tape)

    def _record(self, tape: Cassette) -> None:
        if self.writer is not None:
            written = self.writer.write(tape)
            if self.on_record is not None:
                self.on_record(written)

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        raise APIError("This request needs a generating backend; the proxy only forwards /responses and "
                       "/chat/completions.", code="unsupported_with_proxy")
