"""Store state under pressure: unfinished responses are never evicted, orphans always end."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import openai
import pytest
from stateful import PACED, Clock, record, slow_profiles, wait_final

from llmsim.store import MemoryStore, ResponseStore, SQLiteStore
from llmsim.store.sqlite import Database
from llmsim.testing import ServerProcess

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
    background = [client.responses.create(model="slow-model", input=f"Tell me story {i}.", background=True,
                                          text={"verbosity": "high"}, extra_headers=PACED) for i in range(3)]
    quick = [client.responses.create(model="gpt-4o", input=f"hi {i}") for i in range(4)]
    assert all(client.responses.retrieve(r.id).status in ("queued", "in_progress") for r in background)
    assert all(wait_final(client, r.id).status == "completed" for r in background)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(quick[0].id)
    assert client.responses.retrieve(quick[-1].id).status == "completed"
