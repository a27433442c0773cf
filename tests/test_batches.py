"""Files and Batches on both providers, driven by the official SDKs against a real server: OpenAI's `files.*` and
`batches.*` (an uploaded JSONL of /v1/chat/completions and /v1/responses lines), Anthropic's
`messages.batches.*` and `beta.files.*`; the states a job moves through, cancel, delete, a line that fails in the
error file or as an `errored` result, the size bounds, keys that never see each other's files or batches, and
`file_id` in an Anthropic document block and an OpenAI `input_file` (across a server's end:
tests/test_batches_restarts.py)."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from batches_kit import (
    CLAUDE,
    FINAL,
    PNG,
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
from llmsim.testing import ServerProcess
from optional import needs
from stateful import until


@pytest.fixture(scope="module")
def server(shared_server: Start) -> ServerProcess:
    return shared_server()


def test_an_openai_batch_runs_every_line_through_its_endpoint(server: ServerProcess) -> None:
    client = openai_client(server)
    lines = [chat_line(f"chat-{i}", f"Say hello number {i}.") for i in range(3)]
    uploaded = client.files.create(file=("requests.jsonl", jsonl(lines)), purpose="batch")
    assert (uploaded.object, uploaded.purpose, uploaded.status) == ("file", "batch", "processed")
    assert uploaded.bytes == len(jsonl(lines)) and client.files.retrieve(uploaded.id) == uploaded
    assert client.files.content(uploaded.id).content == jsonl(lines)

    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h", metadata={"run": "one"})
    assert batch.status == "validating" and batch.metadata == {"run": "one"}
    done = finished(client, batch.id)
    assert done.status == "completed" and done.error_file_id is None and done.errors is None
    assert done.request_counts is not None and (done.request_counts.total, done.request_counts.completed,
                                                done.request_counts.failed) == (3, 3, 0)
    assert done.in_progress_at and done.finalizing_at and done.completed_at and done.model == "gpt-4o-mini"
    results = lines_of(client, done.output_file_id)
    assert [r["custom_id"] for r in results] == ["chat-0", "chat-1", "chat-2"]
    completions = [ChatCompletion.model_validate(r["response"]["body"]) for r in results]
    assert all(r["response"]["status_code"] == 200 and r["error"] is None for r in results)
    assert done.usage is not None and done.usage.output_tokens == sum(
        c.usage.completion_tokens for c in completions if c.usage)
    output = client.files.retrieve(done.output_file_id or "")
    assert output.purpose == "batch_output" and output.filename.endswith(".jsonl")
    assert batch.id in [b.id for b in client.batches.list()]


def test_a_responses_batch_and_a_line_that_fails(shared_server: Start) -> None:
    """The first request a fault rule fires on (`first=1`) fails: its line lands in the error file with the
    error's status and body, the others in the output file; a line with a bad body gets its 400 there too."""
    client = openai_client(shared_server("--fault", "server_error;first=1"))
    lines = [{"custom_id": f"r-{i}", "method": "POST", "url": "/v1/responses",
              "body": {"model": "gpt-4o", "input": f"Question {i}?"}} for i in range(3)]
    lines.append({"custom_id": "bad", "method": "POST", "url": "/v1/responses", "body": {"input": "no model"}})
    done = finished(client, submitted(client, "responses.jsonl", lines, "/v1/responses").id)
    assert done.status == "completed"
    assert done.request_counts is not None and (done.request_counts.completed, done.request_counts.failed) == (2, 2)
    errors = {line["custom_id"]: line["response"] for line in lines_of(client, done.error_file_id)}
    assert errors["r-0"]["status_code"] == 500 and errors["r-0"]["body"]["error"]["type"] == "server_error"
    assert errors["bad"]["status_code"] == 400 and errors["bad"]["body"]["error"]["param"] == "model"
    output = lines_of(client, done.output_file_id)
    assert [line["custom_id"] for line in output] == ["r-1", "r-2"]
    assert all(Response.model_validate(line["response"]["body"]).status == "completed" for line in output)


