"""Responses WebSocket mode through the official SDK's `client.responses.connect()`."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
import websockets.sync.client
from openai.types.responses.responses_server_event import ResponseWsError
from simple_websocket import ConnectionClosed
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK, InvalidStatus
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.uri import parse_uri

from llmsim.api.websocket import Session
from llmsim.backends.sim.backend import SimBackend
from llmsim.config import DEFAULT_PROFILES_DIR
from llmsim.generation import Delta, Prompt
from llmsim.pipeline import Pipeline
from llmsim.store import MemoryStore
from llmsim.testing import ServerProcess
from llmsim.timing.profiles import load_catalog

TERMINAL = ("response.completed", "response.incomplete", "response.failed", "error")


def until_terminal(connection: Any) -> list[Any]:
    """The events of one response, up to and including its terminal event."""
    events = []
    for event in connection:
        events.append(event)
        if event.type in TERMINAL:
            return events
    raise AssertionError("the connection closed before a terminal event")


def test_same_events_as_sse_under_a_seed(client: openai.OpenAI) -> None:
    seed = {"X-LLMSim-Seed": "11"}
    with client.responses.connect(extra_headers=seed) as connection:
        connection.response.create(model="gpt-4o", input="Tell me about tides.")
        over_ws = until_terminal(connection)
    over_sse = list(client.responses.create(model="gpt-4o", input="Tell me about tides.", stream=True,
                                            extra_headers=seed))
    assert [e.type for e in over_ws] == [e.type for e in over_sse]
    assert [e.sequence_number for e in over_ws] == list(range(len(over_ws)))
    assert over_ws[-1].response.output_text == over_sse[-1].response.output_text
    assert over_ws[-1].response.usage == over_sse[-1].response.usage


def test_responses_in_sequence_chain_with_store_false(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="First question.", store=False)
        first = until_terminal(connection)[-1].response
        connection.response.create(model="gpt-4o", input="Second question.", store=False,
                                   previous_response_id=first.id)
        second = until_terminal(connection)[-1]
    assert first.status == second.response.status == "completed"
    assert second.response.previous_response_id == first.id
    # the history (first's input and output) counts in the second's input
    assert second.response.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)  # store false: only the connection knew it
    with client.responses.connect() as other:
        other.response.create(model="gpt-4o", input="Again.", previous_response_id=first.id)
        error = other.recv()
    assert isinstance(error, ResponseWsError)
    assert error.error.code == "previous_response_not_found" and error.error.param == "previous_response_id"


def test_generate_false_warms_up_a_response_to_chain_from(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="Long shared context.", store=False, generate=False)
        warm = until_terminal(connection)
        connection.response.create(model="gpt-4o", input="Now answer.", store=False,
                                   previous_response_id=warm[-1].response.id)
        answer = until_terminal(connection)[-1].response
    assert [e.type for e in warm] == ["response.created", "response.in_progress", "response.completed"]
    assert warm[-1].response.output == [] and warm[-1].response.usage.output_tokens == 0
    assert answer.status == "completed" and answer.output_text
    assert answer.usage.input_tokens > warm[-1].response.usage.input_tokens


def test_only_the_most_recent_response_is_cached(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="One.", store=False)
        first = until_terminal(connection)[-1].response
        connection.response.create(model="gpt-4o", input="Two.", store=False)
        until_terminal(connection)
        connection.response.create(model="gpt-4o", input="Three.", previous_response_id=first.id)
        error = connection.recv()
    assert error.type == "error" and error.error.code == "previous_response_not_found"


def test_a_failed_continuation_evicts_the_cached_response(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="One.", store=False)
        first = until_terminal(connection)[-1].response
        connection.response.create(model="gpt-4o", input="Two.", previous_response_id=first.id, temperature=5)
        bad = connection.recv()
        connection.response.create(model="gpt-4o", input="Two.", previous_response_id=first.id)
        evicted = connection.recv()
    assert bad.type == "error" and bad.status == 400 and bad.error.param == "temperature"
    assert evicted.type == "error" and evicted.error.code == "previous_response_not_found"


def test_stored_responses_chain_across_connections(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="Remember this.")
        first = until_terminal(connection)[-1].response
    assert client.responses.retrieve(first.id).output_text == first.output_text
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="And now?", previous_response_id=first.id)
        assert until_terminal(connection)[-1].type == "response.completed"


def test_errors_are_error_events_and_the_connection_survives(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        connection.send_raw("{not json")
        invalid_json = connection.recv()
        connection.send({"type": "response.cancel"})  # type: ignore[typeddict-item]
        unknown_type = connection.recv()
        connection.response.create(model="gpt-4o", input="Hi.", background=True)
        background = connection.recv()
        connection.send({"type": "response.create", "model": "gpt-4o", "input": "Hi.", "max_tokens": 5})  # type: ignore[typeddict-unknown-key]
        unknown_param = connection.recv()
        connection.response.create(model="gpt-4o", input="Hi.", stream_id="lane-a")
        events = until_terminal(connection)
    assert invalid_json.type == "error" and invalid_json.status == 400
    assert invalid_json.error.type == "invalid_request_error"
    assert unknown_type.error.param == "type" and "response.create" in unknown_type.error.message
    assert background.error.param == "background" and background.status == 400
    assert unknown_param.error.message == "Unknown parameter: 'max_tokens'."  # refused always
    assert unknown_param.error.code == "unknown_parameter"
    assert events[-1].type == "response.completed"
    assert {event.stream_id for event in events} == {"lane-a"}  # the lane is echoed on every event


def test_faults_reach_websocket_mode(client: openai.OpenAI) -> None:
    with client.responses.connect(extra_headers={"X-LLMSim-Fault": "rate_limit"}) as connection:
        connection.response.create(model="gpt-4o", input="Hi.")
        limited = connection.recv()
    assert isinstance(limited, ResponseWsError) and limited.status == 429
    assert limited.error.code == "rate_limit_exceeded" and limited.error.headers["retry-after"]
    with client.responses.connect(extra_headers={"X-LLMSim-Fault": "stream_failed;after_events=4"}) as connection:
        connection.response.create(model="gpt-4o", input="Hi.")
        events = until_terminal(connection)
    assert events[-1].type == "response.failed" and events[-1].response.error.code == "server_error"


@pytest.mark.parametrize("prefix", ["/openai/v1", "/v1", "/v3", ""])
def test_every_mount_point_accepts_the_upgrade(server: ServerProcess, prefix: str) -> None:
    client = openai.OpenAI(base_url=server.url + prefix, api_key="sk-test", max_retries=0)
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o-mini", input="Hello.", max_output_tokens=16)
        assert until_terminal(connection)[-1].type == "response.incomplete"


# The API key's test and the size limit's share a server (a start costs a core 1.5 s): the key's test sends
# small messages, and the size limit's test has a key of its own, sk-test.
KEYED_AND_LIMITED = ("--api-key", "sk-right,sk-test", "--max-body-bytes", "4096")


def test_the_api_key_is_checked_at_the_handshake(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*KEYED_AND_LIMITED)
    wrong = openai.OpenAI(base_url=server.base_url, api_key="sk-wrong-key", max_retries=0)
    with pytest.raises(InvalidStatus) as refused:
        wrong.responses.connect().enter()
    assert refused.value.response.status_code == 401
    assert b"invalid_api_key" in refused.value.response.body
    right = openai.OpenAI(base_url=server.base_url, api_key="sk-right", max_retries=0)
    with right.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="Hi.")
        assert until_terminal(connection)[-1].type == "response.completed"


def test_a_message_over_the_size_limit_closes_the_connection(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*KEYED_AND_LIMITED)
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="small")
        assert until_terminal(connection)[-1].type == "response.completed"
        connection.response.create(model="gpt-4o", input="x" * 8192)
        with pytest.raises(ConnectionClosedError) as closed:
            connection.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big


# --- a client that goes away mid-stream stops generation (the session with a stand-in socket) ---------


class Watched:
    """The simulator, noting how many deltas it produced and whether it was stopped."""

    name = "watched"
    computes = False

    def __init__(self) -> None:
        self.produced = 0
        self.closed = False

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        try:
            for delta in SimBackend().generate(prompt):
                self.produced += 1
                yield delta
        except GeneratorExit:
            self.closed = True
            raise


class Socket:
    """Delivers the queued messages, then fails sends after `keep` events, as a socket whose peer left."""

    def __init__(self, messages: list[str], keep: int) -> None:
        self.messages = messages
        self.keep = keep
        self.sent: list[str] = []

    def receive(self, timeout: float | None = None) -> str:
        if not self.messages:
            raise ConnectionClosed()
        return self.messages.pop(0)

    def send(self, data: str) -> None:
        if len(self.sent) == self.keep:
            raise ConnectionClosed()
        self.sent.append(data)


def test_a_client_that_disconnects_stops_generation() -> None:
    backend = Watched()
    store = MemoryStore()
    pipeline = Pipeline(load_catalog([DEFAULT_PROFILES_DIR]), backend, store, seed=1)
    socket = Socket(['{"type": "response.create", "model": "gpt-4o", "input": "Write a lot.", '
                     '"text": {"verbosity": "high"}}'], keep=5)
    Session(socket, pipeline).serve()
    assert len(socket.sent) == 5
    assert backend.closed
    assert backend.produced < 20  # of the hundreds of deltas the full answer has
    assert len(store) == 0  # the cut response was never completed, so never stored


def _raw_upgrade(server: ServerProcess, headers: dict[str, str], rcvbuf: int | None = None) -> tuple[
        socket.socket, ClientProtocol]:
    """A WebSocket opened by hand on a socket of the test's own (websockets' sans-I/O protocol parses the frames)."""
    sock = socket.socket()
    if rcvbuf is not None:  # before connect: the window the server may fill is this small
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", server.port))
    protocol = ClientProtocol(parse_uri(server.base_url.replace("http", "ws", 1) + "/responses"), max_size=None)
    request = protocol.connect()
    for name, value in headers.items():
        request.headers[name] = value
    protocol.send_request(request)
    sock.sendall(b"".join(protocol.data_to_send()))
    return sock, protocol


def _opened(sock: socket.socket, protocol: ClientProtocol) -> None:
    """Read the server's `101` (and nothing after it: a tiny read at a time)."""
    while protocol.state is not State.OPEN:
        data = sock.recv(1)
        assert data, "closed during the handshake"
        protocol.receive_data(data)
        assert protocol.handshake_exc is None, protocol.handshake_exc
    list(protocol.events_received())


