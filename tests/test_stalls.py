"""No request freezes or parks the server: waits yield, are bounded, and end when their client leaves.

Against a real server: raw sockets stand in for many clients at once (and for clients that hang up),
the openai SDK for the errors a client sees. The worker's open sockets are read from /proc.
"""

from __future__ import annotations

import ast
import json
import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest

from llmsim.testing import ServerProcess
from stateful import slow_profiles

FAULT = "X-LLMSim-Fault"
SPEED = "X-LLMSim-Speed"


def send(server: ServerProcess, body: dict, headers: dict[str, str] | None = None,
         path: str = "/openai/v1/responses") -> socket.socket:
    """POST on a fresh connection and leave the answer unread."""
    data = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": "127.0.0.1", "Content-Type": "application/json",
                                                  "Content-Length": str(len(data)), **(headers or {})}.items())
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(f"POST {path} HTTP/1.1\r\n{head}\r\n".encode() + data)
    return sock


def worker_sockets(server: ServerProcess) -> int:
    """Sockets open in the server's worker process (the listener included): one worker serves in the process."""
    assert server.process is not None
    worker = server.process.pid
    count = 0
    for fd in os.listdir(f"/proc/{worker}/fd"):
        try:
            count += os.readlink(f"/proc/{worker}/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return count


def wait_for(condition: Callable[[], bool], seconds: float, every: float = 0.1) -> bool:
    """`every`: a condition on the worker's sockets reads /proc, cheap enough to look at 50 times a second."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return condition()


@pytest.fixture(autouse=True)
def departed_clients_gone(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test on the session's server leaves it with the sockets it found: the clients a test let go may take the
    loaded server a moment to close, and the next test counts the worker's sockets from its own start."""
    if "server" not in request.fixturenames:
        yield
        return
    server: ServerProcess = request.getfixturevalue("server")
    before = worker_sockets(server)
    yield
    wait_for(lambda: worker_sockets(server) <= before + 1, 20, every=0.02)


@contextmanager
def waiting(server: ServerProcess, count: int, headers: dict[str, str], path: str = "/openai/v1/responses",
            **fields: object) -> Iterator[list]:
    chat = path.endswith("/chat/completions")
    prompt = {"messages": [{"role": "user", "content": "hi"}]} if chat else {"input": "hi"}
    body = {"model": "gpt-4o-mini", **prompt, **fields}
    socks = [send(server, body, headers, path) for _ in range(count)]
    try:
        yield socks
    finally:
        for sock in socks:
            sock.close()


def health_seconds(client: httpx.Client) -> float:
    started = time.monotonic()
    assert client.get("/llmsim/health").status_code == 200
    return time.monotonic() - started


@pytest.mark.parametrize("stream", [False, True])
def test_health_answers_while_100_spiked_requests_wait(server: ServerProcess, stream: bool) -> None:
    """A latency spike parks its own request only: before the fix it blocked the whole worker."""
    with httpx.Client(base_url=server.url, timeout=60) as client:
        client.post("/openai/v1/responses", json={"model": "gpt-4o-mini", "input": "warm up"})
        with waiting(server, 100, {FAULT: "latency_spike;seconds=60"}, stream=stream):
            time.sleep(1.0)  # let them all reach their spike
            assert max(health_seconds(client) for _ in range(5)) < 2.0
            answered = client.post("/openai/v1/responses", json={"model": "gpt-4o-mini", "input": "hi"})
            assert answered.json()["status"] == "completed"


@pytest.mark.parametrize("headers, fields", [
    ({FAULT: "latency_spike;seconds=600"}, {"stream": True}),
    ({FAULT: "slow_stream;seconds=600"}, {"stream": True}),
    ({FAULT: "latency_spike;seconds=600"}, {}),
    ({FAULT: "timeout;seconds=600"}, {}),
    ({SPEED: "0.01"}, {"model": "gpt-5", "reasoning": {"effort": "high"}}),
    ({SPEED: "0.01"}, {"model": "gpt-5", "stream": True}),
    ({SPEED: "0.01"}, {"model": "gpt-5", "stream": True, "path": "/openai/v1/chat/completions"}),
], ids=["spike-stream", "slow-stream", "spike", "timeout", "slow-speed", "slow-speed-stream", "slow-speed-chat"])
def test_a_client_that_hangs_up_frees_its_request(server: ServerProcess, headers: dict[str, str],
                                                  fields: dict) -> None:
    """40 clients leave mid-wait: the server closes their sockets at once instead of after the wait, and
    quietly: a client that leaves is no failure of the model (no "generation failed", no traceback)."""
    httpx.post(f"{server.base_url}/responses", json={"model": "gpt-5", "input": "warm up"},
               headers={SPEED: "0"}, timeout=60)
    baseline = worker_sockets(server)
    logged = len(server.log())
    with waiting(server, 40, headers, **fields):
        # baseline + 39, not 40: the warm-up's connection may have closed
        assert wait_for(lambda: worker_sockets(server) >= baseline + 39, 10, every=0.02)
        time.sleep(0.5)  # the requests, read, have reached their waits (a few ms each on one worker)
    assert wait_for(lambda: worker_sockets(server) <= baseline + 5, 10, every=0.02), \
        "the server kept the departed clients' sockets"
    assert server.log()[logged:] == ""


def test_a_background_response_runs_on_after_its_client_hangs_up(server: ServerProcess,
                                                                 client: openai.OpenAI) -> None:
    sock = send(server, {"model": "gpt-4o-mini", "input": "hi", "background": True, "stream": True},
                {SPEED: "2"})
    data = b""
    while b"response.queued" not in data:
        data += sock.recv(65536)
    sock.close()
    response_id = json.loads(data.split(b"data: ", 1)[1].split(b"\n", 1)[0])["response"]["id"]
    assert wait_for(lambda: client.responses.retrieve(response_id).status == "completed", 30)


@pytest.mark.parametrize("name, value", [
    (SPEED, "1e-9"), (SPEED, "1e-300"),
    (FAULT, "timeout;seconds=inf"), (FAULT, "latency_spike;seconds=100000"), (FAULT, "slow_stream;seconds=nan"),
])
def test_waits_past_their_bounds_get_a_400(client: openai.OpenAI, name: str, value: str) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        client.responses.create(model="gpt-4o-mini", input="hi", extra_headers={name: value})
    assert error.value.body["param"] == name
    assert error.value.body["code"] == "invalid_value"


def test_a_fault_rule_past_the_longest_wait_is_refused(server: ServerProcess) -> None:
    answer = httpx.put(f"{server.url}/llmsim/admin/faults", json={"faults": [{"kind": "timeout", "seconds": 1e9}]})
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"


# --- input costs: linear in the input, bounded past the limits --------------------------------------------


def test_truncation_auto_over_6000_items_answers_quickly(server: ServerProcess) -> None:
    """1.6 MB of short items, far past the window: each item is counted once (it was recounted per drop)."""
    items = [{"role": "user", "content": f"note {i}: " + "the tide comes in and goes out " * 8} for i in range(6000)]
    answer = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4", "input": items, "truncation": "auto"},
                        timeout=30)
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "completed" and body["usage"]["input_tokens"] <= 8192


