"""The in-memory store's bounds (entries, TTL) directly and through a real server."""

from __future__ import annotations

import time
from collections.abc import Callable

import openai
import pytest

from llmsim.store import MemoryStore
from llmsim.testing import ServerProcess
from stateful import Clock, record


def test_oldest_entries_are_evicted_first() -> None:
    store = MemoryStore(max_entries=2, ttl_seconds=0)
    for i in range(3):
        store.put(record(f"resp_{i}"))
    assert store.get("resp_0") is None and store.get("resp_1") and store.get("resp_2")
    assert len(store) == 2


def test_entries_expire_after_ttl() -> None:
    clock = Clock(0.0)
    store = MemoryStore(max_entries=10, ttl_seconds=60, clock=clock)
    store.put(record("resp_old"))
    clock.now = 30
    store.put(record("resp_new"))
    clock.now = 60.5
    assert store.get("resp_old") is None and store.get("resp_new") is not None
    clock.now = 91
    assert store.get("resp_new") is None and len(store) == 0


def test_zero_disables() -> None:
    clock = Clock(0.0)
    nothing = MemoryStore(max_entries=0, ttl_seconds=60, clock=clock)
    nothing.put(record("resp_1"))
    assert nothing.get("resp_1") is None
    forever = MemoryStore(max_entries=10, ttl_seconds=0, clock=clock)
    forever.put(record("resp_1"))
    clock.now = 10**9
    assert forever.get("resp_1") is not None


def test_delete() -> None:
    store = MemoryStore()
    store.put(record("resp_1"))
    assert store.delete("resp_1") and not store.delete("resp_1") and store.get("resp_1") is None


def test_server_evicts_by_entries(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server("--store-max-entries", "2")
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    ids = [client.responses.create(model="gpt-4o", input=f"n{i}").id for i in range(3)]
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(ids[0])
    assert [client.responses.retrieve(i).id for i in ids[1:]] == ids[1:]


def test_server_store_disabled(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server(env={"LLMSIM_STORE_MAX_ENTRIES": "0"})
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    response = client.responses.create(model="gpt-4o", input="hi")
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)


def test_server_expires_by_ttl(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server("--store-ttl", "0.5")
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    response = client.responses.create(model="gpt-4o", input="hi")
    assert client.responses.retrieve(response.id).id == response.id
    time.sleep(0.6)  # past the TTL: the entry must be gone
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)