def test_a_slow_reader_gets_every_frame_whole(server: ServerProcess) -> None:
    """A ~400 KB answer to a client whose receive buffer is 4 KB and that stops reading for a while: the server's
    writes are partial, and each frame must still arrive whole (simple-websocket alone cut them)."""
    text = "tide " * 20_000  # echoed: four events carry the text, each a ~100 KB frame: a ~400 KB answer
    sock, protocol = _raw_upgrade(server, {"Authorization": "Bearer sk-test", "X-LLMSim-Text-Mode": "echo"},
                                  rcvbuf=4096)
    _opened(sock, protocol)
    protocol.send_text(json.dumps({"type": "response.create", "model": "gpt-4o", "input": text}).encode())
    sock.sendall(b"".join(protocol.data_to_send()))
    events: list[dict[str, Any]] = []
    reads = 0
    while not events or events[-1]["type"] not in TERMINAL:
        if reads in (1, 20, 200):
            time.sleep(0.5)  # not reading: the server's send buffer fills and its next write is partial
        data = sock.recv(4096)
        reads += 1
        assert data, f"the server closed the connection after {len(events)} events"
        protocol.receive_data(data)
        for event in protocol.events_received():
            if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                events.append(json.loads(event.data))  # a cut frame would not parse (nor the frames after it)
        assert protocol.parser_exc is None, protocol.parser_exc
    sock.close()
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == text
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_a_bad_header_on_the_upgrade_is_an_http_400_before_the_101(server: ServerProcess) -> None:
    sock, _ = _raw_upgrade(server, {"Authorization": "Bearer sk-test", "X-LLMSim-Seed": "not-a-number"})
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += sock.recv(65536)
    sock.close()
    assert head.startswith(b"HTTP/1.1 400"), head
    assert b" 101 " not in head and b"upgrade" not in head.lower()  # no switch (the request id may hold "101")
    error = json.loads(body)["error"]
    assert error["param"] == "X-LLMSim-Seed" or "X-LLMSim-Seed" in error["message"]
    assert error["type"] == "invalid_request_error"


