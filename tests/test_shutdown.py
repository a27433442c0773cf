"""SIGTERM: in-flight streams finish within --graceful-timeout, and what is left is ended with a terminal event.

Each test needs a server of its own (it is the one being stopped), paced so a stream lasts a second or more.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import gevent
import httpx
import openai
import pytest
import websockets.sync.client
from websockets.exceptions import ConnectionClosed

from llmsim.runtime import shutdown, waits
from llmsim.runtime.fairness import fair
from llmsim.testing import RedisServer, ServerProcess

LONG = "Tell me about tides. " * 300  # echoed: an answer of ~1,500 tokens, ~20 s at --speed 1


def _client(server: ServerProcess, echo: bool = False) -> openai.OpenAI:
    headers = {"X-LLMSim-Text-Mode": "echo"} if echo else None
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=30,
                         default_headers=headers)


def _stream(client: openai.OpenAI, tokens: int, ends: list[Any], started: threading.Semaphore) -> None:
    """One paced Responses stream; its last event (or the exception that ended it) goes to `ends`."""
    last: Any = None
    try:
        with client.responses.create(model="gpt-4o", input=LONG, max_output_tokens=tokens,
                                     stream=True) as stream:
            for event in stream:
                if last is None:
                    started.release()
                last = event
        ends.append(last)
    except Exception as error:  # noqa: BLE001 - the test says which stream ended how
        if last is None:
            started.release()
        ends.append(error)


def _chat(client: openai.OpenAI, ends: list[Any], started: threading.Semaphore) -> None:
    """A paced Chat Completions stream; the error chunk it may end with is what the SDK raises."""
    first = True
    try:
        for _ in client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": LONG}],
                                                max_tokens=2000, stream=True):
            if first:
                started.release()
                first = False
        ends.append("done")
    except openai.APIError as error:
        if first:
            started.release()
        ends.append(error)


def _socket(server: ServerProcess, ends: list[Any], started: threading.Semaphore) -> None:
    """A paced response over WebSocket mode: its last event, then the close code."""
    url = server.base_url.replace("http", "ws", 1) + "/responses"
    headers = {"Authorization": "Bearer sk-test", "X-LLMSim-Text-Mode": "echo"}
    last: Any = None
    with websockets.sync.client.connect(url, additional_headers=headers, max_size=None) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "gpt-4o", "input": LONG}))
        try:
            while True:
                event = json.loads(ws.recv(timeout=30))
                if last is None:
                    started.release()
                last = event
        except ConnectionClosed as closed:
            ends.append((last, closed.rcvd.code if closed.rcvd else None))


def _run(targets: list[Any]) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, args=args, daemon=True) for target, args in targets]
    for thread in threads:
        thread.start()
    return threads


def test_sigterm_lets_twenty_paced_streams_finish() -> None:
    """20 streams of ~1-2 s at SIGTERM: every one completes (nothing cut at 5 s as gunicorn did), no new
    connection is taken, and the server exits once they are done."""
    with ServerProcess("--speed", "1", "--graceful-timeout", "20") as server:
        client = _client(server, echo=True)
        ends: list[Any] = []
        started = threading.Semaphore(0)
        threads = _run([(_stream, (client, 60 + 4 * i, ends, started)) for i in range(20)])
        for _ in threads:
            assert started.acquire(timeout=30)
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        for thread in threads:
            thread.join(timeout=30)
        assert len(ends) == 20
        assert all(getattr(end, "type", None) in ("response.completed", "response.incomplete") for end in ends), ends
        time.sleep(0.3)  # the listener closes within a moment of the signal
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{server.url}/llmsim/health", timeout=2)
        assert server.process.wait(timeout=15) == 0
        assert time.monotonic() - stopped < 10


def test_past_the_graceful_timeout_streams_end_failed_and_stay_stored(tmp_path: Path) -> None:
    """Streams too long for a 0.5 s graceful timeout end with `response.failed` (Chat: an error chunk; WebSocket
    mode: the event, then close code 1012) whose code says the server shut down; on SQLite they, and a
    background response, are stored failed, readable after a restart."""
    store = f"sqlite:///{tmp_path / 'llmsim.db'}"
    with ServerProcess("--speed", "1", "--graceful-timeout", "0.5", "--store", store) as server:
        client = _client(server, echo=True)
        queued = client.responses.create(model="gpt-4o", input=LONG, max_output_tokens=2000,
                                         background=True)
        ends: list[Any] = []
        chat_ends: list[Any] = []
        socket_ends: list[Any] = []
        started = threading.Semaphore(0)
        threads = _run([*[(_stream, (client, 2000, ends, started)) for _ in range(3)],
                        (_chat, (client, chat_ends, started)), (_socket, (server, socket_ends, started))])
        for _ in threads:
            assert started.acquire(timeout=30)
        assert server.process is not None
        stopped = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(timeout=30)
        assert server.process.wait(timeout=15) == 0
        assert time.monotonic() - stopped < 6  # 0.5 s, the cut, and gunicorn noticing the connections are gone
    assert len(ends) == 3
    for end in ends:
        assert getattr(end, "type", None) == "response.failed", end
        assert end.response.error.code == "server_shutting_down"
    assert len(chat_ends) == 1 and isinstance(chat_ends[0], openai.APIError), chat_ends
    assert "shutting down" in str(chat_ends[0])
    [(last, code)] = socket_ends  # WebSocket mode: the response fails, then the connection closes with 1012
    assert last["type"] == "response.failed" and last["response"]["error"]["code"] == "server_shutting_down"
    assert code == 1012
    with ServerProcess("--store", store) as again:
        client = _client(again)
        for end in ends:
            stored = client.responses.retrieve(end.response.id)
            assert stored.status == "failed" and stored.error is not None
            assert stored.error.code == "server_shutting_down"
        background = client.responses.retrieve(queued.id)
        assert background.status == "failed"
        assert background.error is not None and background.error.code == "server_shutting_down"


def _message(server: ServerProcess, ends: list[Any], started: threading.Semaphore) -> None:
    """A paced Messages stream (the anthropic SDK): an `error` event is what the SDK raises."""
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0, timeout=30,
                                 default_headers={"X-LLMSim-Text-Mode": "echo"})
    first = True
    try:
        with client.messages.stream(model="claude-sonnet-4-6", max_tokens=2000,
                                    messages=[{"role": "user", "content": LONG}]) as stream:
            for _ in stream:
                if first:
                    started.release()
                    first = False
        ends.append("done")
    except Exception as error:  # noqa: BLE001 - the test says which stream ended how
        if first:
            started.release()
        ends.append(error)


def test_past_the_graceful_timeout_messages_streams_end_with_an_error_event() -> None:
    """Every Messages stream still running at the cut ends with Anthropic's `error` event saying the server shut
    down (the SDK raises it as an API error), none with a dropped connection."""
    with ServerProcess("--speed", "1", "--graceful-timeout", "0.5") as server:
        ends: list[Any] = []
        started = threading.Semaphore(0)
        threads = _run([(_message, (server, ends, started)) for _ in range(10)])
        for _ in threads:
            assert started.acquire(timeout=30)
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(timeout=30)
        assert server.process.wait(timeout=15) == 0
    assert len(ends) == 10
    for end in ends:
        assert isinstance(end, anthropic.APIStatusError) and "shutting down" in str(end), repr(end)
        assert end.body == {"type": "error", "error": {"type": "api_error", "message": shutdown.ShuttingDown().message}}


def test_on_redis_a_cut_stream_and_a_background_response_are_stored_failed() -> None:
    """The same cut with a fleet's store: what the shutdown ended is failed in Redis, not lost or left running."""
    with RedisServer() as redis, \
            ServerProcess("--speed", "1", "--graceful-timeout", "0.5", "--store", redis.url) as server:
        client = _client(server, echo=True)
        queued = client.responses.create(model="gpt-4o", input=LONG, max_output_tokens=2000, background=True)
        ends: list[Any] = []
        started = threading.Semaphore(0)
        threads = _run([(_stream, (client, 2000, ends, started))])
        assert started.acquire(timeout=30)
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        threads[0].join(timeout=30)
        assert server.process.wait(timeout=15) == 0
        [end] = ends
        assert getattr(end, "type", None) == "response.failed" and end.response.error.code == "server_shutting_down"
        with ServerProcess("--store", redis.url) as again:
            client = _client(again)
            for response_id in (end.response.id, queued.id):
                stored = client.responses.retrieve(response_id)
                assert stored.status == "failed" and stored.error is not None, stored
                assert stored.error.code == "server_shutting_down"