def test_an_embeddings_batch(server: ServerProcess) -> None:
    """Lines of /v1/embeddings run through the embeddings surface's route: each result is the vectors (and usage)
    the endpoint gives the same input over HTTP."""
    client = openai_client(server)
    texts = ["The cat sat on the mat.", "Batches run lines in the background."]
    lines = [{"custom_id": f"e-{i}", "method": "POST", "url": "/v1/embeddings",
              "body": {"model": "text-embedding-3-small", "input": text, "dimensions": 64}}
             for i, text in enumerate(texts)]
    done = finished(client, submitted(client, "embeddings.jsonl", lines, "/v1/embeddings").id)
    assert done.status == "completed" and done.request_counts is not None and done.request_counts.completed == 2
    results = {line["custom_id"]: line["response"]["body"] for line in lines_of(client, done.output_file_id)}
    for i, text in enumerate(texts):
        direct = client.embeddings.create(model="text-embedding-3-small", input=text, dimensions=64)
        body = results[f"e-{i}"]
        assert len(body["data"][0]["embedding"]) == 64
        assert body["data"][0]["embedding"] == pytest.approx(direct.data[0].embedding, rel=1e-6)  # float32 both
        assert body["usage"]["prompt_tokens"] == direct.usage.prompt_tokens


def test_an_anthropic_batch_through_the_sdk(shared_server: Start) -> None:
    client = anthropic_client(shared_server("--fault", "overloaded;first=1"))
    requests = [message_request(f"m-{i}", f"Tell me about number {i}.") for i in range(3)]
    requests.append({"custom_id": "bad-role", "params": {"model": CLAUDE, "max_tokens": 10,
                                                         "messages": [{"role": "robot", "content": "hi"}]}})
    batch = client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
    assert batch.processing_status == "in_progress" and batch.results_url is None
    assert batch.request_counts.processing == 4
    done = ended(client, batch.id)
    assert (done.request_counts.succeeded, done.request_counts.errored, done.request_counts.processing) == (2, 2, 0)
    assert done.ended_at is not None and done.results_url and done.results_url.endswith(f"{batch.id}/results")
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert set(results) == {"m-0", "m-1", "m-2", "bad-role"}
    assert results["m-0"].type == "errored" and results["m-0"].error.error.type == "overloaded_error"
    assert results["bad-role"].type == "errored" and results["bad-role"].error.error.type == "invalid_request_error"
    assert results["m-1"].type == "succeeded" and results["m-1"].message.content[0].type == "text"
    assert batch.id in [b.id for b in client.messages.batches.list()]
    assert client.beta.messages.batches.retrieve(batch.id).id == batch.id  # the beta path too

    assert client.messages.batches.delete(batch.id).type == "message_batch_deleted"
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.messages.batches.retrieve(batch.id)
    assert missing.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    assert missing.value.response.headers.get("request-id")


def test_cancel_stops_both_kinds_between_lines(server: ServerProcess) -> None:
    """Paced (speed 1 for these batches), a job is cancelled while its lines run: OpenAI's shows `cancelling`
    then `cancelled` with the lines done; Anthropic's `canceling`, then `ended` with the rest `canceled`."""
    paced = {"X-LLMSim-Speed": "1"}
    client = openai_client(server, default_headers=paced)
    lines = [chat_line(f"c-{i}", "Write a long story.", max_tokens=40) for i in range(24)]
    batch = submitted(client, "slow.jsonl", lines)
    until(lambda: client.batches.retrieve(batch.id).status == "in_progress", every=0.05)
    assert client.batches.cancel(batch.id).status == "cancelling"
    done = finished(client, batch.id)
    assert done.status == "cancelled" and done.cancelled_at and done.cancelling_at
    assert done.request_counts is not None and done.request_counts.completed < 24
    with pytest.raises(openai.ConflictError):
        client.batches.cancel(batch.id)

    claude = anthropic_client(server, default_headers=paced)
    requests = [message_request(f"a-{i}", "Write a long story.", max_tokens=40) for i in range(24)]
    job = claude.messages.batches.create(requests=requests)  # type: ignore[arg-type]
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.batches.delete(job.id)  # not ended yet
    assert claude.messages.batches.cancel(job.id).processing_status == "canceling"
    over = ended(claude, job.id)
    assert over.cancel_initiated_at is not None and over.request_counts.canceled > 0
    assert over.request_counts.succeeded + over.request_counts.canceled == 24
    kinds = [r.result.type for r in claude.messages.batches.results(job.id)]
    assert kinds.count("canceled") == over.request_counts.canceled and len(kinds) == 24


