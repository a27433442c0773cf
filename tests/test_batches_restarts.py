"""Files and batches across a server's end: read back after a restart on SQLite and on Redis (a real
`redis-server`), a batch cut by kill -9 or stopped by SIGTERM taken on by the next server on the store."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from batches_kit import (
    Counts,
    Start,
    anthropic_client,
    chat_line,
    ended,
    finished,
    jsonl,
    lines_of,
    message_request,
    openai_client,
    submitted,
)
from llmsim.store.redis_client import PREFIX
from llmsim.testing import RedisServer
from stateful import kill_hard, until


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


def lapse_heartbeats(url: str) -> None:
    """The heartbeats of the module's Redis lapse now, not HEARTBEAT_TTL_SECONDS (10 s) after the dead worker's last
    beat: what a lapse leaves, the key gone, and no server running on the store that could beat again."""
    client = redis.Redis.from_url(url)
    try:
        for key in client.keys(f"{PREFIX}worker:*"):
            client.delete(key)
    finally:
        client.close()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_files_and_batches_survive_a_restart(kind: str, start_server: Start, tmp_path: Path,
                                             request: pytest.FixtureRequest) -> None:
    store = f"sqlite:///{tmp_path / 'llmsim.db'}" if kind == "sqlite" else request.getfixturevalue("redis_url")
    first = start_server("--store", store)
    client, claude = openai_client(first), anthropic_client(first)
    uploaded = client.files.create(file=("in.jsonl", jsonl([chat_line("a", "hi"), chat_line("b", "yo")])),
                                   purpose="batch")
    batch = finished(client, client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                                   completion_window="24h").id)
    output = client.files.content(batch.output_file_id or "").content
    job = ended(claude, claude.messages.batches.create(requests=[message_request("c", "hello")]).id)
    results = [r.model_dump() for r in claude.messages.batches.results(job.id)]
    document = claude.beta.files.upload(file=("d.txt", b"remember this", "text/plain"))
    client.close()
    claude.close()
    first.stop()

    second = start_server("--store", store)
    client, claude = openai_client(second), anthropic_client(second)
    assert client.batches.retrieve(batch.id) == batch
    assert client.files.retrieve(uploaded.id) == uploaded
    assert client.files.content(batch.output_file_id or "").content == output
    again = claude.messages.batches.retrieve(job.id)
    assert again.model_dump(exclude={"results_url"}) == job.model_dump(exclude={"results_url"})
    assert [r.model_dump() for r in claude.messages.batches.results(job.id)] == results
    assert claude.beta.files.retrieve_metadata(document.id) == document


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_batch_cut_by_a_crash_goes_on_after_the_restart(kind: str, start_server: Start, tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    """kill -9 while the lines run (paced): the next server to read the batch adopts it (on Redis once the dead
    worker's heartbeat has lapsed) and runs the lines that have no result yet; every line has exactly one result."""
    store = f"sqlite:///{tmp_path / 'llmsim.db'}" if kind == "sqlite" else request.getfixturevalue("redis_url")
    first = start_server("--store", store)
    client = openai_client(first, default_headers={"X-LLMSim-Speed": "4"})
    lines = [chat_line(f"k-{i}", "Tell me a story.", max_tokens=30) for i in range(40)]
    batch = submitted(client, "crash.jsonl", lines)
    until(lambda: (client.batches.retrieve(batch.id).request_counts or Counts()).completed > 0, every=0.05)
    client.close()
    kill_hard(first)
    if kind == "redis":
        lapse_heartbeats(store)

    client = openai_client(start_server("--store", store))
    done = finished(client, batch.id)
    assert done.status == "completed" and done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed) == (40, 40)
    assert sorted(line["custom_id"] for line in lines_of(client, done.output_file_id)) == sorted(
        line["custom_id"] for line in lines)


def test_a_stopping_server_leaves_the_rest_of_a_batch_to_the_next(start_server: Start, tmp_path: Path) -> None:
    """SIGTERM while a paced batch runs: the server ends the lines in hand, not the batch, and the next server on
    the store takes the batch on where it was left."""
    store = f"sqlite:///{tmp_path / 'llmsim.db'}"
    first = start_server("--store", store, "--graceful-timeout", "60")
    client = openai_client(first, default_headers={"X-LLMSim-Speed": "4"})
    lines = [chat_line(f"s-{i}", "Tell me a story.", max_tokens=30) for i in range(600)]
    batch = submitted(client, "stop.jsonl", lines)
    until(lambda: (client.batches.retrieve(batch.id).request_counts or Counts()).completed > 0, every=0.05)
    client.close()
    assert first.process is not None
    first.process.send_signal(signal.SIGTERM)  # a graceful stop, which waits for the work in hand
    first.process.wait(timeout=30)

    client = openai_client(start_server("--store", store))
    left = client.batches.retrieve(batch.id)
    assert left.status == "in_progress" and left.request_counts is not None and left.request_counts.completed < 600
    client.batches.cancel(batch.id)  # the rest need not run here: the cancel ends it where the new server took it
    done = finished(client, batch.id)
    assert done.status == "cancelled" and done.request_counts is not None
    assert len(lines_of(client, done.output_file_id)) == done.request_counts.completed >= left.request_counts.completed
