"""A nearly full disk under the SQLite store (issue 46, item 5): /llmsim/health said ok while large writes failed
for space. Now it reports the disk low before writes fail, and degraded (a 503) once one failed, until room is
made. On a real tiny tmpfs (mounting needs root), and in-process with the free space and SQLite's "disk full"
given at the OS boundary."""

from __future__ import annotations

import shutil
from collections import namedtuple
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from llmsim.app import create_app
from llmsim.config import Settings
from llmsim.store import StoredResponse, sqlite
from llmsim.testing import ServerProcess
from stateful import tmpfs

MB = 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs."""
    with tmpfs(tmp_path / "small", "4m", "; test_health_reports_the_disk_in_process covers it") as folder:
        yield folder


def fill(folder: Path, name: str, leave: int) -> Path:
    """A file that leaves about `leave` bytes free on `folder`'s disk."""
    filler = folder / name
    filler.write_bytes(b"\0" * max(0, shutil.disk_usage(folder).free - leave))
    return filler


def test_health_reports_low_space_before_writes_fail_and_a_failed_write_after(small_disk: Path) -> None:
    with ServerProcess("--store", f"sqlite:///{small_disk / 'llmsim.db'}", "--store-min-free", "1") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        assert client.responses.create(model="gpt-4o", input="Hi").status == "completed"
        health = httpx.get(f"{server.url}/llmsim/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert health.json()["storage"]["free_bytes"] > MB

        first = fill(small_disk, "filler-1", 700 * 1024)  # under the 1 MB threshold, room for writes
        health = httpx.get(f"{server.url}/llmsim/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded", health.text
        assert health.json()["storage"]["low_space"] is True
        assert client.responses.create(model="gpt-4o", input="Hi").status == "completed"  # writes still succeed

        second = fill(small_disk, "filler-2", 120 * 1024)  # room for the probe's row, not for a large response
        with pytest.raises(openai.InternalServerError) as failed:
            client.responses.create(model="gpt-4o", input="Tell me about tides. " * 20_000)
        assert failed.value.status_code == 503 and "disk full" in str(failed.value.body)
        health = httpx.get(f"{server.url}/llmsim/health")
        assert health.status_code == 503, health.text  # was a 200 {"status": "ok"} here
        assert health.json()["status"] == "degraded" and health.json()["error"]["code"] == "storage_unavailable"
        assert health.json()["storage"]["write_failed_for_space_at"] is not None

        first.unlink()
        second.unlink()
        health = httpx.get(f"{server.url}/llmsim/health")  # room made: healthy again
        assert health.status_code == 200 and health.json()["status"] == "ok", health.text


Usage = namedtuple("Usage", "total used free")


def test_health_reports_the_disk_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same states with the OS's answers given: the free space shutil reads, and SQLite's SQLITE_FULL (a page
    limit makes SQLite answer a large write as it answers ENOSPC)."""
    free = {"bytes": 500 * MB}
    monkeypatch.setattr(sqlite.shutil, "disk_usage", lambda _path: Usage(1000 * MB, 0, free["bytes"]))
    app = create_app(Settings(store=f"sqlite:///{tmp_path / 'llmsim.db'}", store_min_free_mb=64))
    store: Any = app.extensions["llmsim"].pipeline.store
    http = app.test_client()

    def health() -> tuple[int, dict[str, Any]]:
        answer = http.get("/llmsim/health")
        return answer.status_code, answer.get_json()

    assert health() == (200, {"status": "ok", "storage": {"free_bytes": 500 * MB, "min_free_bytes": 64 * MB,
                                                          "low_space": False, "write_failed_for_space_at": None}})
    free["bytes"] = 10 * MB
    status, body = health()
    assert (status, body["status"], body["storage"]["low_space"]) == (200, "degraded", True)

    pages = store.db._conn.execute("PRAGMA page_count").fetchone()[0]
    store.db._conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # the probe's row fits, a response does not
    large = StoredResponse({"id": "resp_large", "status": "completed", "output": []},
                           [{"type": "message", "role": "user", "content": "x" * 200_000}])
    with pytest.raises(sqlite.StorageUnavailable):
        store.put(large)
    status, body = health()
    assert (status, body["status"], body["error"]["code"]) == (503, "degraded", "storage_unavailable")
    free["bytes"] = 12 * MB  # a little freed: not yet room (twice the 10 MB free then)
    assert health()[0] == 503
    free["bytes"] = 100 * MB  # over --store-min-free: room again
    assert health()[0] == 200