def test_a_running_batch_holds_up_no_other_request(server: ServerProcess) -> None:
    """At speed 0 a line never waits: the runner hands the worker over between lines, so a request made while a
    long batch runs is answered before the batch ends."""
    client = openai_client(server)
    lines = [chat_line(f"n-{i}", f"Line {i}.") for i in range(600)]
    batch = submitted(client, "long.jsonl", lines)
    until(lambda: (client.batches.retrieve(batch.id).request_counts or Counts()).completed > 0)
    answer = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Meanwhile?"}])
    running = client.batches.retrieve(batch.id)
    assert answer.choices[0].message.content and running.status == "in_progress"
    assert running.request_counts is not None and running.request_counts.completed < 600
    assert finished(client, batch.id).status == "completed"


def test_a_batch_whose_lines_cannot_run_fails_with_their_errors(server: ServerProcess) -> None:
    client = openai_client(server)
    lines = [json.dumps(chat_line("ok", "hi")), "{not json", json.dumps(chat_line("ok", "again")),
             json.dumps({**chat_line("elsewhere", "hi"), "url": "/v1/responses"}),
             '{"custom_id": "nan", "method": "POST", "url": "/v1/chat/completions", "body": {"temperature": NaN}}',
             "[" * 5000 + "]" * 5000, '{"custom_id": "\\ud800", "method": "POST"}']
    uploaded = client.files.create(file=("broken.jsonl", "\n".join(lines).encode()), purpose="batch")
    done = finished(client, client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                                  completion_window="24h").id)
    assert done.status == "failed" and done.failed_at and done.errors and done.errors.data
    assert [(e.code, e.line) for e in done.errors.data] == [
        ("invalid_json_line", 2), ("duplicate_custom_id", 3), ("mismatched_url", 4), ("invalid_json_line", 5),
        ("invalid_json_line", 6), ("invalid_json_line", 7)]


def test_bad_requests_get_4xx_in_each_envelope(server: ServerProcess) -> None:
    base, anthropic_headers = server.url, {"anthropic-version": "2023-06-01"}
    for method, path, kwargs in [
            ("POST", "/v1/batches", {"json": []}), ("POST", "/v1/batches", {"content": b"{", "headers": {
                "content-type": "application/json"}}),
            ("POST", "/v1/batches", {"json": {"input_file_id": "f", "endpoint": "/v1/nothing",
                                              "completion_window": "24h"}}),
            ("POST", "/v1/batches", {"json": {"input_file_id": "f", "endpoint": "/v1/chat/completions",
                                              "completion_window": "1h"}}),
            ("POST", "/v1/files", {"json": {"purpose": "batch"}}), ("POST", "/v1/files", {"files": {
                "purpose": (None, "batch")}}),
            ("GET", "/v1/files?limit=zero", {}), ("GET", "/v1/batches?limit=1000", {}),
            ("POST", "/v1/batches/batch_x/cancel", {})]:
        answer = httpx.request(method, base + path, **kwargs)
        assert 400 <= answer.status_code < 500 and set(answer.json()["error"]) >= {"message", "type"}, (path, answer)
    for method, path, kwargs in [
            ("POST", "/v1/messages/batches", {"json": {"requests": "x"}}),
            ("POST", "/v1/messages/batches", {"json": {"requests": [{"custom_id": "a", "params": []}]}}),
            ("POST", "/v1/messages/batches", {"json": {"requests": []}}),
            ("GET", "/v1/messages/batches?limit=0", {}), ("POST", "/v1/messages/batches/x/cancel", {}),
            ("DELETE", "/v1/messages/batches/x", {}), ("GET", "/v1/messages/batches/x/results", {}),
            ("POST", "/v1/files", {"json": {}}), ("GET", "/v1/files/x", {}), ("GET", "/v1/files/x/content", {}),
            ("DELETE", "/v1/files/x", {}), ("GET", "/anthropic/v1/files?limit=5000", {})]:
        answer = httpx.request(method, base + path, headers=anthropic_headers, **kwargs)
        body = answer.json()
        assert 400 <= answer.status_code < 500 and body["type"] == "error", (path, answer)
        assert answer.headers["request-id"] and body["error"]["type"].endswith("_error"), (path, body)