def test_a_bad_handshake_is_an_http_400(server: ServerProcess) -> None:
    response = httpx.get(server.base_url + "/responses", headers={
        "Authorization": "Bearer sk-test", "Upgrade": "websocket", "Connection": "Upgrade",
        "Sec-WebSocket-Version": "13"})  # no Sec-WebSocket-Key
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_websocket_upgrade"


def test_a_silent_client_is_closed_after_the_idle_limit(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server("--ws-idle-timeout", "1")
    url = server.base_url.replace("http", "ws", 1) + "/responses"
    with websockets.sync.client.connect(url, additional_headers={"Authorization": "Bearer sk-test"}) as ws:
        started = time.monotonic()
        with pytest.raises(ConnectionClosedOK) as closed:
            ws.recv(timeout=10)
        assert 0.9 <= time.monotonic() - started < 5
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001


def test_a_client_that_never_reads_is_closed(shared_server: Callable[..., ServerProcess]) -> None:
    """Its frames wait for a reader until the idle limit; then the server closes the connection, not holding it."""
    server = shared_server("--ws-idle-timeout", "1")
    sock, protocol = _raw_upgrade(server, {"Authorization": "Bearer sk-test", "X-LLMSim-Text-Mode": "echo"},
                                  rcvbuf=4096)
    _opened(sock, protocol)
    protocol.send_text(json.dumps({"type": "response.create", "model": "gpt-4o",
                                   "input": "never read " * 300_000}).encode())
    sock.sendall(b"".join(protocol.data_to_send()))
    time.sleep(3)  # past the write limit, reading nothing
    sock.settimeout(10)
    received = 0
    while chunk := sock.recv(1 << 20):  # what the kernel buffered, then the end of the connection
        received += len(chunk)
    sock.close()
    assert received < 3_300_000 * 4  # cut before the answer's frames were all written
