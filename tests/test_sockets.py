"""The workers' client connections: a small write is one `send` (no `getsockopt`), a large one still arrives whole."""

from __future__ import annotations

import json
import re
import socket
import struct
import subprocess
import sys
import textwrap

import httpx

from llmsim.runtime import sockets
from llmsim.testing import ServerProcess

# Paced on the module's server (speed 0): the header sets the pacer's speed for the request, as --speed sets it for
# the server, and the two tests that pace need no server of their own (~0.7 s each to start and stop). Twice the
# profile's speed: every token still waits its gap (~7 ms for gpt-4o-mini), in half the time (the module runs alone).
PACED = {"X-LLMSim-Speed": "2"}

SCRIPT = textwrap.dedent("""
    from gevent import monkey; monkey.patch_all()
    import json, socket, gevent
    from llmsim.runtime import sockets

    a, b = socket.socketpair()
    sockets.adopt(a)
    a.settimeout(5)
    calls = []
    class Spy:  # the underlying socket, counting what sendall asks of the kernel
        def __init__(self, real): self.real = real
        def send(self, data, flags=0): calls.append("send"); return self.real.send(data, flags)
        def getsockopt(self, *args): calls.append("getsockopt"); return self.real.getsockopt(*args)
        def __getattr__(self, name): return getattr(self.real, name)
    real = a._sock
    small = b"event: response.output_text.delta\\ndata: {}\\n\\n"
    a._sock = Spy(real)
    a.sendall(small)
    a._sock = real
    small_calls = list(calls)
    got_small = b.recv(1024)

    big = bytes(range(256)) * 40_000  # 10 MB: far more than a socket buffer takes at once
    received = bytearray()
    def reader():
        while len(received) < len(big):
            received.extend(b.recv(1 << 20))
    task = gevent.spawn(reader)
    a.sendall(big)
    task.join(timeout=10)
    b.close()
    try:
        for _ in range(1000):
            a.sendall(small)
        gone = None
    except OSError as error:
        gone = type(error).__name__
    print(json.dumps({"class": type(a).__name__, "small_calls": small_calls, "small": got_small == small,
                      "big": bytes(received) == big, "gone": gone}))
""")


def test_a_small_write_is_one_send_and_a_large_one_arrives_whole() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["class"] == "Connection"
    assert out["small_calls"] == ["send"]  # gevent's own sendall also asks for SO_SNDBUF first
    assert out["small"] and out["big"]
    assert out["gone"] in ("BrokenPipeError", "ConnectionResetError")  # a peer that left still fails the write


def test_a_paced_stream_is_whole_through_the_workers_connections(server: ServerProcess) -> None:
    body = {"model": "gpt-4o-mini", "input": "hi", "stream": True, "text": {"verbosity": "low"}}
    with httpx.stream("POST", f"{server.base_url}/responses", json=body, headers=PACED, timeout=60) as response:
        frames = response.read().decode().split("\n\n")
    kinds = [frame.split("\n", 1)[0] for frame in frames if frame.startswith("event:")]
    assert kinds[0] == "event: response.created" and kinds[-1] == "event: response.completed"
    deltas = [json.loads(frame.split("data: ", 1)[1]) for frame in frames
              if frame.startswith("event: response.output_text.delta")]
    done = next(json.loads(frame.split("data: ", 1)[1]) for frame in frames
                if frame.startswith("event: response.output_text.done"))
    assert len(deltas) > 5 and "".join(d["delta"] for d in deltas) == done["text"]


def _raw_chunks(port: int, path: str, body: dict, headers: dict[str, str] | None = None) -> list[bytes]:
    """The HTTP/1.1 chunks of a streamed answer, as the server wrote them (one write is one chunk)."""
    payload = json.dumps(body).encode()
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
            f"Content-Length: {len(payload)}", "Connection: close", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
        data = b""
        while chunk := sock.recv(1 << 16):
            data += chunk
    head_end = data.index(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in data[:head_end].lower(), data[:head_end]
    rest, chunks = data[head_end + 4:], []
    while True:
        size_end = rest.index(b"\r\n")
        size = int(rest[:size_end], 16)
        if size == 0:
            return chunks
        chunks.append(rest[size_end + 2:size_end + 2 + size])
        rest = rest[size_end + 2 + size + 2:]


def test_a_chat_stream_nothing_paces_goes_out_in_few_writes(server: ServerProcess) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": True,
            "max_completion_tokens": 300}
    chunks = _raw_chunks(server.port, "/v1/chat/completions", body)
    frames = b"".join(chunks).split(b"\n\n")
    assert frames[-2] == b"data: [DONE]" and len(frames) > 20
    assert len(chunks) <= 2  # every frame was ready at once: not one write per frame


def test_a_paced_chat_stream_still_writes_each_frame_when_it_is_due(server: ServerProcess) -> None:
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}], "stream": True,
            "max_completion_tokens": 30}
    chunks = _raw_chunks(server.port, "/v1/chat/completions", body, {"X-LLMSim-Speed": "20"})
    assert len(chunks) == len(b"".join(chunks).split(b"\n\n")) - 1  # one write per frame, [DONE] included