def test_bounds_and_bad_input_get_clear_4xx(shared_server: Start) -> None:
    server = shared_server("--max-body-bytes", str(6 * 1024 * 1024))
    client = openai_client(server)
    with pytest.raises(openai.BadRequestError, match="at most 50000"):
        many = client.files.create(file=("many.jsonl", b"{}\n" * 50_001), purpose="batch")
        client.batches.create(input_file_id=many.id, endpoint="/v1/chat/completions", completion_window="24h")
    wide = json.dumps(chat_line("wide", "x" * (4 * 1024 * 1024 + 10))).encode()
    with pytest.raises(openai.BadRequestError, match="may be at most 4194304 bytes"):
        big = client.files.create(file=("wide.jsonl", wide), purpose="batch")
        client.batches.create(input_file_id=big.id, endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.APIStatusError) as too_big:
        client.files.create(file=("huge.jsonl", b"x" * (7 * 1024 * 1024)), purpose="batch")
    assert too_big.value.status_code == 413
    with pytest.raises(openai.BadRequestError, match="Supported values are"):
        client.files.create(file=("a.txt", b"hi"), purpose="nonsense")  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError, match="jsonl"):
        client.files.create(file=("a.txt", b"hi"), purpose="batch")
    notes = client.files.create(file=("notes.txt", b"hello"), purpose="user_data")
    with pytest.raises(openai.BadRequestError, match="purpose 'batch'"):
        client.batches.create(input_file_id=notes.id, endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.NotFoundError):
        client.batches.create(input_file_id="file-missing", endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.NotFoundError) as missing:
        client.batches.retrieve("batch_missing")
    assert missing.value.body["message"] == "No batch found with id 'batch_missing'."  # type: ignore[index]
    with pytest.raises(openai.NotFoundError):
        client.files.content("file-missing")
    assert client.files.delete(notes.id).deleted
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(notes.id)

    claude = anthropic_client(server)
    with pytest.raises(anthropic.BadRequestError, match="at most 100000"):
        claude.messages.batches.create(requests=[{"custom_id": f"r{i}", "params": {}}  # type: ignore[misc]
                                                 for i in range(100_001)])
    with pytest.raises(anthropic.APIStatusError) as wide_request:
        claude.messages.batches.create(requests=[message_request("wide", "x" * (4 * 1024 * 1024 + 10))])
    assert wide_request.value.status_code == 413
    with pytest.raises(anthropic.BadRequestError, match="Duplicate custom_id"):
        claude.messages.batches.create(requests=[message_request("same", "a"), message_request("same", "b")])
    with pytest.raises(anthropic.BadRequestError, match="custom_id"):
        claude.messages.batches.create(requests=[message_request("has space", "a")])
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.batches.results("msgbatch_missing")
    with pytest.raises(anthropic.APIStatusError) as too_big_file:
        claude.beta.files.upload(file=("big.txt", b"x" * (7 * 1024 * 1024), "text/plain"))
    assert too_big_file.value.status_code == 413 and too_big_file.value.body["type"] == "error"  # type: ignore[index]


