"""Who may see what: the admin API behind a key, stored objects scoped to the API key that made them."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest
from websockets.sync.client import connect

from llmsim.cli import exposure_warning
from llmsim.config import Settings
from llmsim.testing import ServerProcess

Start = Callable[..., ServerProcess]
Client = Callable[..., openai.OpenAI]


ALPHA, BRAVO = "sk-alpha-000000001", "sk-bravo-000000002"


KEYS = ("--api-key", f"sk-a,sk-b,{ALPHA},{BRAVO}")
ADMIN = {"Authorization": "Bearer admin-secret"}


@pytest.fixture
def keyed_server(shared_server: Start) -> ServerProcess:
    """The module's server with API keys and the memory store (a start costs a core 1.5 s): the tests on it use
    keys of their own (sk-a and sk-b, or alpha's and bravo's), and a key sees only what it made."""
    return shared_server(*KEYS)


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.db'}"


@pytest.fixture
def admin_keyed(shared_server: Start, sqlite_store: str) -> ServerProcess:
    """The module's server with API keys, an admin key and SQLite, its request log emptied (the admin reset) for
    each test that asks for it, as a fresh server's is."""
    server = shared_server(*KEYS, "--admin-key", "admin-secret", "--store", sqlite_store)
    httpx.post(f"{server.url}/llmsim/admin/faults/reset", headers=ADMIN).raise_for_status()
    return server


def test_the_api_key_guards_the_admin_api_when_no_admin_key_is_set(keyed_server: ServerProcess) -> None:
    server = keyed_server
    admin = f"{server.url}/llmsim/admin"
    for method, path in (("GET", "/faults"), ("PUT", "/faults"), ("GET", "/requests"), ("POST", "/faults/reset"),
                         ("GET", "/scenarios/transcript"), ("PUT", "/scenarios")):
        for headers in ({}, {"Authorization": "Bearer sk-c"}):
            denied = httpx.request(method, admin + path, headers=headers, json={})
            assert denied.status_code == 401, (method, path)
            assert denied.json()["error"]["code"] == "invalid_api_key"
    assert httpx.get(f"{admin}/scenarios/transcript", headers={"Authorization": "Bearer sk-b"}).status_code == 200
    assert httpx.get(f"{admin}/faults", headers={"Authorization": "Bearer sk-a"}).status_code == 200
    assert httpx.get(f"{server.url}/llmsim/health").json() == {"status": "ok"}


def test_an_open_admin_api_beyond_loopback_is_warned_about() -> None:
    assert exposure_warning(Settings(host="0.0.0.0")) is not None
    assert exposure_warning(Settings(host="192.168.1.4")) is not None
    for quiet in (Settings(host="127.0.0.1"), Settings(host="localhost"), Settings(host="::1"),
                  Settings(host="0.0.0.0", api_key="sk-a"), Settings(host="0.0.0.0", admin_key="adm")):
        assert exposure_warning(quiet) is None, quiet


@pytest.fixture(params=["memory", "sqlite"])
def scoped_server(request: pytest.FixtureRequest) -> ServerProcess:
    """sk-a and sk-b's server: `keyed_server`, on the memory store, or `admin_keyed`, on SQLite."""
    return request.getfixturevalue("keyed_server" if request.param == "memory" else "admin_keyed")


