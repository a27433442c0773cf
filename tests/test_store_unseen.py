"""Finished background responses are kept until read once (or a grace period): the entry limit evicts read ones.

Before, a background response finishing among others was evicted as soon as newer ones were stored: with
--store-max-entries 50 and 100 in flight, 11 went from `in_progress` straight to 404.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest

from llmsim.store import MemoryStore, StoredResponse, open_stores
from llmsim.store.base import FINAL_STATUSES, UNSEEN_GRACE_SECONDS
from llmsim.testing import RedisServer, ServerProcess
from stateful import Clock


def _background(response_id: str) -> StoredResponse:
    return StoredResponse({"id": response_id, "status": "queued", "output": []}, input_items=[], worker="1:test")


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    server: RedisServer = request.getfixturevalue("redis_server")
    import redis

    redis.Redis.from_url(server.url).flushdb()
    return server.url


def test_finished_background_responses_wait_to_be_read(store_url: str) -> None:
    """10 finished background responses under a limit of 5: none goes before it is read; once read, the entry
    limit takes them first, before the unread ones."""
    stores = open_stores(store_url, max_entries=5, ttl_seconds=0)
    store = stores.responses
    try:
        for i in range(10):
            store.put(_background(f"resp_{i}"))
        for i in range(10):  # each finishes as the next ones are stored and finish
            assert store.append(f"resp_{i}", [], {"id": f"resp_{i}", "status": "completed", "output": []})
            store.put(StoredResponse({"id": f"resp_plain_{i}", "status": "completed", "output": []}, []))
        for i in range(3):
            found = store.get(f"resp_{i}")  # read once: from now on, evictable
            assert found is not None and found.status in FINAL_STATUSES
        store.put(StoredResponse({"id": "resp_last", "status": "completed", "output": []}, []))
        assert [store.get(f"resp_{i}") is None for i in range(3)] == [True] * 3
        assert all(store.get(f"resp_{i}") is not None for i in range(3, 10))  # unread: still there
    finally:
        stores.close()


def test_the_grace_period_ends_the_hold() -> None:
    """An unread finished response is kept for UNSEEN_GRACE_SECONDS, then evicted like any other."""
    clock = Clock(0.0)
    store = MemoryStore(max_entries=1, ttl_seconds=0, clock=clock)
    store.put(_background("resp_bg"))
    store.append("resp_bg", [], {"id": "resp_bg", "status": "completed", "output": []})
    store.put(StoredResponse({"id": "resp_a", "status": "completed", "output": []}, []))
    assert len(store) == 2  # over the limit: the unread one is held (len reads nothing)
    clock.now = UNSEEN_GRACE_SECONDS + 1
    store.put(StoredResponse({"id": "resp_b", "status": "completed", "output": []}, []))
    assert len(store) == 1 and store.get("resp_bg") is None


def test_a_hundred_background_responses_under_a_limit_of_fifty(
        shared_server: Callable[..., ServerProcess]) -> None:
    """Through a real server: every one of 100 background responses is seen final, none 404 first."""
    server = shared_server("--store-max-entries", "50")
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda i: client.responses.create(model="gpt-4o", input=f"Question {i}",
                                                              background=True).id, range(100)))

        def final(response_id: str) -> str:
            while True:
                status = client.responses.retrieve(response_id).status  # a 404 raises NotFoundError
                if status in FINAL_STATUSES:
                    return str(status)

        assert set(pool.map(final, ids)) == {"completed"}