def test_anthropic_files_and_file_id_in_a_document_block(server: ServerProcess) -> None:
    """The document's words reach the model: its input tokens grow by the file's; an unknown file is a 404."""
    client = anthropic_client(server)
    words = " ".join(f"word{i}" for i in range(600))
    uploaded = client.beta.files.upload(file=("notes.txt", words.encode(), "text/plain"))
    assert (uploaded.type, uploaded.filename, uploaded.mime_type, uploaded.size_bytes) == (
        "file", "notes.txt", "text/plain", len(words))
    assert client.beta.files.retrieve_metadata(uploaded.id) == uploaded
    assert uploaded.id in [f.id for f in client.beta.files.list()]

    def ask(source: dict[str, Any]) -> anthropic.types.beta.BetaMessage:
        return client.beta.messages.create(
            model=CLAUDE, max_tokens=20, betas=["files-api-2025-04-14"],
            messages=[{"role": "user", "content": [{"type": "document", "source": source},  # type: ignore[list-item]
                                                    {"type": "text", "text": "Summarize it."}]}])

    with_file = ask({"type": "file", "file_id": uploaded.id})
    inline = ask({"type": "text", "media_type": "text/plain", "data": words})
    assert with_file.usage.input_tokens == inline.usage.input_tokens > 600
    with pytest.raises(anthropic.NotFoundError):
        ask({"type": "file", "file_id": "file_011missing"})
    picture = client.beta.files.upload(file=("dot.png", PNG, "image/png"))
    assert picture.mime_type == "image/png"

    def look(file_id: str) -> anthropic.types.beta.BetaMessage:
        return client.beta.messages.create(
            model=CLAUDE, max_tokens=20, betas=["files-api-2025-04-14"],
            messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": file_id}},
                                                    {"type": "text", "text": "What is in it?"}]}])

    assert look(picture.id).content
    with pytest.raises(anthropic.NotFoundError):
        look("file_011missing")
    with pytest.raises(anthropic.BadRequestError):
        client.beta.files.download(uploaded.id)  # an upload is not downloadable, as on the live API
    assert client.beta.files.delete(uploaded.id).type == "file_deleted"
    with pytest.raises(anthropic.NotFoundError):
        ask({"type": "file", "file_id": uploaded.id})


def test_file_id_in_an_openai_input_file(server: ServerProcess) -> None:
    client = openai_client(server)
    words = " ".join(f"fact{i}" for i in range(500))
    uploaded = client.files.create(file=("facts.txt", words.encode()), purpose="user_data")

    def ask(part: dict[str, Any]) -> Response:
        return client.responses.create(model="gpt-4o", input=[{"role": "user", "content": [
            part, {"type": "input_text", "text": "What does it say?"}]}])  # type: ignore[list-item, misc]

    with_file = ask({"type": "input_file", "file_id": uploaded.id})
    inline = ask({"type": "input_text", "text": words})
    assert with_file.usage and inline.usage and with_file.usage.input_tokens == inline.usage.input_tokens > 500
    stored = client.responses.input_items.list(with_file.id).data[0]
    assert stored.content[0].type == "input_file"  # type: ignore[union-attr]  # kept as sent
    with pytest.raises(openai.NotFoundError):
        ask({"type": "input_file", "file_id": "file-missing"})
    with pytest.raises(openai.NotFoundError):
        ask({"type": "input_image", "file_id": "file-missing"})

    def chat(part: dict[str, Any]) -> ChatCompletion:
        return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": [
            part, {"type": "text", "text": "What does it say?"}]}])  # type: ignore[list-item, misc]

    chat_file, chat_inline = chat({"type": "file", "file": {"file_id": uploaded.id}}), chat({"type": "text",
                                                                                             "text": words})
    assert chat_file.usage and chat_inline.usage
    assert chat_file.usage.prompt_tokens == chat_inline.usage.prompt_tokens > 500
    with pytest.raises(openai.NotFoundError):
        chat({"type": "file", "file": {"file_id": "file-missing"}})