def test_stored_objects_are_scoped_to_the_api_key_that_made_them(
        scoped_server: ServerProcess, sdk_client: Client) -> None:
    server = scoped_server
    a, b = sdk_client(server, "sk-a"), sdk_client(server, "sk-b")
    response = a.responses.create(model="gpt-4o", input="hi")
    queued = a.responses.create(model="gpt-4o", input="later", background=True)
    conversation = a.conversations.create(items=[{"role": "user", "content": "remember this"}])
    item_id = a.conversations.items.list(conversation.id).data[0].id

    denied: list[Callable[[], object]] = [
        lambda: b.responses.retrieve(response.id),
        lambda: b.responses.input_items.list(response.id),
        lambda: b.responses.delete(response.id),
        lambda: b.responses.cancel(queued.id),
        lambda: b.responses.create(model="gpt-4o", input="more", previous_response_id=response.id),
        lambda: b.responses.input_tokens.count(model="gpt-4o", input="more", previous_response_id=response.id),
        lambda: b.conversations.retrieve(conversation.id),
        lambda: b.conversations.update(conversation.id, metadata={"k": "v"}),
        lambda: b.conversations.items.list(conversation.id),
        lambda: b.conversations.items.retrieve(item_id, conversation_id=conversation.id),
        lambda: b.conversations.items.create(conversation.id, items=[{"role": "user", "content": "x"}]),
        lambda: b.conversations.items.delete(item_id, conversation_id=conversation.id),
        lambda: b.conversations.delete(conversation.id),
        lambda: b.responses.create(model="gpt-4o", input="more", conversation=conversation.id),
    ]
    for call in denied:  # as missing as on the live API (an unknown previous response is its 400 there)
        with pytest.raises((openai.NotFoundError, openai.BadRequestError)) as caught:
            call()
        assert caught.value.code in ("previous_response_not_found", None) or "not found" in caught.value.message

    with connect(f"ws://127.0.0.1:{server.port}/v1/responses",
                 additional_headers={"Authorization": "Bearer sk-b"}) as ws:  # WebSocket mode chains the same way
        ws.send(json.dumps({"type": "response.create", "model": "gpt-4o", "input": "more",
                            "previous_response_id": response.id}))
        event = json.loads(ws.recv(timeout=10))
        assert (event["type"], event["status"], event["error"]["code"]) == ("error", 400, "previous_response_not_found")

    # nothing of the other key's changed, and the owner still sees and chains from everything
    assert a.responses.retrieve(response.id).output_text == response.output_text
    assert a.responses.create(model="gpt-4o", input="more", previous_response_id=response.id).status == "completed"
    assert a.conversations.retrieve(conversation.id).metadata == {}
    assert [item.id for item in a.conversations.items.list(conversation.id).data] == [item_id]
    a.responses.retrieve(queued.id)
    # b's own objects are b's
    mine = b.responses.create(model="gpt-4o", input="mine")
    assert b.responses.retrieve(mine.id).id == mine.id
    with pytest.raises(openai.NotFoundError):
        a.responses.retrieve(mine.id)


def test_without_api_keys_every_client_shares_one_scope(server: ServerProcess, sdk_client: Client) -> None:
    response = sdk_client(server, "sk-one").responses.create(model="gpt-4o", input="hi")
    assert sdk_client(server, "sk-two").responses.retrieve(response.id).id == response.id


OLD_SCHEMA = """
CREATE TABLE responses (
    id TEXT PRIMARY KEY, stored_at REAL NOT NULL, status TEXT NOT NULL,
    response TEXT NOT NULL, input_items TEXT NOT NULL, history TEXT NOT NULL,
    stopping INTEGER NOT NULL DEFAULT 0, worker TEXT);
CREATE TABLE conversations (
    id TEXT PRIMARY KEY, stored_at REAL NOT NULL, created_at INTEGER NOT NULL, metadata TEXT NOT NULL);
"""


def test_a_database_from_before_scopes_still_opens_with_its_responses(
        start_server: Start, sdk_client: Client, tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA)
        response = json.dumps({"id": "resp_old", "model": "gpt-4o", "status": "completed", "output": []})
        conn.execute("INSERT INTO responses VALUES ('resp_old', 1e12, 'completed', ?, '[]', '[]', 0, NULL)",
                     (response,))
        conn.execute("INSERT INTO conversations VALUES ('conv_old', 1e12, 1, '{}')")
    server = start_server("--store", f"sqlite:///{path}")
    client = sdk_client(server)
    assert httpx.get(f"{server.base_url}/responses/resp_old").json()["id"] == "resp_old"
    assert client.conversations.retrieve("conv_old").id == "conv_old"
    assert client.responses.retrieve(client.responses.create(model="gpt-4o", input="hi").id).status == "completed"


def test_an_api_key_as_admin_credential_sees_only_what_it_made(
        keyed_server: ServerProcess, admin_keyed: ServerProcess, sdk_client: Client) -> None:
    """Issue 34, finding 3: with `--api-key k1,k2` and no --admin-key, the dashboard's JSON API and the request log
    follow the API's scoping; the admin key, where there is one, sees everything."""
    alpha, bravo = ALPHA, BRAVO
    server = keyed_server
    made = sdk_client(server, alpha).responses.create(model="gpt-4o", input="alpha's secret")
    own = sdk_client(server, bravo).responses.create(model="gpt-4o", input="bravo's own")

    def get(path: str, key: str) -> httpx.Response:
        return httpx.get(f"{server.url}{path}", headers={"Authorization": f"Bearer {key}"})

    assert get(f"/llmsim/ui/api/responses/{made.id}", bravo).status_code == 404  # as the API answers it
    assert get(f"/llmsim/ui/api/responses/{made.id}", alpha).json()["response"]["id"] == made.id
    assert get(f"/llmsim/ui/api/responses/{own.id}", bravo).status_code == 200
    for key, mine in ((alpha, "sk-…0001"), (bravo, "sk-…0002")):
        logged = get("/llmsim/admin/requests", key).json()["data"]
        assert [entry["api_key"] for entry in logged] == [mine]
        assert "owner" not in logged[0]
        assert [entry["api_key"] for entry in get("/llmsim/ui/api/state", key).json()["recent"]] == [mine]

    keyed = admin_keyed
    made = sdk_client(keyed, alpha).responses.create(model="gpt-4o", input="alpha's secret")
    sdk_client(keyed, bravo).responses.create(model="gpt-4o", input="bravo's own")
    admin = {"Authorization": "Bearer admin-secret"}
    assert httpx.get(f"{keyed.url}/llmsim/ui/api/responses/{made.id}", headers=admin).status_code == 200
    assert len(httpx.get(f"{keyed.url}/llmsim/admin/requests", headers=admin).json()["data"]) == 2


