"""Many open streams kept going for as little CPU as the load can take: each socket read every `poll` seconds.

`wrk` reads every delta as it arrives: at ~40,000 deltas/s that is a wake-up and a read per delta, a third of a
core of this 2-core machine taken from the servers bench/stores.py (b) measures. The server's work per delta
does not depend on when its client reads (each delta is its own write either way, and a socket's buffer holds
a poll's worth of them), so this load reads all the sockets with data once per `poll`, the deltas that came in
meanwhile in one read each. Closed loop, like wrk: a stream's end (the server closes it, `Connection: close`)
opens the next. Timing the deltas is bench/stream_load.py's job, on a sample of streams beside these.

    python bench/lazy_streams.py URL BODY.json STREAMS WARMUP_S SECONDS POLL_S   (prints streams ended, bytes)
"""

from __future__ import annotations

import json
import select
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit


def run(url: str, body: bytes, streams: int, warmup: float, seconds: float, poll: float) -> tuple[int, int]:
    """`streams` streams, started evenly over `warmup` seconds and each followed by the next as it ends, for
    `seconds`: how many ended, and the bytes read."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    request = (f"POST {parts.path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    poller = select.epoll()
    sockets: dict[int, socket.socket] = {}

    def start() -> None:
        sock = socket.create_connection((host, port))  # loopback: connected at once
        sock.sendall(request)
        sock.setblocking(False)
        sockets[sock.fileno()] = sock
        poller.register(sock.fileno(), select.EPOLLIN)

    began = time.monotonic()
    opened = ended = read = 0
    while (now := time.monotonic() - began) < seconds:
        while opened < streams and opened * warmup <= now * streams:
            start()
            opened += 1
        for fd, _ in poller.poll(0):
            sock = sockets[fd]
            try:
                data = sock.recv(1 << 18)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data:
                read += len(data)
                continue
            poller.unregister(fd)
            del sockets[fd]
            sock.close()
            ended += 1
            start()
        time.sleep(poll)
    for sock in sockets.values():
        sock.close()
    return ended, read


if __name__ == "__main__":
    url, body_path, streams, warmup, seconds, poll = sys.argv[1:7]
    ended, read = run(url, Path(body_path).read_bytes(), int(streams), float(warmup), float(seconds), float(poll))
    print(json.dumps({"ended": ended, "bytes": read}))
