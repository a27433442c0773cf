"""The SQLite store: the same limits as memory, restarts, kill -9, several processes on one file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import openai
import pytest

from llmsim.store import (
    ConversationStore,
    MemoryConversations,
    MemoryStore,
    ResponseStore,
    SQLiteConversations,
    SQLiteStore,
    StoredConversation,
    StoredResponse,
)
from llmsim.store.base import StorageUnavailable
from llmsim.store.sqlite import Database
from llmsim.testing import ServerProcess, free_port
from stateful import PACED, Clock, client_for, kill_hard, record, slow_profiles, tmpfs, until, wait_final

Start = Callable[..., ServerProcess]
Connect = Callable[[ServerProcess], openai.OpenAI]


@pytest.fixture(params=["memory", "sqlite"])
def stores(request: pytest.FixtureRequest, tmp_path: Path
           ) -> Iterator[Callable[..., tuple[ResponseStore, ConversationStore]]]:
    """Both kinds of store, made with the same limits and a clock the test moves."""
    databases: list[Database] = []

    def make(max_entries: int, ttl: float, clock: Clock) -> tuple[ResponseStore, ConversationStore]:
        if request.param == "memory":
            return MemoryStore(max_entries, ttl, clock), MemoryConversations(max_entries, ttl, clock)
        db = Database(tmp_path / "store.db")
        databases.append(db)
        return SQLiteStore(db, max_entries, ttl, clock), SQLiteConversations(db, max_entries, ttl, clock)

    yield make
    for db in databases:
        db.close()


@pytest.fixture(scope="module")
def shared_store(shared_server: Start, tmp_path_factory: pytest.TempPathFactory) -> tuple[ServerProcess, ServerProcess]:
    """Two servers on one SQLite file, started once for the module: one of two workers, one of one. The tests of
    several processes (or workers) on one store each use ids of their own, so they need no fresh servers."""
    folder = tmp_path_factory.mktemp("shared-store")
    flags = ("--store", f"sqlite:///{folder / 'llmsim.db'}", "--profiles-dir", str(slow_profiles(folder / "profiles")))
    return shared_server(*flags, "--workers", "2"), shared_server(*flags)


@pytest.fixture
def connect(start_server: Start) -> Iterator[Connect]:
    """SDK clients for the test's servers, closed before the servers stop (an idle keep-alive
    connection would hold up the server's graceful shutdown)."""
    made: list[openai.OpenAI] = []

    def connect(server: ServerProcess) -> openai.OpenAI:
        made.append(client_for(server))
        return made[-1]

    yield connect
    for client in made:
        client.close()


def test_same_entry_limit_for_both(stores: Callable[..., tuple[ResponseStore, ConversationStore]]) -> None:
    clock = Clock()
    responses, conversations = stores(2, 0, clock)
    for i in range(3):
        clock.now += 1
        responses.put(record(f"resp_{i}"))
        conversations.create(StoredConversation(f"conv_{i}", {}), [])
    assert len(responses) == 2 and responses.get("resp_0") is None and responses.get("resp_2") is not None
    assert len(conversations) == 2 and conversations.get("conv_0") is None and conversations.get("conv_1") is not None


def test_same_ttl_for_both(stores: Callable[..., tuple[ResponseStore, ConversationStore]]) -> None:
    clock = Clock()
    responses, conversations = stores(10, 60, clock)
    responses.put(record("resp_old"))
    conversations.create(StoredConversation("conv_old", {}), [{"id": "msg_1", "type": "message"}])
    clock.now += 30
    responses.put(record("resp_new"))
    assert conversations.add_items("conv_old", [{"id": "msg_2", "type": "message"}])  # a write keeps it alive
    clock.now += 31
    assert responses.get("resp_old") is None and responses.get("resp_new") is not None
    assert [i["id"] for i in conversations.items("conv_old") or []] == ["msg_1", "msg_2"]
    clock.now += 60
    assert len(responses) == 0 and conversations.items("conv_old") is None