def test_keys_never_see_each_others_files_or_batches(shared_server: Start) -> None:
    server = shared_server("--api-key", "key-one,key-two")
    one, two = openai_client(server, api_key="key-one"), openai_client(server, api_key="key-two")
    uploaded = one.files.create(file=("mine.jsonl", jsonl([chat_line("x", "hi")])), purpose="batch")
    batch = one.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    done = finished(one, batch.id)
    for call in (lambda: two.files.retrieve(uploaded.id), lambda: two.files.content(uploaded.id),
                 lambda: two.batches.retrieve(batch.id), lambda: two.files.content(done.output_file_id or ""),
                 lambda: two.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                            completion_window="24h")):
        with pytest.raises(openai.NotFoundError):
            call()
    assert two.files.list().data == [] and two.batches.list().data == []
    claude_one, claude_two = anthropic_client(server, api_key="key-one"), anthropic_client(server, api_key="key-two")
    job = claude_one.messages.batches.create(requests=[message_request("x", "hi")])
    with pytest.raises(anthropic.NotFoundError):
        claude_two.messages.batches.retrieve(job.id)
    assert claude_two.messages.batches.list().data == []


def test_lines_are_counted_in_the_metrics(shared_server: Start) -> None:
    server = shared_server("--store-max-entries", "1000")  # a server of this test's own: its counts alone
    client = openai_client(server)
    uploaded = client.files.create(file=("m.jsonl", jsonl([chat_line(f"m{i}", "hi") for i in range(4)])),
                                   purpose="batch")
    finished(client, client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                           completion_window="24h").id)
    text = httpx.get(f"{server.url}/metrics").text
    assert 'llmsim_requests_total{endpoint="/chat/completions",status="200"} 4.0' in text


def test_a_job_past_its_window_expires_with_its_lines_not_run() -> None:
    """In process, with the runner's clock moved two days on once the jobs are made: OpenAI's batch is `expired`
    and its lines not run are in the error file as `batch_expired`; Anthropic's requests not run are `expired`."""
    from llmsim.app import create_app
    from llmsim.config import Settings

    app = create_app(Settings(speed=0))
    runner = app.extensions["llmsim"].jobs.runner
    later = [0.0]
    runner.clock = lambda: time.time() + later[0]
    client = app.test_client()
    data = jsonl([chat_line(f"e-{i}", "hi") for i in range(3)])
    uploaded = client.post("/v1/files", data={"purpose": "batch", "file": (io.BytesIO(data), "e.jsonl")}).get_json()
    made = client.post("/v1/batches", json={"input_file_id": uploaded["id"], "endpoint": "/v1/chat/completions",
                                            "completion_window": "24h"}, headers={"X-LLMSim-Speed": "2"}).get_json()
    job = client.post("/v1/messages/batches", headers={"X-LLMSim-Speed": "1"}, json={"requests": [
        message_request(f"x-{i}", "Write a story.", max_tokens=40) for i in range(10)]}).get_json()
    later[0] = 2 * 86400.0
    batch = until(lambda: (b := client.get(f"/v1/batches/{made['id']}").get_json())["status"] in FINAL and b)
    assert batch["status"] == "expired" and batch["expired_at"] and batch["output_file_id"] is None
    assert batch["request_counts"] == {"total": 3, "completed": 0, "failed": 3}
    error_file = client.get(f"/v1/files/{batch['error_file_id']}/content").text
    errors = [json.loads(line) for line in error_file.splitlines()]
    assert [e["error"]["code"] for e in errors] == ["batch_expired"] * 3

    ended_job = until(lambda: (b := client.get(f"/v1/messages/batches/{job['id']}").get_json())[
        "processing_status"] == "ended" and b)
    counts = ended_job["request_counts"]
    assert counts["expired"] >= 2 and counts["succeeded"] + counts["expired"] == 10
    results = client.get(f"/v1/messages/batches/{job['id']}/results").text.splitlines()
    assert sum(json.loads(line)["result"]["type"] == "expired" for line in results) == counts["expired"]