def test_a_body_far_past_the_window_is_refused_before_it_is_tokenized(server: ServerProcess) -> None:
    answer = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "lighthouse " * 2_700_000},
                        timeout=30)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "context_length_exceeded"


def test_a_tool_schema_asking_for_100000_items_gets_a_bounded_call(client: openai.OpenAI) -> None:
    tool = {"type": "function", "name": "plot", "description": "plot points",
            "parameters": {"type": "object", "properties": {"points": {"type": "array", "minItems": 100000,
                                                                       "items": {"type": "number"}}},
                           "required": ["points"]}}
    response = client.with_options(timeout=15).responses.create(model="gpt-4o", input="plot", tools=[tool],
                                                                tool_choice="required")
    (call,) = response.output
    assert 0 < len(json.loads(call.arguments)["points"]) <= 1000


# --- slow clients: read deadlines and a connection cap ------------------------------------------------------


def probe(server: ServerProcess, timeout: float = 10.0) -> tuple[int, float]:
    """GET /llmsim/health on a fresh connection, as a load balancer's check does: (status, seconds)."""
    started = time.monotonic()
    status = httpx.get(f"{server.url}/llmsim/health", timeout=timeout).status_code
    return status, time.monotonic() - started


def slow_clients(server: ServerProcess, count: int) -> list[socket.socket]:
    """Idle connections, requests cut inside their head, and requests cut inside their body, in turn."""
    parts = [b"", b"POST /openai/v1/responses HTTP/1.1\r\nHost: x\r\n",
             b"POST /openai/v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 100\r\n\r\n{"]
    socks = []
    for i in range(count):
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall(parts[i % 3])
        socks.append(sock)
    return socks


@pytest.fixture(scope="module")
def capped_server(shared_server: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory
                  ) -> ServerProcess:
    """A cap of 100 connections, and the slow model: for the slow clients' test and the background one (a
    background response holds a greenlet, not a connection, so neither test's load is in the other's way)."""
    return shared_server("--worker-connections", "100",
                         "--profiles-dir", str(slow_profiles(tmp_path_factory.mktemp("profiles"))))