def test_zero_entries_stores_nothing(stores: Callable[..., tuple[ResponseStore, ConversationStore]]) -> None:
    responses, conversations = stores(0, 0, Clock())
    responses.put(record("resp_1"))
    conversations.create(StoredConversation("conv_1", {}), [])
    assert responses.get("resp_1") is None and conversations.get("conv_1") is None


def test_running_response_protocol(stores: Callable[..., tuple[ResponseStore, ConversationStore]]) -> None:
    responses, _ = stores(10, 0, Clock())
    responses.put(StoredResponse({"id": "resp_1", "status": "queued", "output": []}, [], events=[("a", "{}")]))
    assert responses.append("resp_1", [("b", "{}")], {"id": "resp_1", "status": "in_progress", "output": []})
    assert responses.tail("resp_1", 0) == ("in_progress", [("b", "{}")])
    assert responses.cancel("resp_1") is not None
    assert not responses.append("resp_1", [("c", "{}")])  # the worker learns it must stop
    assert responses.append("resp_1", [("c", "{}")], {"id": "resp_1", "status": "cancelled", "output": []},
                            force=True)
    assert responses.tail("resp_1", -1) == ("cancelled", [("a", "{}"), ("b", "{}"), ("c", "{}")])
    responses.put(StoredResponse({"id": "resp_2", "status": "queued", "output": []}, []))
    assert responses.cancel("resp_2").status == "cancelled"  # type: ignore[union-attr]  # queued: at once
    assert responses.tail("missing", -1) is None and not responses.append("missing", [])


def test_survives_restart(start_server: Start, connect: Connect, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'llmsim.db'}"
    first = start_server("--store", store)
    client = connect(first)
    plain = client.responses.create(model="gpt-4o", input="Remember me.")
    with client.responses.stream(model="gpt-4o", input="Stream me.") as stream:
        streamed = stream.get_final_response()
    conversation = client.conversations.create(metadata={"k": "v"}, items=[{"role": "user", "content": "Hi"}])
    in_conversation = client.responses.create(model="gpt-4o", input="Go on.", conversation=conversation.id)
    queued = client.responses.create(model="gpt-4o", input="Later.", background=True)
    finished = wait_final(client, queued.id)
    replay = [e.model_dump() for e in client.responses.retrieve(streamed.id, stream=True)]
    client.close()
    first.stop()

    client = connect(start_server("--store", store))
    assert client.responses.retrieve(plain.id) == plain
    assert [e.model_dump() for e in client.responses.retrieve(streamed.id, stream=True)] == replay
    assert client.responses.retrieve(finished.id) == finished
    assert client.conversations.retrieve(conversation.id) == conversation
    items = client.conversations.items.list(conversation.id, order="asc").data
    assert [item.id for item in items][-1] == in_conversation.output[0].id and len(items) == 3
    chained = client.responses.create(model="gpt-4o", input="And?", previous_response_id=plain.id)
    assert chained.usage is not None and plain.usage is not None
    assert chained.usage.input_tokens > plain.usage.input_tokens


@pytest.mark.process  # kill -9: a process of its own
def test_nothing_completed_is_lost_after_kill_9(start_server: Start, connect: Connect, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'llmsim.db'}"
    profiles = slow_profiles(tmp_path / "profiles")
    server = start_server("--store", store, "--profiles-dir", str(profiles))
    client = connect(server)
    done = [client.responses.create(model="gpt-4o", input=f"Request {i}") for i in range(5)]
    running = client.responses.create(model="slow-model", input="Take your time.", background=True,
                                      text={"verbosity": "high"}, extra_headers=PACED)
    until(lambda: client.responses.retrieve(running.id).status == "in_progress")
    with client.responses.stream(model="gpt-4o", input="The last one.") as stream:
        for event in stream:
            if event.type == "response.completed":
                kill_hard(server)  # the moment the client has seen it complete
                last = event.response
    client = connect(start_server("--store", store, "--profiles-dir", str(profiles)))
    for response in done:
        assert client.responses.retrieve(response.id) == response
    kept = client.responses.retrieve(last.id)
    assert (kept.status, kept.output_text, kept.usage) == ("completed", last.output_text, last.usage)
    orphan = client.responses.retrieve(running.id)  # its worker died with the server: it fails, nobody waits
    assert orphan.status == "failed" and orphan.error is not None
    assert list(client.responses.retrieve(running.id, stream=True, starting_after=2))  # ends, does not hang


