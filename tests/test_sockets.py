"""The workers' client connections: a small write is one `send` (no `getsockopt`), a large one still arrives whole."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap

import httpx

from llmsim.testing import ServerProcess

SCRIPT = textwrap.dedent("""
    from gevent import monkey; monkey.patch_all()
    import json, socket, gevent
    from llmsim.api import sockets

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


def test_a_paced_stream_is_whole_through_the_workers_connections() -> None:
    with ServerProcess("--speed", "1") as server:
        body = {"model": "gpt-4o-mini", "input": "hi", "stream": True, "text": {"verbosity": "low"}}
        with httpx.stream("POST", f"{server.base_url}/responses", json=body, timeout=60) as response:
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