HELD = textwrap.dedent("""
    from gevent import monkey; monkey.patch_all()
    import json, socket, tempfile
    from llmsim.runtime import sockets

    a, b = socket.socketpair()
    sockets.adopt(a)
    a.settimeout(5)
    sends = []
    class Spy:  # the underlying socket, keeping what each send asks the kernel to write
        def __init__(self, real): self.real = real
        def send(self, data, flags=0): sends.append(bytes(data)); return self.real.send(data, flags)
        def __getattr__(self, name): return getattr(self.real, name)
    a._sock = Spy(a._sock)
    out = {}
    sockets.hold(a)  # a head, then its body: one send
    a.sendall(b"head;"); out["head alone"] = len(sends)
    a.sendall(b"body;"); out["head and body"] = list(map(bytes.decode, sends))
    sockets.flush(a)
    sends.clear()
    sockets.hold(a); sockets.cork(a)  # a whole answer: nothing leaves until the flush, then all of it at once
    for part in (b"head;", b"body;", b"end;"):
        a.sendall(part)
    out["corked"] = len(sends)
    sockets.flush(a); out["flushed"] = list(map(bytes.decode, sends))
    sends.clear()
    sockets.cork(a)
    a.sendall(b"x" * (sockets.CORK_LIMIT // 2)); a.sendall(b"y" * (sockets.CORK_LIMIT // 2))
    out["past the limit"] = [len(s) for s in sends]
    sockets.flush(a)
    sends.clear()
    sockets.cork(a)
    a.sendall(b"before;")
    a.release_held()  # a wait: what is held leaves first
    out["before a wait"] = list(map(bytes.decode, sends))
    sockets.flush(a)
    sockets.hold(a)
    a.sendall(b"head;")
    with tempfile.TemporaryFile() as f:  # a file the kernel sends: after the head, not before it
        f.write(b"file;"); f.seek(0)
        a.sendfile(f)
    a.close()
    received = b""
    while chunk := b.recv(1 << 20):
        received += chunk
    out["stream"] = received.replace(b"x" * (sockets.CORK_LIMIT // 2), b"X").replace(
        b"y" * (sockets.CORK_LIMIT // 2), b"Y").decode()
    print(json.dumps(out))
""")


def test_held_writes_leave_together_and_in_order() -> None:
    result = subprocess.run([sys.executable, "-c", HELD], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["head alone"] == 0 and out["head and body"] == ["head;body;"]
    assert out["corked"] == 0 and out["flushed"] == ["head;body;end;"]
    assert out["past the limit"] == [sockets.CORK_LIMIT]  # held no further than the limit
    assert out["before a wait"] == ["before;"]
    assert out["stream"] == "head;body;head;body;end;XYbefore;head;file;"


def _data_segments(sock: socket.socket) -> int:
    """The segments with data this connection has received (Linux's tcp_info `tcpi_data_segs_in`): on loopback,
    one per write of the server's that fits a segment."""
    return struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256), 152)[0]


def _answer(sock: socket.socket, path: str, body: dict, headers: dict[str, str] | None = None) -> bytes:
    """One request on a kept-alive connection, read to the end of its answer."""
    payload = json.dumps(body).encode()
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
            f"Content-Length: {len(payload)}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    data = b""
    while True:
        data += sock.recv(1 << 16)
        head_end = data.find(b"\r\n\r\n")
        if head_end < 0:
            continue
        length = re.search(rb"content-length: (\d+)", data[:head_end].lower())
        if length is not None and len(data) >= head_end + 4 + int(length.group(1)) or data.endswith(b"\r\n0\r\n\r\n"):
            return data


def test_an_answer_nothing_waits_in_leaves_in_one_write(server: ServerProcess) -> None:
    """Its head, its body and (chunked) the body's end: one write each made three `send`s, and three segments."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        _answer(sock, "/v1/responses", {"model": "gpt-4o-mini", "input": "hi"})  # past the connection's first ACKs
        for path, body in [("/v1/responses", {"model": "gpt-4o-mini", "input": "hi", "max_output_tokens": 30}),
                           ("/v1/responses", {"model": "gpt-4o-mini", "input": "hi", "max_output_tokens": 30,
                                              "stream": True}),
                           ("/v1/chat/completions", {"model": "gpt-4o-mini", "max_completion_tokens": 30,
                                                     "stream": True, "messages": [{"role": "user", "content": "hi"}]})]:
            before = _data_segments(sock)
            answer = _answer(sock, path, body)
            assert answer.startswith(b"HTTP/1.1 200")
            assert _data_segments(sock) - before == 1, (path, body)


def test_a_paced_streams_closing_events_leave_in_one_write(server: ServerProcess) -> None:
    """output_text.done, content_part.done, output_item.done, the terminal event, the cost comment and the body's
    end come together once the last token has left: one write, not six."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        body = {"model": "gpt-4o-mini", "input": "hi", "stream": True, "max_output_tokens": 20}
        _answer(sock, "/v1/responses", body)  # past the connection's first ACKs
        before = _data_segments(sock)
        answer = _answer(sock, "/v1/responses", body, PACED)
        segments = _data_segments(sock) - before
    frames = answer.split(b"\n\n")
    deltas = sum(1 for frame in frames if b"event: response.output_text.delta\n" in frame)
    assert deltas >= 10 and b"event: response.incomplete\n" in answer  # cut at max_output_tokens
    # At most: head with created, in_progress, output_item.added, content_part.added, one write per delta, the end.
    assert segments <= deltas + 5, (segments, deltas)