def test_two_processes_share_one_store(shared_store: tuple[ServerProcess, ServerProcess], connect: Connect) -> None:
    a, b = (connect(server) for server in shared_store)

    first = a.responses.create(model="gpt-4o", input="Started on A.")
    second = b.responses.create(model="gpt-4o", input="Continued on B.", previous_response_id=first.id)
    assert [i.content[0].text for i in a.responses.input_items.list(second.id).data] == ["Continued on B."]  # type: ignore[union-attr]

    conversation = a.conversations.create()
    b.responses.create(model="gpt-4o", input="Hi from B", conversation=conversation.id)
    assert len(a.conversations.items.list(conversation.id).data) == 2
    b.conversations.update(conversation.id, metadata={"seen": "by B"})
    assert a.conversations.retrieve(conversation.id).metadata == {"seen": "by B"}

    # A background response runs on A; B follows its events while it runs, then cancels it.
    running = a.responses.create(model="slow-model", input="Long story.", background=True,
                                 text={"verbosity": "high"}, extra_headers=PACED)
    seen = []
    for event in b.responses.retrieve(running.id, stream=True):
        seen.append(event)
        if event.type == "response.output_text.delta":
            break
    rest = b.responses.retrieve(running.id, stream=True, starting_after=seen[-1].sequence_number)
    next_event = next(iter(rest))
    assert next_event.sequence_number == seen[-1].sequence_number + 1
    rest.close()
    cancelled = b.responses.cancel(running.id)
    assert cancelled.status == "cancelled"
    assert a.responses.retrieve(running.id).status == "cancelled"
    assert a.responses.retrieve(running.id).output[0].status == "incomplete"  # type: ignore[union-attr]  # A stopped


def test_workers_of_one_server_share_the_store(shared_store: tuple[ServerProcess, ServerProcess],
                                              connect: Connect) -> None:
    server = shared_store[0]  # two workers
    previous = None
    for i in range(12):  # a new connection each time, so the requests spread over the workers
        with httpx.Client(base_url=server.base_url) as http:
            body = {"model": "gpt-4o", "input": f"Turn {i}", "previous_response_id": previous}
            reply = http.post("/responses", json={k: v for k, v in body.items() if v is not None})
            assert reply.status_code == 200, reply.text
            previous = reply.json()["id"]
            queued = http.post("/responses", json={"model": "gpt-4o", "input": "bg", "background": True}).json()
        with httpx.Client(base_url=server.base_url) as http:
            assert http.get(f"/responses/{queued['id']}").status_code == 200
    client = connect(server)
    final = client.responses.retrieve(previous)  # type: ignore[arg-type]
    assert final.usage is not None and final.usage.input_tokens > 100  # it saw the whole chain


