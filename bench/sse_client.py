"""A keep-alive HTTP/1.1 streaming client on a bare asyncio Protocol, for the load generator's paced streams.

At hundreds of paced streams a client process reads tens of thousands of small chunks a second. Through
aiohttp each read passes a stream reader, a future and an `async for` step; a generator that spends most of
its core that way reads late, and its lateness passes for the server's. Here each read is one callback that
takes the time and counts the text-delta events in the raw bytes; nothing else is parsed.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlsplit

from bench.common import DELTA

LAST_CHUNK = b"\r\n0\r\n\r\n"  # the end of a chunked body (after the last chunk's own CRLF)
KEEP = max(len(DELTA), len(LAST_CHUNK)) - 1  # bytes carried over so a marker split between reads still counts


class _Reader(asyncio.Protocol):
    """One connection; `expect` arms it for the next response, whose end resolves the future it returns."""

    def __init__(self, origin: float) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.done: asyncio.Future[bool] | None = None
        self.deltas: list[float] = []
        self.closed = False

    def expect(self, deltas: list[float]) -> asyncio.Future[bool]:
        """`deltas`: filled in place as the bytes arrive (a stream cut short keeps what came)."""
        self.done = asyncio.get_running_loop().create_future()
        self.deltas = deltas
        self.head = b""
        self.status = 0
        self.length: int | None = None  # a Content-Length body (an error): bytes still to come
        self.tail = b""
        return self.done

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter() - self.origin
        if self.done is None or self.done.done():
            return
        if not self.status:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self.head[:end].decode("latin-1"), self.head[end + 4:]
            self.status = int(head.split(" ", 2)[1])
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    self.length = int(value)
        if self.length is not None:
            self.length -= len(data)
            if self.length <= 0:
                self.done.set_result(False)
            return
        chunk = self.tail + data
        count = chunk.count(DELTA)
        if count:
            self.deltas.extend([now] * count)
        if chunk.endswith(LAST_CHUNK) or (not self.tail and data.startswith(b"0\r\n\r\n")):
            self.done.set_result(self.status == 200)
        self.tail = chunk[-KEEP:]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is not None and not self.done.done():
            self.done.set_result(False)


class StreamClient:
    """POSTs one JSON body again and again on one connection (reconnecting when the server closes it)."""

    def __init__(self, url: str, body: dict[str, Any], headers: dict[str, str], origin: float) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        payload = json.dumps(body).encode()
        head = [f"POST {parts.path} HTTP/1.1", f"Host: {parts.netloc}", "Content-Type: application/json",
                f"Content-Length: {len(payload)}", "Accept: text/event-stream",
                *(f"{k}: {v}" for k, v in headers.items())]
        self.request = ("\r\n".join(head) + "\r\n\r\n").encode() + payload
        self.origin = origin
        self.reader: _Reader | None = None

    async def post(self, deltas: list[float]) -> bool:
        """Send the request and wait for the whole answer: whether it was a 200 that ended cleanly. `deltas` gets
        the time each text delta arrived, as it arrives."""
        if self.reader is None or self.reader.closed:
            loop = asyncio.get_running_loop()
            _, self.reader = await loop.create_connection(lambda: _Reader(self.origin), self.host, self.port)
        reader = self.reader
        done = reader.expect(deltas)
        assert reader.transport is not None
        reader.transport.write(self.request)
        try:
            ok = await done
        finally:
            if not done.done() or reader.closed:  # cut short (the window closed): this connection is spent
                self.close()
        return ok

    def close(self) -> None:
        if self.reader is not None and self.reader.transport is not None:
            self.reader.transport.close()
        self.reader = None