NESTED = "((a{100}){100}){100}"  # a million characters when expanded: rstr took 7-35 s and returned 1 MB


def test_a_nested_repeat_pattern_is_generated_within_budget_while_health_answers(server: ServerProcess) -> None:
    """Issue 34, finding 4: the tool's arguments come back bounded and fast, and the worker keeps answering."""
    tool = {"type": "function", "name": "spell", "parameters": {
        "type": "object", "properties": {"word": {"type": "string", "pattern": NESTED},
                                         "code": {"type": "string", "pattern": r"^[A-Z]{2}-\d{4}$"}},
        "required": ["word", "code"]}}
    warm = {"type": "function", "name": "warm", "parameters": {"type": "object", "properties": {
        "word": {"type": "string", "pattern": "a{3}"}}, "required": ["word"]}}
    httpx.post(f"{server.base_url}/responses", timeout=30, json={  # the worker's first tool call loads Faker
        "model": "gpt-4o", "input": "warm up", "tools": [warm], "tool_choice": "required"}).raise_for_status()
    before: list[float] = []  # the machine's own noise: health's latency with nothing else running
    during: list[float] = []
    polling = threading.Event()
    done = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=server.url) as client:
            client.get("/llmsim/health")  # the connection is open before the request starts
            ended = time.perf_counter() + 0.3
            while not done.is_set():
                started = time.perf_counter()
                assert client.get("/llmsim/health").status_code == 200
                (during if polling.is_set() else before).append(time.perf_counter() - started)
                if started > ended:
                    polling.set()

    poller = threading.Thread(target=poll)
    poller.start()
    polling.wait(10)
    try:
        started = time.perf_counter()
        answer = httpx.post(f"{server.base_url}/responses", timeout=30, json={
            "model": "gpt-4o", "input": "spell it", "tools": [tool], "tool_choice": "required"})
        took = time.perf_counter() - started
    finally:
        done.set()
        poller.join()
    assert answer.status_code == 200, answer.text
    arguments = json.loads(answer.json()["output"][0]["arguments"])
    assert set(arguments["word"]) == {"a"} and len(arguments["word"]) <= 10_000  # cut at the budget, not 1 MB
    assert re.fullmatch(r"[A-Z]{2}-\d{4}", arguments["code"])  # an ordinary pattern still matches
    assert took < 2.0 and len(answer.content) < 20_000
    assert during and max(during) < 0.1 + max(before), (during, max(before))  # 100 ms, beyond the machine's noise


@pytest.mark.parametrize("pattern", [r"^\d{4}-\d{2}-\d{2}$", r"^#[0-9a-fA-F]{6}$", r"^(?P<q>['\"])\w+(?P=q)$",
                                     r"^[A-Z][a-z]+(?: [A-Z][a-z]+){1,3}$", r"^(x|yy|zzz){3,5}$", r"^[^\s@]+@\w+\.com$",
                                     r"^a{0,100000}b$"])
def test_patterns_within_budget_still_match(server: ServerProcess, sdk_client: Client, pattern: str) -> None:
    """The budget cuts only what cannot fit: ordinary patterns (and huge optional repeats) still give a match."""
    schema = {"type": "object", "properties": {"value": {"type": "string", "pattern": pattern}},
              "required": ["value"], "additionalProperties": False}
    answer = sdk_client(server).responses.create(model="gpt-4o", input="one value", text={"format": {
        "type": "json_schema", "name": "value", "schema": schema, "strict": True}})
    assert re.search(pattern, json.loads(answer.output_text)["value"])
