"""Many open streams kept going for as little CPU as the load can take: each socket read every `poll` seconds.

`wrk` reads every delta as it arrives: at ~40,000 deltas/s that is a wake-up and a read per delta, a third of a
core of this 2-core machine taken from the servers bench/stores.py (b) measures. The server's work per delta
does not depend on when its client reads (each delta is its own write either way, and a socket's buffer holds
a poll's worth of them), so this load reads all the sockets with data once per `poll`, the deltas that came in
meanwhile in one read each. Closed loop, like wrk: a stream's end (its last, empty chunk) sends the next request
on the same connection, as the SDKs' pooled clients do; a connection the server closes, or an answer that is not
a stream, is replaced by a new one. A new connection per stream would leave tens of thousands of sockets in
TIME_WAIT a minute, whose lookups slow every connect on the machine for a minute after. It counts the deltas
it reads in the measured window: the rate of every stream it keeps, not a sample's scaled up (a sample read at
once starts its next stream at once, and these wait up to a `poll` for theirs). Timing the deltas is
bench/stream_load.py's job, on a sample of streams beside these.

    python -m bench.lazy_streams URL BODY.json STREAMS WARMUP_S SECONDS POLL_S FROM_S WINDOW_S
    (prints the streams ended, the bytes read, and the text deltas read from FROM_S for WINDOW_S seconds)
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

if __package__ in (None, ""):  # `python bench/lazy_streams.py`: the repository's root on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench.common import DELTA  # noqa: E402

GROUPS = 10  # the streams are read a tenth at a time, in turn: a poll's ends (and next requests) spread over it
END = b"\r\n0\r\n\r\n"  # a chunked body's last chunk; every other chunk's data ends in an SSE frame's "\n\n"


def run(url: str, body: bytes, streams: int, warmup: float, seconds: float, poll: float,
        window: tuple[float, float]) -> tuple[int, int, int]:
    """`streams` streams, started evenly over `warmup` seconds and each followed by the next as it ends, for
    `seconds`: how many ended, the bytes read, and the text deltas read within `window` (from, to)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    request = (f"POST {parts.path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    pollers = [select.epoll() for _ in range(GROUPS)]
    sockets: dict[int, socket.socket] = {}
    tails: dict[int, bytes] = {}  # a connection's last bytes, for an end or a delta split between reads
    groups: dict[int, select.epoll] = {}

    def start(group: select.epoll) -> None:
        sock = socket.create_connection((host, port))  # loopback: connected at once
        sock.sendall(request)
        sock.setblocking(False)
        sockets[sock.fileno()] = sock
        tails[sock.fileno()] = b""
        groups[sock.fileno()] = group
        group.register(sock.fileno(), select.EPOLLIN)

    def close(fd: int) -> None:
        groups.pop(fd).unregister(fd)
        tails.pop(fd)
        sockets.pop(fd).close()

    began = time.monotonic()
    opened = ended = read = turn = deltas = 0
    while (now := time.monotonic() - began) < seconds:
        while opened < streams and opened * warmup <= now * streams:
            start(pollers[opened % GROUPS])
            opened += 1
        poller = pollers[turn % GROUPS]
        turn += 1
        counting = window[0] <= now < window[1]
        for fd, _ in poller.poll(0):
            sock = sockets[fd]
            try:
                data = sock.recv(1 << 18)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            read += len(data)
            if data and not (data.startswith(b"HTTP/") and b"chunked" not in data[:data.find(b"\r\n\r\n")].lower()):
                seen = tails[fd] + data
                if counting:
                    deltas += seen.count(DELTA)
                if seen.endswith(END):
                    ended += 1
                    sock.send(request)  # a few hundred bytes into an empty buffer
                    seen = b""
                tails[fd] = seen[1 - len(DELTA):]
                continue
            # closed by the server, or an answer that is not a stream (an error's JSON): a new connection
            close(fd)
            start(poller)
        time.sleep(poll / GROUPS)
    for sock in sockets.values():  # reset, not closed: no socket left in TIME_WAIT to slow the next run's connects
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    return ended, read, deltas


if __name__ == "__main__":
    # A batch job: it gets its share of the CPU but does not preempt what wakes up meanwhile (the servers, and the
    # sample of streams timed beside it, whose reads a burst of these would delay).
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    url, body_path, streams, warmup, seconds, poll, start, window = sys.argv[1:9]
    ended, read, deltas = run(url, Path(body_path).read_bytes(), int(streams), float(warmup), float(seconds),
                              float(poll), (float(start), float(start) + float(window)))
    print(json.dumps({"ended": ended, "bytes": read, "deltas": deltas}))