def test_scenarios_and_rate_limits_apply_to_each_line(shared_server: Start, tmp_path: Path) -> None:
    """A scenario's rule answers the lines it matches, on both providers; an RPM limit admits only its count of
    lines, the rest answered 429 (in the error file, as `errored` results with Anthropic's rate_limit_error)."""
    scenario = tmp_path / "batch.yaml"
    scenario.write_text("name: batch\nrules:\n  - match: {input_contains: capital}\n    text: Paris, of course.\n")
    client = openai_client(shared_server("--scenario", str(scenario)))
    lines = [chat_line("asked", "What is the capital of France?"), chat_line("other", "Tell me a joke.")]
    done = finished(client, submitted(client, "s.jsonl", lines).id)
    answers = {line["custom_id"]: line["response"]["body"]["choices"][0]["message"]["content"]
               for line in lines_of(client, done.output_file_id)}
    assert answers["asked"] == "Paris, of course." and answers["other"] != "Paris, of course."
    claude = anthropic_client(shared_server("--scenario", str(scenario)))
    job = ended(claude, claude.messages.batches.create(requests=[message_request("c", "The capital of Italy?")]).id)
    (result,) = claude.messages.batches.results(job.id)
    assert result.result.type == "succeeded" and result.result.message.content[0].text == "Paris, of course."

    limited = shared_server("--rpm", "2")
    client = openai_client(limited)
    uploaded = client.files.create(file=("r.jsonl", jsonl([chat_line(f"r{i}", "hi") for i in range(4)])),
                                   purpose="batch")
    done = finished(client, client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                                  completion_window="24h").id)
    assert done.request_counts is not None and (done.request_counts.completed, done.request_counts.failed) == (2, 2)
    assert {line["response"]["status_code"] for line in lines_of(client, done.error_file_id)} == {429}
    claude = anthropic_client(limited, api_key="another-key")  # its own bucket
    job = ended(claude, claude.messages.batches.create(requests=[message_request(f"m{i}", "hi") for i in range(3)]).id)
    errors = [r.result for r in claude.messages.batches.results(job.id) if r.result.type == "errored"]
    assert len(errors) == 1 and errors[0].error.error.type == "rate_limit_error"


def test_anthropic_prefix_serves_files_and_batches(server: ServerProcess) -> None:
    """Under /anthropic/v1 as under /v1: the same files and batches, in Anthropic's shapes and envelope."""
    client = anthropic.Anthropic(base_url=f"{server.url}/anthropic", api_key="sk-test", max_retries=0)
    uploaded = client.beta.files.upload(file=("p.txt", b"prefixed", "text/plain"))
    assert anthropic_client(server).beta.files.retrieve_metadata(uploaded.id) == uploaded
    job = ended(client, client.messages.batches.create(requests=[message_request("p", "hi")]).id)
    assert job.results_url and "/anthropic/v1/messages/batches/" in job.results_url
    assert [r.custom_id for r in client.messages.batches.results(job.id)] == ["p"]
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.beta.files.retrieve_metadata("file_011missing")
    assert missing.value.body["type"] == "error"  # type: ignore[index]


@needs("inspect_ai")
def test_inspect_ai_batch_mode(server: ServerProcess) -> None:
    """inspect-ai's `--batch`: it sends its generations as a batch, OpenAI's (an uploaded JSONL, `batches.*`) and
    Anthropic's (`messages.batches.*`), polls them and reads each answer back from the results."""
    import asyncio

    from inspect_ai.model import BatchConfig, GenerateConfig, get_model

    config = GenerateConfig(max_retries=0, batch=BatchConfig(size=2, send_delay=0.5, tick=0.1))
    for name, base_url in (("openai/gpt-4o", server.base_url), ("anthropic/claude-sonnet-4-6", server.url)):
        batched = get_model(name, base_url=base_url, api_key="sk-test", config=config, memoize=False)

        async def both(chat: Any = batched) -> list[Any]:
            return await asyncio.gather(chat.generate("What is the capital of France?"), chat.generate("A joke?"))

        outputs = asyncio.run(both())
        assert all(output.completion.strip() and not output.error for output in outputs), name
    claude = anthropic_client(server)
    assert any(batch.request_counts.succeeded == 2 for batch in claude.messages.batches.list())
    assert any(batch.request_counts and batch.request_counts.completed == 2 and batch.model == "gpt-4o"
               for batch in openai_client(server).batches.list())
