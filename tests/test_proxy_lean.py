"""The proxy's lean path (llmsim/api/forward.py) answers forwarded requests as the app's path would: the same
headers, rate limits, faults, request log and counts, the same error envelopes; what it does not handle takes the
app's path. A silent upstream is cut by the idle cutter, not by a timer per read. Upstream: a seeded sim LLMSim
on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import openai
import pytest
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from llmsim.api import forward, guard
from llmsim.app import create_app
from llmsim.backends.proxy.backend import ProxyBackend
from llmsim.backends.relay import Exchange
from llmsim.chaos.faults import ConnectionDropped
from llmsim.config import Settings
from llmsim.responses.surface import RESPONSES
from llmsim.testing import ServerProcess

BODY = {"model": "gpt-4o", "input": "Tell me about lighthouses.", "stream": True}


@pytest.fixture(scope="module")
def upstream(server: ServerProcess) -> ServerProcess:
    """The session's server: an upstream needs no flags of its own (a start costs a core 1.5 s)."""
    return server


@pytest.fixture(scope="module")
def proxy(upstream: ServerProcess) -> Iterator[ServerProcess]:
    with ServerProcess("--backend", "proxy", "--upstream", upstream.base_url, "--rpm", "1000",
                       "--upstream-keyless") as server:
        yield server


def test_the_lean_path_is_installed_only_where_it_applies(upstream: ServerProcess) -> None:
    def inner(app: Flask) -> object:  # under the Host/Origin guard, which wraps everything (llmsim/api/guard.py)
        assert isinstance(app.wsgi_app, guard.Guard)
        return app.wsgi_app.wsgi

    assert isinstance(inner(create_app(Settings(backend="proxy", upstream=upstream.base_url))), forward.Forwarding)
    keyed = create_app(Settings(backend="proxy", upstream=upstream.base_url, api_key="sk-a"))
    assert not isinstance(inner(keyed), forward.Forwarding)  # keys: authentication and scoping, the app's path
    assert not isinstance(inner(create_app(Settings())), forward.Forwarding)


def test_a_forwarded_stream_carries_the_apps_headers_and_is_counted(proxy: ServerProcess,
                                                                    upstream: ServerProcess) -> None:
    for prefix in ("/openai/v1", "/v1", ""):
        with httpx.stream("POST", f"{proxy.url}{prefix}/responses", json=BODY, timeout=30) as answer:
            text = answer.read().decode()
            headers = answer.headers
        assert answer.status_code == 200 and text.count("event: response.completed\n") == 1
        assert headers["content-type"] == "text/event-stream; charset=utf-8" and headers["cache-control"] == "no-cache"
        assert headers["x-request-id"].startswith("req_") and headers["openai-version"] == "2020-10-01"
        assert headers["openai-processing-ms"].isdigit()
        assert headers["x-ratelimit-limit-requests"] == "1000"
    log = httpx.get(f"{proxy.url}/llmsim/admin/requests").json()["data"]
    assert [entry["status"] for entry in log[-3:]] == [200, 200, 200]
    assert log[-1]["response_id"] and log[-1]["output_tokens"] > 0
    stored = openai.OpenAI(base_url=proxy.base_url, api_key="k").responses.retrieve(log[-1]["response_id"])
    assert stored.status == "completed"  # in the proxy's own store, for previous_response_id chains
    samples = {(s.name, s.labels.get("endpoint"), s.labels.get("status")): s.value for family in
               text_string_to_metric_families(httpx.get(f"{proxy.url}/metrics").text) for s in family.samples}
    assert samples[("llmsim_requests_total", "/responses", "200")] >= 3


def test_json_answers_chats_and_chains_through_the_lean_path(proxy: ServerProcess) -> None:
    client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
    first = client.responses.create(model="gpt-4o", input="Name a lighthouse.")
    second = client.responses.create(model="gpt-4o", input="Another.", previous_response_id=first.id)
    assert first.status == second.status == "completed" and second.previous_response_id == first.id
    with client.responses.stream(model="gpt-4o", input="Go on.", previous_response_id=second.id) as stream:
        final = stream.get_final_response()
    assert final.previous_response_id == second.id and final.output_text
    chat = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
    assert chat.choices[0].message.content


def test_errors_get_the_envelope_on_the_lean_path_and_the_apps(proxy: ServerProcess) -> None:
    url = f"{proxy.base_url}/responses"
    cases = [
        (httpx.post(url, content=b"{not json", headers={"Content-Type": "application/json"}), 400, None),
        (httpx.post(url, json=["a list"]), 400, "invalid_type"),
        (httpx.post(url, json=BODY, headers={"X-LLMSim-Fault": "rate_limit"}), 429, "rate_limit_exceeded"),
        (httpx.post(url, json={**BODY, "temperature": "hot"}), 400, None),  # the upstream's own 400
        (httpx.post(url, content=b"{}", headers={"Content-Type": "text/plain"}), 415, "unsupported_content_type"),
        (httpx.post(url, json=BODY, headers={"X-LLMSim-Speed": "fast"}), 400, "invalid_value"),  # the app's path
    ]
    for answer, status, code in cases:
        error = answer.json()["error"]
        assert answer.status_code == status and set(error) == {"message", "type", "param", "code"}, answer.text
        assert code is None or error["code"] == code
        assert answer.headers["x-request-id"].startswith("req_")
    assert cases[2][0].headers["retry-after"]


def test_a_stream_fault_is_applied_on_the_lean_path(proxy: ServerProcess) -> None:
    with httpx.stream("POST", f"{proxy.base_url}/responses", json=BODY, timeout=30,
                      headers={"X-LLMSim-Fault": "stream_failed"}) as answer:
        text = answer.read().decode()
    assert "event: response.failed\n" in text and "event: response.completed\n" not in text


def silent_upstream() -> tuple[socket.socket, threading.Event]:
    """A server that answers a stream's head and first event, then says nothing more until told to stop."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        connection.recv(65536)
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                           b"14\r\ndata: {\"type\":\"x\"}\n\n\r\n")
        stop.wait(30)
        connection.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener, stop


def test_a_silent_upstream_is_cut_after_the_idle_limit() -> None:
    listener, stop = silent_upstream()
    try:
        backend = ProxyBackend(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", idle_limit=0.5)
        backend.idle.every = 0.1
        chunks = backend.relay(Exchange(RESPONSES, {"model": "m", "input": "x", "stream": True})).chunks
        assert chunks is not None
        started = time.monotonic()
        assert next(chunks) == b'data: {"type":"x"}\n\n'
        with pytest.raises(ConnectionDropped):
            next(chunks)
        assert 0.4 < time.monotonic() - started < 5 and not backend.idle.streams
    finally:
        stop.set()
        listener.close()
