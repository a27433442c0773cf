"""Who may see what: the admin API behind a key, stored objects scoped to the API key that made them."""

from __future__ import annotations

import json
import sqlite3
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


def test_the_api_key_guards_the_admin_api_when_no_admin_key_is_set(start_server: Start) -> None:
    server = start_server("--api-key", "sk-a,sk-b")
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
def store_flags(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, ...]:
    return () if request.param == "memory" else ("--store", f"sqlite:///{tmp_path / 'store.db'}")


def test_stored_objects_are_scoped_to_the_api_key_that_made_them(
        start_server: Start, sdk_client: Client, store_flags: tuple[str, ...]) -> None:
    server = start_server("--api-key", "sk-a,sk-b", *store_flags)
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