@pytest.mark.parametrize("graceful", [30.0, 0.5])
def test_sigterm_waits_for_a_background_response_with_no_connection_open(tmp_path: Path, graceful: float) -> None:
    """A background response has no connection that keeps the worker up: it is waited for as a request is, and
    what the graceful timeout cuts is stored failed, never left in progress."""
    store = f"sqlite:///{tmp_path / 'llmsim.db'}"
    finishes = graceful > 1  # 16 tokens at gpt-4o's pace take about a second; ~1,500 echoed ones ~20 s
    with ServerProcess("--speed", "1", "--graceful-timeout", str(graceful), "--store", store) as server:
        client = _client(server, echo=not finishes)
        queued = client.responses.create(model="gpt-4o", input="Hi" if finishes else LONG, background=True,
                                         max_output_tokens=16 if finishes else 2000)
        deadline = time.monotonic() + 30
        while client.responses.retrieve(queued.id).status == "queued":  # its worker has taken it
            assert time.monotonic() < deadline
            time.sleep(0.02)
        client.close()
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=graceful + 15) == 0
    with ServerProcess("--store", store) as again:
        stored = _client(again).responses.retrieve(queued.id)
    if finishes:  # to its end: the 16 tokens it was allowed
        assert stored.status == "incomplete" and stored.usage is not None and stored.usage.output_tokens == 16, stored
    else:
        assert stored.status == "failed" and stored.error is not None, stored
        assert stored.error.code == "server_shutting_down"


def test_a_cut_that_lands_on_a_turn_is_raised_at_the_next_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn between two slices of work is not a wait: the cut that finds a request there does not end it outside
    its event builder (the client would see its connection drop); the request's next wait raises it instead."""
    monkeypatch.setattr(time, "sleep", gevent.sleep)  # as gevent patches it in a worker
    monkeypatch.setattr(shutdown.state, "cutting", False)
    seen: list[object] = []

    def work() -> None:
        shutdown.working()
        try:
            seen.extend(fair(iter(range(3)), slice_seconds=0))  # a turn after every item
            waits.wait(0.01)
        except shutdown.ShuttingDown:
            seen.append("cut")
        finally:
            shutdown.done()

    worker = gevent.spawn(work)
    gevent.sleep(0)  # it runs to its first turn
    shutdown.cut()
    worker.join(timeout=5)
    assert seen == [0, 1, 2, "cut"]
