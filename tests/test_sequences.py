"""--max-num-seqs and --max-queue: past a worker's running limit paced requests wait (FIFO per key, the keys in
turn, the wait in their time to first token, the gauges showing them); past the queue each surface answers its
overload error."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from llmsim.testing import ServerProcess
from llmsim.timing.sequences import Sequences

PROFILE = """
models:
  - id: queued-model
    timing:
      ttft_ms: {kind: normal, mean: 2000, stddev: 0}
      itl_ms: {kind: normal, mean: 100, stddev: 0}
      prefill_tokens_per_s: 1000000000
      reasoning_tokens_per_s: 1000
"""


class Counted:
    def __init__(self) -> None:
        self.changes: list[tuple[str, int]] = []

    def waiting(self, model: str, change: int) -> None:
        self.changes.append((model, change))

    def queued(self, model: str, seconds: float) -> None:
        pass


def _until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_freed_slot_goes_to_each_key_in_turn_and_first_come_first_served_within_a_key() -> None:
    observer = Counted()
    sequences = Sequences(limit=1, queue_limit=10, observer=observer)
    order: list[str] = []

    def run(key: str, name: str) -> None:
        with sequences.slot(key, "m"):
            order.append(name)

    holder = sequences.slot("a", "m")
    assert holder.__enter__() is False  # a free slot: no wait
    threads = []
    for key, name in [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("c", "c1")]:
        thread = threading.Thread(target=run, args=(key, name))
        thread.start()
        threads.append(thread)
        count = len(threads)
        _until(lambda: sequences.waiting == count, f"{name} never queued")  # noqa: B023 - used at once
    assert sequences.running == 1 and order == []
    holder.__exit__(None, None, None)
    for thread in threads:
        thread.join(timeout=10)
    assert order == ["a1", "b1", "c1", "a2", "a3"]  # a's burst does not hold back b and c
    assert sequences.running == 0 and sequences.waiting == 0
    assert sum(change for _, change in observer.changes) == 0 and len(observer.changes) == 10


def test_the_queue_is_full_at_its_bound_and_a_request_that_leaves_it_frees_its_place() -> None:
    sequences = Sequences(limit=1, queue_limit=1)
    holder = sequences.slot("a", "m")
    holder.__enter__()
    assert not sequences.full  # room in the queue
    left: list[BaseException] = []

    def wait_then_fail() -> None:
        try:
            with sequences.slot("a", "m"):
                raise AssertionError("ran past a held slot")
        except BaseException as error:  # noqa: BLE001 - what ended it is the test's
            left.append(error)

    thread = threading.Thread(target=wait_then_fail)
    thread.start()
    _until(lambda: sequences.waiting == 1, "never queued")
    assert sequences.full  # the pipeline refuses the next with its surface's overload error
    holder.__exit__(None, None, None)
    thread.join(timeout=10)
    assert isinstance(left[0], AssertionError)  # it ran (and failed) once the slot was free
    assert sequences.running == 0 and sequences.waiting == 0 and not sequences.full


def _gauges(server: ServerProcess) -> dict[str, float]:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return {sample.name: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.labels.get("model_name") == "queued-model"
            and sample.name in ("vllm:num_requests_running", "vllm:num_requests_waiting")}


def test_past_max_num_seqs_streams_wait_and_past_the_queue_each_surface_says_overloaded(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI], tmp_path: Path) -> None:
    (tmp_path / "queued.yaml").write_text(PROFILE)
    server = start_server("--speed", "1", "--profiles-dir", str(tmp_path), "--max-num-seqs", "2",
                          "--max-queue", "1")
    client = sdk_client(server)
    firsts: dict[str, float] = {}
    ends: dict[str, str | None] = {}
    done: dict[str, float] = {}

    def stream(name: str) -> None:
        last = None
        for event in client.responses.create(model="queued-model", input="Hi", max_output_tokens=20, stream=True):
            if event.type == "response.output_text.delta" and name not in firsts:
                firsts[name] = time.monotonic()
            last = event.type
        ends[name] = last
        done[name] = time.monotonic()

    threads = [threading.Thread(target=stream, args=(name,)) for name in ("a", "b", "c")]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    _until(lambda: _gauges(server) == {"vllm:num_requests_running": 2, "vllm:num_requests_waiting": 1},
           f"two running and one waiting, not {_gauges(server)}")
    shown = httpx.get(f"{server.url}/llmsim/ui/api/state", timeout=10).json()["models"]  # the dashboard's
    assert [(m["running"], m["waiting"]) for m in shown if m["name"] == "queued-model"] == [(2, 1)]
    with pytest.raises(openai.InternalServerError) as refused:
        client.responses.create(model="queued-model", input="Hi", stream=True)
    assert refused.value.status_code == 503 and refused.value.response.headers["retry-after"] == "1"  # SDKs retry
    assert "overloaded" in refused.value.message
    with pytest.raises(openai.InternalServerError) as chat_refused:
        client.chat.completions.create(model="queued-model", messages=[{"role": "user", "content": "Hi"}])
    assert chat_refused.value.status_code == 503
    claude = anthropic.Anthropic(base_url=server.url, api_key="sk-test", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as messages_refused:
        claude.messages.create(model="queued-model", max_tokens=20, messages=[{"role": "user", "content": "Hi"}])
    assert messages_refused.value.status_code == 529
    assert messages_refused.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    client.responses.create(model="queued-model", input="Hi", extra_headers={"X-LLMSim-Speed": "0"})  # not paced
    for thread in threads:
        thread.join(timeout=30)
    assert set(firsts) == {"a", "b", "c"} and set(ends.values()) == {"response.incomplete"}  # cut at 20 tokens
    # the one that waited (the last to start: c, unless the requests crossed) had its slot when another ended (each
    # runs ~4 s), and its own time to first token (2 s) after that
    waited = max(firsts, key=firsts.__getitem__)
    assert firsts[waited] > min(done[name] for name in done if name != waited) + 1.0
    assert _gauges(server) == {"vllm:num_requests_running": 0, "vllm:num_requests_waiting": 0}


def test_the_dashboard_shows_the_queue(start_server: Callable[..., ServerProcess],
                                       sdk_client: Callable[..., openai.OpenAI], tmp_path: Path) -> None:
    from playwright.sync_api import expect

    from chromium import launched

    (tmp_path / "queued.yaml").write_text(PROFILE)
    server = start_server("--speed", "1", "--profiles-dir", str(tmp_path), "--max-num-seqs", "1")
    client = sdk_client(server)

    read = threading.Event()

    def stream() -> None:
        with client.responses.create(model="queued-model", input="Hi", max_output_tokens=20, stream=True) as events:
            for _ in events:
                if read.is_set():  # the dashboard was read: the client leaves, and the next in line goes on
                    break

    threads = [threading.Thread(target=stream) for _ in range(3)]
    for thread in threads:
        thread.start()
    with launched() as browser:
        page = browser.new_page(viewport={"width": 1600, "height": 900})
        page.goto(f"{server.url}/llmsim/ui")
        expect(page.locator("#k-flight")).to_have_text("3", timeout=10_000)  # one running, two queued
        expect(page.locator("#k-flight-sub")).to_have_text("2 queued")
        expect(page.locator("#legend")).to_contain_text("queued-model3 in flight, 2 queued")
    read.set()
    for thread in threads:
        thread.join(timeout=30)


def test_background_responses_count_as_running_and_waiting_as_streams_do(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI], tmp_path: Path) -> None:
    (tmp_path / "queued.yaml").write_text(PROFILE)
    server = start_server("--speed", "1", "--profiles-dir", str(tmp_path), "--max-num-seqs", "1")
    client = sdk_client(server)
    made = [client.responses.create(model="queued-model", input="Hi", max_output_tokens=16, background=True,
                                    extra_headers={"X-LLMSim-Speed": "4"})  # ~0.9 s each, one after the other
            for _ in range(2)]
    _until(lambda: _gauges(server) == {"vllm:num_requests_running": 1, "vllm:num_requests_waiting": 1},
           f"one running and one waiting, not {_gauges(server)}")
    for response in made:
        _until(lambda: client.responses.retrieve(response.id).status == "incomplete",  # noqa: B023 - used at once
               f"{response.id} never ended", timeout=30)
    _until(lambda: _gauges(server) == {"vllm:num_requests_running": 0, "vllm:num_requests_waiting": 0},
           f"none running or waiting at the end, not {_gauges(server)}")