def test_health_answers_with_three_times_the_connection_cap_held_by_slow_clients(
        capped_server: ServerProcess) -> None:
    """Before, a full pool stopped accepting: the probe waited in the backlog for a slow client to time out."""
    server = capped_server
    socks = slow_clients(server, 300)
    try:
        for _ in range(5):
            status, seconds = probe(server)
            assert status == 200 and seconds < 5.0
    finally:
        for sock in socks:
            sock.close()


def reply(sock: socket.socket, seconds: float) -> bytes:
    """What the server sends before it closes the connection (b"" when it closes saying nothing)."""
    sock.settimeout(seconds)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_a_request_slower_than_the_read_timeout_is_cut(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server("--read-timeout", "1")
    idle, in_head, in_body = slow_clients(server, 3)
    started = time.monotonic()
    assert reply(idle, 10) == b""
    assert reply(in_head, 10) == b""
    answer = reply(in_body, 10)
    assert time.monotonic() - started < 8
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "request_timeout"


def test_when_every_connection_is_busy_a_new_one_gets_a_503(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server("--worker-connections", "5")
    with waiting(server, 5, {FAULT: "latency_spike;seconds=60"}, stream=True):
        time.sleep(1.0)
        answer = httpx.get(f"{server.url}/llmsim/health", timeout=10)
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "1"
    assert answer.json()["error"]["type"] == "server_error"


def test_a_websocket_may_stay_quiet_past_the_read_timeout(shared_server: Callable[..., ServerProcess],
                                                         sdk_client: Callable[..., openai.OpenAI]) -> None:
    client = sdk_client(shared_server("--read-timeout", "1"))
    with client.responses.connect() as connection:
        time.sleep(2.5)
        connection.response.create(model="gpt-4o-mini", input="hi")
        for event in connection:
            if event.type == "response.completed":
                break
        assert event.type == "response.completed"


# --- background mode keeps pace with synchronous requests --------------------------------------------------


def test_a_hundred_background_responses_run_side_by_side(capped_server: ServerProcess,
                                                         sdk_client: Callable[..., openai.OpenAI]) -> None:
    """Paced background responses are parked greenlets: none should wait in the queue behind a small pool
    (it held 64, so under load background mode ran many times slower than the same requests made directly)."""
    client = sdk_client(capped_server)
    ids = [client.responses.create(model="slow-model", input="hi", background=True,
                                   extra_headers={SPEED: "0.25"}).id for _ in range(100)]
    statuses = Counter(client.responses.retrieve(response_id).status for response_id in ids)
    assert statuses["queued"] == 0, statuses


# --- every wait yields: nothing blocking is bound before gevent patches the worker ---------------------

BLOCKING_MODULES = {"time", "threading", "select", "socket", "queue", "subprocess"}
ROOT = Path(__file__).resolve().parent.parent / "llmsim"


def _early_bindings(tree: ast.Module) -> list[str]:
    """`from time import sleep`, `sleep=time.sleep` defaults, `default_factory=threading.Lock`, and locks,
    events or queues made at import: each keeps the unpatched object, which blocks every greenlet."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in BLOCKING_MODULES:
            found.append(f"line {node.lineno}: from {node.module} import ...")
        defaults: list[ast.expr] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
        if isinstance(node, ast.keyword) and node.arg == "default_factory":
            defaults = [node.value]
        for value in defaults:
            if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                    and value.value.id in BLOCKING_MODULES and value.attr not in ("monotonic", "time", "perf_counter")):
                found.append(f"line {value.lineno}: {value.value.id}.{value.attr} bound as a default")
    for statement in tree.body:  # module level: made at import
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            for call in ast.walk(statement.value):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and isinstance(call.func.value, ast.Name) and call.func.value.id in BLOCKING_MODULES):
                    found.append(f"line {call.lineno}: {call.func.value.id}.{call.func.attr}() at import")
    return found


def test_nothing_blocking_is_bound_at_import() -> None:
    found = {str(path.relative_to(ROOT)): problems for path in sorted(ROOT.rglob("*.py"))
             if (problems := _early_bindings(ast.parse(path.read_text())))}
    assert found == {}


def test_the_early_binding_check_finds_each_kind() -> None:
    source = ("from time import sleep\nimport threading, time\nLOCK = threading.Lock()\n"
              "def f(sleep=time.sleep): ...\nx = field(default_factory=threading.Event)\n")
    assert len(_early_bindings(ast.parse(source))) == 4
