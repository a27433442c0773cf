"""Store state under pressure: unfinished responses are never evicted, orphans always end."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import openai
import pytest

from llmsim.store import MemoryStore, ResponseStore, SQLiteStore
from llmsim.store.sqlite import Database
from llmsim.testing import ServerProcess
from stateful import PACED, Clock, kill_hard, record, slow_profiles, until, wait_final

Start = Callable[..., ServerProcess]
Client = Callable[..., openai.OpenAI]


@pytest.fixture(params=["memory", "sqlite"])
def store_flags(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, ...]:
    return () if request.param == "memory" else ("--store", f"sqlite:///{tmp_path / 'store.db'}")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_entry_limit_evicts_the_oldest_finished_responses_only(kind: str, tmp_path: Path) -> None:
    clock = Clock()
    store: ResponseStore = MemoryStore(2, 0, clock) if kind == "memory" else \
        SQLiteStore(Database(tmp_path / "s.db"), 2, 0, clock)
    for response_id, status in (("resp_q", "queued"), ("resp_r", "in_progress"), ("resp_1", "completed"),
                                ("resp_2", "failed"), ("resp_3", "completed")):
        clock.now += 1
        store.put(record(response_id, status))
    assert [rid for rid in ("resp_q", "resp_r", "resp_1", "resp_2", "resp_3") if store.get(rid)] == \
        ["resp_q", "resp_r", "resp_3"]  # over the limit while two run, but nothing unfinished goes
    assert store.append("resp_q", [], {"id": "resp_q", "status": "completed", "output": []})
    clock.now += 1
    store.put(record("resp_4"))
    assert store.get("resp_q") is None and store.get("resp_r") is not None and store.get("resp_4") is not None


def test_queued_background_responses_outlive_the_entry_limit(
        start_server: Start, sdk_client: Client, store_flags: tuple[str, ...], tmp_path: Path) -> None:
    server = start_server("--store-max-entries", "4", "--profiles-dir", str(slow_profiles(tmp_path / "profiles")),
                          *store_flags)
    client = sdk_client(server)
    # At twice the slow pacing: 90 to 400 tokens of 20 ms, still seconds past the quick requests
    background = [client.responses.create(model="slow-model", input=f"Tell me story {i}.", background=True,
                                          text={"verbosity": "high"}, extra_headers={"X-LLMSim-Speed": "2"})
                  for i in range(3)]
    quick = [client.responses.create(model="gpt-4o", input=f"hi {i}") for i in range(4)]
    assert all(client.responses.retrieve(r.id).status in ("queued", "in_progress") for r in background)
    assert all(wait_final(client, r.id).status == "completed" for r in background)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(quick[0].id)
    assert client.responses.retrieve(quick[-1].id).status == "completed"


@pytest.mark.process  # kill -9: a process of its own
def test_an_orphan_whose_pid_a_new_worker_reuses_fails_and_its_stream_ends(
        start_server: Start, sdk_client: Client, tmp_path: Path) -> None:
    """A container restarted in a fresh PID namespace gives its new worker the dead worker's pid."""
    path = tmp_path / "store.db"
    flags = ("--store", f"sqlite:///{path}", "--profiles-dir", str(slow_profiles(tmp_path / "profiles")))
    first = start_server(*flags)
    client = sdk_client(first)
    running = client.responses.create(model="slow-model", input="Take your time.", background=True,
                                      text={"verbosity": "high"}, extra_headers=PACED)
    until(lambda: client.responses.retrieve(running.id).status == "in_progress")
    kill_hard(first)

    client = sdk_client(start_server(*flags), timeout=20)
    probe = client.responses.create(model="gpt-4o", input="hi", background=True)

    def worker(response_id: str) -> str:
        with sqlite3.connect(path) as conn:
            return str(conn.execute("SELECT worker FROM responses WHERE id = ?", (response_id,)).fetchone()[0])

    dead, new = worker(running.id), worker(probe.id)
    assert dead != new
    with sqlite3.connect(path) as conn:  # the dead worker's boot with the live worker's pid
        conn.execute("UPDATE responses SET worker = ? WHERE id = ?",
                     (f"{new.partition(':')[0]}:{dead.partition(':')[2]}", running.id))

    events = list(client.responses.retrieve(running.id, stream=True, starting_after=2))
    assert events[-1].type == "response.failed"
    orphan = client.responses.retrieve(running.id)
    assert orphan.status == "failed" and orphan.error is not None and orphan.error.code == "server_error"
    replay = list(client.responses.retrieve(running.id, stream=True))
    assert [e.type for e in replay][:2] == ["response.created", "response.queued"]
    assert replay[-1].type == "response.failed"  # a later replay ends the same way, once, in sequence
    assert [e.sequence_number for e in replay] == list(range(len(replay)))