def test_concurrent_writers(shared_store: tuple[ServerProcess, ServerProcess], connect: Connect) -> None:
    servers = list(shared_store)  # three processes on one file: two workers of one server, one of the other
    clients = [connect(s) for s in servers]
    conversation = clients[0].conversations.create()

    def write(i: int) -> tuple[str, str]:
        client = clients[i % 2]
        plain = client.responses.create(model="gpt-4o", input=f"Plain {i}")
        talk = client.responses.create(model="gpt-4o", input=f"Talk {i}", conversation=conversation.id)
        client.conversations.items.create(conversation.id, items=[{"role": "user", "content": f"Note {i}"}])
        return plain.id, talk.id

    with ThreadPoolExecutor(8) as pool:
        written = list(pool.map(write, range(24)))
    for plain, talk in written:
        for client in clients:
            assert client.responses.retrieve(plain).status == "completed"
            assert client.responses.retrieve(talk).conversation.id == conversation.id  # type: ignore[union-attr]
    items = list(clients[1].conversations.items.list(conversation.id, limit=100, order="asc"))
    assert len(items) == 24 * 3 and len({item.id for item in items}) == 24 * 3
    texts = {item.content[0].text for item in items if item.role == "user"}  # type: ignore[union-attr]
    assert texts == {f"{kind} {i}" for kind in ("Talk", "Note") for i in range(24)}


def test_bad_store_url_stops_start_up() -> None:
    with pytest.raises(RuntimeError) as caught:
        ServerProcess("--store", "postgres://nope").start()
    assert "--store" in str(caught.value)


@contextmanager
def _immutable(path: Path) -> Iterator[None]:
    """`path` read-only even for root (ext4's immutable attribute; chmod does not stop root)."""
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (needs root and ext2/3/4, xfs or btrfs)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_store_fails_at_start_with_one_line(tmp_path: Path, what: str) -> None:
    path = tmp_path / "llmsim.db"
    if what == "file":
        Database(path).close()  # an existing store, made read-only
    with _immutable(path if what == "file" else tmp_path):
        started = subprocess.run([sys.executable, "-m", "llmsim", "serve", "--port", str(free_port()), "--store",
                                  f"sqlite:///{path}"], capture_output=True, text=True, timeout=60)
    assert started.returncode == 2
    lines = started.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmsim: --store: ")
    assert ("read-only" if what == "file" else "cannot open") in lines[0], lines


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs."""
    with tmpfs(tmp_path / "tiny", "1m") as folder:
        yield folder


def test_a_full_disk_is_a_503_with_its_cause_and_health_says_so(tiny_disk: Path) -> None:
    with ServerProcess("--store", f"sqlite:///{tiny_disk / 'llmsim.db'}") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        assert client.responses.create(model="gpt-4o", input="Hi").status == "completed"
        assert httpx.get(f"{server.url}/llmsim/health").status_code == 200
        filler = tiny_disk / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True)  # until ENOSPC
        with pytest.raises(openai.InternalServerError) as failed:
            client.responses.create(model="gpt-4o", input="Hi " * 2000)
        assert failed.value.status_code == 503
        error = failed.value.body
        assert isinstance(error, dict) and error["code"] == "storage_unavailable"
        assert "disk full" in error["message"]
        with client.responses.stream(model="gpt-4o", input="Hi " * 2000) as stream:  # begun before the write
            last = list(stream)[-1]
        assert last.type == "error" and last.code == "storage_unavailable" and "disk full" in last.message, last
        health = httpx.get(f"{server.url}/llmsim/health")
        assert health.status_code == 503 and health.json()["error"]["code"] == "storage_unavailable"
        filler.unlink()
        assert httpx.get(f"{server.url}/llmsim/health").status_code == 200  # room again: healthy again
        assert client.responses.create(model="gpt-4o", input="Hi").status == "completed"


def test_a_store_locked_past_its_timeout_is_unavailable_with_that_cause(tmp_path: Path) -> None:
    """Another process holding the file's write lock longer than the busy timeout: the same 503 cause
    (`locked`) the server gives for a full disk, and health's check fails with it, until the lock goes."""
    path = tmp_path / "llmsim.db"
    store = Database(path, busy_timeout_s=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StorageUnavailable) as refused:
            store.check()
        assert refused.value.cause == "locked" and "locked" in refused.value.message
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.check()  # the lock gone, the store writes again
    store.close()
