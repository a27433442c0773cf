"""The paced stream's writer (llmsim/runtime/release.py): a paced run's text deltas leave the server each at its
time, in its own write, with the bytes an unpaced stream has; the metrics see what the client saw; a client
that leaves mid-run ends the stream and counts only the tokens it was sent."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from llmsim.testing import ServerProcess

ITL = 0.020  # every gap of the model below, exactly: no draw varies it
PROFILE = """
models:
  - id: paced-20ms
    timing:
      ttft_ms: {kind: normal, mean: 100, stddev: 0}
      itl_ms: {kind: normal, mean: 20, stddev: 0}
      prefill_tokens_per_s: 1000000000
      reasoning_tokens_per_s: 1000
  - id: paced-1ms
    timing:
      ttft_ms: {kind: normal, mean: 10, stddev: 0}
      itl_ms: {kind: normal, mean: 1, stddev: 0}
      prefill_tokens_per_s: 1000000000
      reasoning_tokens_per_s: 1000
"""
DELTA = b"event: response.output_text.delta\n"


@pytest.fixture(scope="module")
def paced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    profiles = tmp_path_factory.mktemp("profiles")
    (profiles / "paced.yaml").write_text(PROFILE)
    with ServerProcess("--speed", "1", "--profiles-dir", str(profiles)) as server:
        yield server


def _request(port: int, body: dict, headers: dict[str, str], version: str = "1.1") -> socket.socket:
    payload = json.dumps(body).encode()
    head = [f"POST /v1/responses HTTP/{version}", "Host: 127.0.0.1", "Content-Type: application/json",
            f"Content-Length: {len(payload)}", "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(1 << 16):
        data += chunk
    return data


def _whole(body: bytes) -> list[dict]:
    """The events of a whole stream, checked: every text delta, in order, makes the text the done event has."""
    found = events(body)
    assert found[0]["type"] == "response.created" and found[-1]["type"] in ("response.completed",
                                                                             "response.incomplete")
    assert [e["sequence_number"] for e in found] == list(range(len(found)))
    text = "".join(e["delta"] for e in found if e["type"] == "response.output_text.delta")
    assert text == next(e["text"] for e in found if e["type"] == "response.output_text.done")
    return found


def timed_chunks(port: int, body: dict, headers: dict[str, str]) -> list[tuple[float, bytes]]:
    """The HTTP/1.1 chunks of a streamed answer (one write of the server is one chunk), each with the time
    its last byte arrived."""
    arrivals: list[tuple[float, int]] = []
    data = b""
    with _request(port, body, headers) as sock:
        while chunk := sock.recv(1 << 16):
            data += chunk
            arrivals.append((time.monotonic(), len(data)))
    head_end = data.index(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in data[:head_end].lower(), data[:head_end]
    at, chunks = head_end + 4, []
    while True:
        size_end = data.index(b"\r\n", at)
        size = int(data[at:size_end], 16)
        if size == 0:
            return chunks
        end = size_end + 2 + size
        assert data[end:end + 2] == b"\r\n"
        chunks.append((next(t for t, length in arrivals if length >= end), data[size_end + 2:end]))
        at = end + 2


FRESH = re.compile(rb'"(created_at|completed_at)":\d+|(resp|msg)_[0-9a-f]+|"obfuscation":"[^"]*"')


def _fresh(body: bytes) -> bytes:
    """`body` without its times, ids and padding, which are new in every response."""
    return FRESH.sub(lambda m: b"<%d>" % len(m.group()), body)


def events(body: bytes) -> list[dict]:
    return [json.loads(frame.split(b"data: ", 1)[1]) for frame in body.split(b"\n\n") if frame.startswith(b"event:")]


def scrape(server: ServerProcess) -> Callable[..., float]:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    samples = {(s.name, frozenset(s.labels.items())): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    return lambda name, **labels: samples.get((name, frozenset({"model_name": "paced-20ms", **labels}.items())), 0.0)


def test_each_text_delta_leaves_at_its_time_in_its_own_write_with_an_unpaced_streams_bytes(
        paced: ServerProcess) -> None:
    body = {"model": "paced-20ms", "input": "Tell me a story", "stream": True, "max_output_tokens": 40}  # ~0.8 s
    seed = {"X-LLMSim-Seed": "7"}
    chunks = timed_chunks(paced.port, body, seed)
    deltas = [(at, chunk) for at, chunk in chunks if DELTA in chunk]
    assert len(deltas) > 20
    alone = sum(chunk.count(DELTA) == 1 for _, chunk in deltas[1:])  # 20 ms apart: each in its own write, but
    assert alone >= 0.8 * (len(deltas) - 1)  # for those a busy machine made late enough to be due together
    first = deltas[0][0]
    for i, (at, _) in enumerate(deltas):  # never early: not all at once (the margin: a busy machine's lateness)
        assert at - first >= i * ITL - 0.025
    assert deltas[-1][0] - first <= (len(deltas) - 1) * ITL + 1.0  # nor held back
    unpaced = b"".join(chunk for _, chunk in timed_chunks(paced.port, body, {**seed, "X-LLMSim-Speed": "0"}))
    paced_bytes = b"".join(chunk for _, chunk in chunks)
    assert _fresh(paced_bytes) == _fresh(unpaced)  # the same bytes but for what each request draws anew
    paced_events = events(paced_bytes)
    assert [e["sequence_number"] for e in paced_events] == list(range(len(paced_events)))


def test_the_metrics_see_each_gap_and_the_sdk_the_whole_stream(paced: ServerProcess) -> None:
    client = openai.OpenAI(base_url=paced.base_url, api_key="sk-test", max_retries=0)
    before = scrape(paced)
    with client.responses.stream(model="paced-20ms", input="Hi", text={"verbosity": "low"}) as stream:
        count = sum(1 for event in stream if event.type == "response.output_text.delta")
        final = stream.get_final_response()
    after = scrape(paced)
    assert final.status == "completed" and count > 10 and final.usage is not None
    gaps = after("vllm:inter_token_latency_seconds_count") - before("vllm:inter_token_latency_seconds_count")
    spent = after("vllm:inter_token_latency_seconds_sum") - before("vllm:inter_token_latency_seconds_sum")
    assert gaps == count - 1 and 0.015 <= spent / gaps <= 0.05
    assert after("vllm:time_to_first_token_seconds_count") - before("vllm:time_to_first_token_seconds_count") == 1
    tokens = after("vllm:generation_tokens_total") - before("vllm:generation_tokens_total")
    assert tokens == final.usage.output_tokens


def test_a_client_that_leaves_mid_run_ends_its_stream_with_the_tokens_it_was_sent(paced: ServerProcess) -> None:
    before = scrape(paced)
    body = {"model": "paced-20ms", "input": "Tell me a long story", "stream": True, "max_output_tokens": 2000,
            "text": {"verbosity": "high"}}
    with _request(paced.port, body, {}) as sock:
        data = b""
        while data.count(DELTA) < 10:
            data += sock.recv(1 << 16)
    deadline = time.monotonic() + 10  # ~200 tokens after this the run would go on: the server stops at once
    while scrape(paced)("vllm:request_success_total", finished_reason="abort") == \
            before("vllm:request_success_total", finished_reason="abort"):
        assert time.monotonic() < deadline, "the stream went on after its client left"
        time.sleep(0.05)
    after = scrape(paced)
    tokens = after("vllm:generation_tokens_total") - before("vllm:generation_tokens_total")
    assert 10 <= tokens <= 40  # those sent before the server saw the hang-up, not the whole run (~250)


def test_an_http_1_0_client_gets_the_paced_deltas_unchunked(paced: ServerProcess) -> None:
    body = {"model": "paced-1ms", "input": "Tell me a story", "stream": True, "max_output_tokens": 100}
    with _request(paced.port, body, {"X-LLMSim-Seed": "7"}, version="1.0") as sock:
        data = _read_all(sock)
    head, _, rest = data.partition(b"\r\n\r\n")
    assert b"transfer-encoding" not in head.lower()
    assert sum(1 for e in _whole(rest) if e["type"] == "response.output_text.delta") > 20


SLOW_READER = textwrap.dedent("""
    from gevent import monkey; monkey.patch_all()
    import json, socket, time, gevent
    from llmsim.timing.pacing import ModelLoad, RunPace, Schedule
    from llmsim.runtime.release import release

    server, client = socket.socketpair()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    rests = []
    class Counted(type(server)):
        __slots__ = ()
        def sendall(self, data, flags=0):
            rests.append(len(data))
            return super().sendall(data, flags)
    server.__class__ = Counted
    frames = [b"frame %05d " % i + b"x" * 1000 for i in range(400)]
    pace = RunPace(Schedule(time.monotonic(), ModelLoad(None), 1.0, time.monotonic, time.sleep), [1.0] * 400)
    def read():
        gevent.sleep(0.3)  # nothing read for a while: the socket's buffers fill
        data = b""
        while len(data) < sum(map(len, frames)):
            data += client.recv(1 << 16)
        return data
    reader = gevent.spawn(read)
    yielded = list(release(frames, pace, server, False))
    print(json.dumps({"yielded": len(yielded), "whole": reader.get(timeout=30) == b"".join(frames),
                      "rests": len(rests), "sent": len(pace.sent)}))
""")


def test_a_client_slower_than_its_stream_gets_every_byte_in_order() -> None:
    """The hub writes what the socket takes; the rest of a write waits for room in the request's greenlet."""
    result = subprocess.run([sys.executable, "-c", SLOW_READER], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out == {"yielded": 0, "whole": True, "rests": out["rests"], "sent": 400} and out["rests"] > 0
