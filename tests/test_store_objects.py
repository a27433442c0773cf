"""The files-and-jobs store (llmsim/store/objects.py) behaves alike in memory, SQLite and Redis: fields merge,
a claim goes to one, result lines keep their first value, the entry limit evicts the oldest but never a running
job, and a record is found only by its own kind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from llmsim.store.objects import PINNED, MemoryObjects, ObjectStore, Stored
from llmsim.store.objects_sqlite import SQLiteObjects
from llmsim.store.redis_client import connect
from llmsim.store.sqlite import Database
from llmsim.testing import RedisServer


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as redis:
        yield redis.url


@pytest.fixture(params=["memory", "sqlite", "redis"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[type]:
    made: list[object] = []

    def build(max_entries: int = 100) -> ObjectStore:
        if request.param == "memory":
            return MemoryObjects(max_entries, 0)
        if request.param == "sqlite":
            return SQLiteObjects(Database(tmp_path / f"o{len(made)}.db"), max_entries, 0)
        client = connect(request.getfixturevalue("redis_url"))
        client.flushdb()
        made.append(client)
        from llmsim.store.objects_redis import RedisObjects

        return RedisObjects(client, max_entries, 0)

    yield build  # type: ignore[misc]
    for client in made:
        client.close()  # type: ignore[attr-defined]


def test_fields_merge_and_a_claim_goes_to_one(make) -> None:  # type: ignore[no-untyped-def]
    store = make()
    store.put(Stored("job", "j1", "owner", {"status": "a", "_worker": "w1", "n": 1}, 1.0), b"data")
    assert store.update("job", "j1", {"status": "b"}).fields == {"status": "b", "_worker": "w1", "n": 1}
    assert store.claim("job", "j1", "_worker", "w1", "w2") and not store.claim("job", "j1", "_worker", "w1", "w3")
    assert store.get("job", "j1").fields["_worker"] == "w2" and store.content("job", "j1") == b"data"
    assert store.update("job", "missing", {"x": 1}) is None and store.get("file", "j1") is None
    store.add_line("job", "j1", 0, "first")
    store.add_line("job", "j1", 0, "again")
    store.add_line("job", "j1", 2, "third")
    store.add_line("job", "missing", 0, "nowhere")
    assert store.lines("job", "j1") == {0: "first", 2: "third"} and store.lines("job", "missing") == {}
    assert store.delete("job", "j1") and not store.delete("job", "j1")
    assert store.get("job", "j1") is None and store.lines("job", "j1") == {} and store.content("job", "j1") is None


def test_the_entry_limit_spares_running_jobs(make) -> None:  # type: ignore[no-untyped-def]
    store = make(max_entries=2)
    store.put(Stored("job", "running", "o", {PINNED: True}, 1.0))
    store.put(Stored("file", "old", "o", {}, 2.0))
    store.put(Stored("file", "new", "p", {}, 3.0))
    store.put(Stored("file", "newest", "o", {}, 4.0))
    assert store.get("job", "running") is not None and store.get("file", "old") is None
    assert [r.id for r in store.listed("file", None)] == ["newest", "new"]
    assert [r.id for r in store.listed("file", "o")] == ["newest"]
