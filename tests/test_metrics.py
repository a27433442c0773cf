"""GET /metrics: exact values after a known mix of requests across gunicorn workers, the edge timing, the live
gauges after a worker dies."""

from __future__ import annotations

import glob
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.parser import text_string_to_metric_families

from llmsim.metrics.meter import Gaps
from llmsim.metrics.registry import ITL_BUCKETS
from llmsim.testing import ServerProcess, startup_limit

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

FIXED_PROFILE = """
models:
  - id: fixed-timing
    timing:
      ttft_ms: {kind: normal, mean: 300, stddev: 0}
      itl_ms: {kind: normal, mean: 20, stddev: 0}
      prefill_tokens_per_s: 1000000000
      reasoning_tokens_per_s: 1000
    pricing: {input: 1.0, output: 2.0}
  - id: json-timing
    timing:
      ttft_ms: {kind: normal, mean: 300, stddev: 0}
      itl_ms: {kind: normal, mean: 100, stddev: 0}
      prefill_tokens_per_s: 1000000000
      reasoning_tokens_per_s: 1000
  - id: slow-model
    timing:
      ttft_ms: {kind: normal, mean: 60000, stddev: 0}
      itl_ms: {kind: normal, mean: 20, stddev: 0}
      prefill_tokens_per_s: 1000000000
      reasoning_tokens_per_s: 1000
"""


def scrape(server: ServerProcess) -> Samples:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def requests_by_worker(metrics_dir: Path) -> dict[str, float]:
    """llmsim_requests_total as each worker wrote it in its own file."""
    counts: dict[str, float] = {}
    for path in glob.glob(str(metrics_dir / "counter_*.db")):
        pid = Path(path).stem.split("_")[-1]
        counts[pid] = sum(v for key, v, _, _ in MmapedDict.read_all_values_from_file(path)
                          if '"llmsim_requests_total"' in key)
    return counts


def test_values_are_exact_across_two_workers(start_server: Callable[..., ServerProcess],
                                             sdk_client: Callable[..., openai.OpenAI], tmp_path: Path) -> None:
    server = start_server("--workers", "2", env={"TMPDIR": str(tmp_path)})
    (metrics_dir,) = [Path(p) for p in glob.glob(str(tmp_path / "llmsim-metrics-*"))]
    client = sdk_client(server, default_headers={"Connection": "close"})  # a new connection each: both workers
    expected: Counter[str] = Counter()
    deltas = 0

    def stream(model: str) -> None:
        nonlocal deltas
        with client.responses.stream(model=model, input="Tell me about tides.") as events:
            count = sum(1 for event in events if event.type.endswith(".delta"))
            usage = events.get_final_response().usage
        deltas += count - 1  # gaps between tokens
        expected["mini_prompt"] += usage.input_tokens
        expected["mini_output"] += usage.output_tokens

    rounds = 0
    while rounds < 2 or len([n for n in requests_by_worker(metrics_dir).values() if n]) < 2:
        assert rounds < 12, f"the requests never reached both workers: {requests_by_worker(metrics_dir)}"
        rounds += 1
        threads = [threading.Thread(target=stream, args=("gpt-4o-mini",)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for _ in range(2):
            raw = client.responses.with_raw_response.create(model="gpt-4o", input="Hi there.", max_output_tokens=30)
            response = raw.parse()
            expected["4o_prompt"] += response.usage.input_tokens
            expected["4o_output"] += response.usage.output_tokens
            expected["4o_cost"] += float(raw.headers["x-llmsim-cost-usd"])
            expected["4o_" + ("length" if response.status == "incomplete" else "stop")] += 1
        chunks = client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "Hello"}],
                                                stream=True, stream_options={"include_usage": True})
        for chunk in chunks:
            if chunk.usage:
                expected["chat_output"] += chunk.usage.completion_tokens
        with pytest.raises(openai.RateLimitError):
            client.responses.create(model="gpt-4o", input="x", extra_headers={"X-LLMSim-Fault": "429"})
        with pytest.raises(openai.InternalServerError):
            client.responses.create(model="gpt-4o", input="x", extra_headers={"X-LLMSim-Fault": "500"})
        dropped = client.responses.stream(model="gpt-4.1-mini", input="x",
                                          extra_headers={"X-LLMSim-Fault": "stream_drop;after_events=4"})
        with pytest.raises(openai.APIError), dropped as events:
            for _ in events:
                pass
        for thread in threads:
            thread.join()

    scrapes = [scrape(server) for _ in range(6)]  # whichever worker answers, the same figures
    samples = scrapes[0]
    counters = {key: v for key, v in samples.items() if key[0].endswith(("_total", "_count", "_bucket"))}
    for other in scrapes[1:]:
        assert {key: other[key] for key in counters} == counters
    assert value(samples, "llmsim_requests_total", endpoint="/responses", status="200") == 6 * rounds
    assert value(samples, "llmsim_requests_total", endpoint="/chat/completions", status="200") == rounds
    assert value(samples, "llmsim_requests_total", endpoint="/responses", status="429") == rounds
    assert value(samples, "llmsim_requests_total", endpoint="/responses", status="500") == rounds
    assert value(samples, "llmsim_faults_injected_total", kind="rate_limit") == rounds
    assert value(samples, "llmsim_faults_injected_total", kind="server_error") == rounds
    assert value(samples, "llmsim_faults_injected_total", kind="stream_drop") == rounds
    assert value(samples, "llmsim_rate_limited_total") == 0
    mini, gpt4o = {"model_name": "gpt-4o-mini"}, {"model_name": "gpt-4o"}
    assert value(samples, "vllm:request_success_total", finished_reason="stop", **mini) == 3 * rounds
    assert value(samples, "vllm:request_success_total", finished_reason="stop", **gpt4o) == expected["4o_stop"]
    assert value(samples, "vllm:request_success_total", finished_reason="length", **gpt4o) == expected["4o_length"]
    assert expected["4o_stop"] + expected["4o_length"] == 2 * rounds
    assert value(samples, "vllm:request_success_total", finished_reason="stop", model_name="gpt-4.1") == rounds
    assert value(samples, "vllm:request_success_total", finished_reason="abort", model_name="gpt-4.1-mini") == rounds
    assert value(samples, "vllm:prompt_tokens_total", **mini) == expected["mini_prompt"]
    assert value(samples, "vllm:generation_tokens_total", **mini) == expected["mini_output"]
    assert value(samples, "vllm:prompt_tokens_total", **gpt4o) == expected["4o_prompt"]
    assert value(samples, "vllm:generation_tokens_total", **gpt4o) == expected["4o_output"]
    assert value(samples, "vllm:generation_tokens_total", model_name="gpt-4.1") == expected["chat_output"]
    assert value(samples, "vllm:request_generation_tokens_sum", **mini) == expected["mini_output"]
    assert value(samples, "llmsim_cost_usd_total", **gpt4o) == pytest.approx(expected["4o_cost"], abs=1e-6)
    assert value(samples, "vllm:time_to_first_token_seconds_count", **mini) == 3 * rounds
    assert value(samples, "vllm:time_to_first_token_seconds_count", **gpt4o) == 2 * rounds  # not streamed: counted
    assert value(samples, "vllm:inter_token_latency_seconds_count", **gpt4o) == 0  # ... but they have no gaps
    assert value(samples, "vllm:inter_token_latency_seconds_count", **mini) == deltas
    assert value(samples, "vllm:e2e_request_latency_seconds_count", **gpt4o) == 2 * rounds
    for model in ("gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-4.1-mini"):
        assert value(samples, "vllm:num_requests_running", model_name=model) == 0
    assert value(samples, "llmsim_store_entries", kind="responses") == 5 * rounds  # summed over the workers
    assert len([n for n in requests_by_worker(metrics_dir).values() if n]) == 2


@pytest.fixture(scope="module")
def timed_server(shared_server: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory
                 ) -> ServerProcess:
    """Two workers pacing FIXED_PROFILE's models at speed 1, for the module. Its tests share it: each asks its own
    model's series (fixed-timing's; slow-model's and gpt-4o's), and a worker killed by one is replaced by gunicorn."""
    profiles = tmp_path_factory.mktemp("fixed")
    (profiles / "fixed.yaml").write_text(FIXED_PROFILE)
    return shared_server("--workers", "2", "--profiles-dir", str(profiles), "--speed", "1")


def test_ttft_and_itl_are_what_the_client_saw(timed_server: ServerProcess,
                                              sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = timed_server
    client = sdk_client(server)
    with client.responses.stream(model="fixed-timing", input="Hi", max_output_tokens=16) as events:
        assert sum(1 for event in events if event.type == "response.output_text.delta") > 1
    samples = scrape(server)
    labels = {"model_name": "fixed-timing"}
    assert value(samples, "vllm:time_to_first_token_seconds_bucket", le="0.25", **labels) == 0  # 300 ms
    assert value(samples, "vllm:time_to_first_token_seconds_bucket", le="1.0", **labels) == 1  # (margin for load)
    gaps = value(samples, "vllm:inter_token_latency_seconds_count", **labels)
    mean_gap = value(samples, "vllm:inter_token_latency_seconds_sum", **labels) / gaps  # 20 ms: pacing keeps a
    assert gaps >= 1 and 0.015 <= mean_gap <= 0.05  # schedule, so a late token shortens the next gap
    # A latency spike is injected after the pacer, before the bytes: only a measurement at the edge sees it.
    with client.responses.stream(model="fixed-timing", input="Hi", max_output_tokens=16,
                                 extra_headers={"X-LLMSim-Fault": "latency_spike;seconds=1.1"}) as events:
        for _ in events:
            pass
    samples = scrape(server)
    assert value(samples, "vllm:time_to_first_token_seconds_bucket", le="1.0", **labels) == 1  # the first only
    assert value(samples, "vllm:time_to_first_token_seconds_bucket", le="1.25", **labels) == 2
    assert value(samples, "vllm:time_to_first_token_seconds_count", **labels) == 2


def test_a_json_answers_first_token_is_timed_when_it_was_made(timed_server: ServerProcess,
                                                             sdk_client: Callable[..., openai.OpenAI]) -> None:
    """Issue 46, item 14: vLLM's TTFT counts every request; a non-streamed one's first token is timed when it was
    made (300 ms here), not when the whole answer left (after 15 more tokens 100 ms apart)."""
    response = sdk_client(timed_server).responses.create(model="json-timing", input="Hi", max_output_tokens=16)
    assert response.usage is not None and response.usage.output_tokens == 16
    samples = scrape(timed_server)
    labels = {"model_name": "json-timing"}
    assert value(samples, "vllm:time_to_first_token_seconds_count", **labels) == 1
    assert value(samples, "vllm:time_to_first_token_seconds_bucket", le="0.25", **labels) == 0
    assert value(samples, "vllm:time_to_first_token_seconds_bucket", le="1.0", **labels) == 1
    assert value(samples, "vllm:e2e_request_latency_seconds_bucket", le="1.0", **labels) == 0  # 1.8 s
    assert value(samples, "vllm:inter_token_latency_seconds_count", **labels) == 0


def test_real_rate_limits_are_counted(start_server: Callable[..., ServerProcess],
                                      sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = start_server("--rpm", "1")
    client = sdk_client(server)
    client.responses.create(model="gpt-4o", input="x")
    with pytest.raises(openai.RateLimitError):
        client.responses.create(model="gpt-4o", input="x")
    samples = scrape(server)
    assert value(samples, "llmsim_rate_limited_total") == 1
    assert value(samples, "llmsim_faults_injected_total", kind="rate_limit") == 0
    assert value(samples, "llmsim_requests_total", endpoint="/responses", status="429") == 1


def _workers(master: int) -> list[int]:
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == master:
            found.append(int(Path(stat).parent.name))
    return found


def test_a_dead_workers_live_gauges_go_and_its_counters_stay(timed_server: ServerProcess,
                                                             sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = timed_server
    client = sdk_client(server)
    client.responses.create(model="gpt-4o", input="x")

    cut: list[Exception] = []

    def hang() -> None:
        try:
            for _ in client.responses.create(model="slow-model", input="x", stream=True):
                pass
        except Exception as exc:  # noqa: BLE001 - the worker dies under it; any transport error will do
            cut.append(exc)

    thread = threading.Thread(target=hang, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while value(scrape(server), "vllm:num_requests_running", model_name="slow-model") != 1:
        assert time.monotonic() < deadline, "the slow stream never showed as running"
        time.sleep(0.1)
    assert server.process is not None
    workers = _workers(server.process.pid)
    assert len(workers) == 2
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + startup_limit(15)  # two workers' starts: longer on a loaded machine
    while True:  # gunicorn starts new workers; the dead ones' live gauges are gone
        try:
            samples = scrape(server)
            if len(set(_workers(server.process.pid)) - set(workers)) == 2:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the workers did not come back"
        time.sleep(0.2)
    assert value(samples, "vllm:num_requests_running", model_name="slow-model") == 0
    assert value(samples, "vllm:request_success_total", model_name="gpt-4o", finished_reason="stop") == 1
    thread.join(timeout=10)
    assert cut, "the stream outlived its worker"


def test_gaps_written_at_once_read_as_observed_one_by_one() -> None:
    """The meter writes a request's inter-token gaps once; the histogram must read as if each were observed."""
    registry = CollectorRegistry()
    one_by_one = Histogram("one", "", registry=registry, buckets=ITL_BUCKETS)
    batched = Histogram("batched", "", registry=registry, buckets=ITL_BUCKETS)
    gaps = Gaps()
    for seconds in (0.0005, 0.001, 0.0099, 0.01, 0.011, 0.5, 3.0, 100.0):
        one_by_one.observe(seconds)
        gaps.add(seconds)
    gaps.write(batched)

    def read(name: str) -> list[tuple[str, dict[str, str], float]]:
        return [(s.name[len(name):], s.labels, s.value) for f in registry.collect() if f.name == name
                for s in f.samples if not s.name.endswith("_created")]

    assert read("batched") == read("one")
    assert read("one")[-2:] == [("_count", {}, 8.0), ("_sum", {}, pytest.approx(103.5324))]


def test_each_response_on_a_websocket_is_measured(start_server: Callable[..., ServerProcess],
                                                  sdk_client: Callable[..., openai.OpenAI]) -> None:
    server = start_server("--fault", "server_error;requests=2")  # the connection's second response fails
    client = sdk_client(server)
    kinds = []
    with client.responses.connect() as connection:
        for _ in range(3):
            connection.response.create(model="gpt-4o", input="Tell me about tides.")
            for event in connection:
                if event.type in ("response.completed", "error"):
                    kinds.append(event.type)
                    break
    assert kinds == ["response.completed", "error", "response.completed"]
    samples = scrape(server)
    gpt4o = {"model_name": "gpt-4o"}
    assert value(samples, "llmsim_faults_injected_total", kind="server_error") == 1
    assert value(samples, "vllm:request_success_total", finished_reason="stop", **gpt4o) == 2
    assert value(samples, "vllm:time_to_first_token_seconds_count", **gpt4o) == 2
    assert value(samples, "vllm:num_requests_running", **gpt4o) == 0


def test_one_worker_keeps_its_metrics_in_memory_and_shows_what_two_workers_show(
        start_server: Callable[..., ServerProcess], sdk_client: Callable[..., openai.OpenAI], tmp_path: Path) -> None:
    """Multiprocess mode's files cost a lock and an mmap write per update: a server of one worker has none, and its
    scrape has the same series, with the same counts, as a server of two (no `_created` series in either)."""
    scraped = {}
    for workers in ("1", "2"):
        directory = tmp_path / workers
        directory.mkdir()
        server = start_server("--workers", workers, "--seed", "7", env={"TMPDIR": str(directory)})
        assert bool(glob.glob(str(directory / "llmsim-metrics-*"))) == (workers == "2")
        client = sdk_client(server)
        client.responses.create(model="gpt-4o", input="Hi there.")
        with client.responses.stream(model="gpt-4o-mini", input="Tell me about tides.") as events:
            events.get_final_response()
        text = httpx.get(f"{server.url}/metrics", timeout=10).text
        scraped[workers] = {(sample.name, frozenset(sample.labels.items())): sample.value
                            for family in text_string_to_metric_families(text) for sample in family.samples
                            if "_bucket" not in sample.name and "_sum" not in sample.name}
    assert not [key for key in scraped["1"] if key[0].endswith("_created")]
    assert scraped["1"].keys() == scraped["2"].keys()
    counts = [key for key in scraped["1"] if key[0].endswith(("tokens_total", "requests_total", "_count"))]
    assert counts and all(scraped["1"][key] == scraped["2"][key] for key in counts)


# Every metric the README's metrics table lists (as exposed: counters with `_total`).
DOCUMENTED = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:time_to_first_token_seconds",
              "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
              "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:prompt_tokens_total",
              "vllm:generation_tokens_total", "vllm:request_success_total", "vllm:request_prompt_tokens",
              "vllm:request_generation_tokens", "llmsim_requests_total", "llmsim_faults_injected_total",
              "llmsim_rate_limited_total", "llmsim_cost_usd_total", "llmsim_reasoning_tokens_total",
              "llmsim_store_entries", "llmsim_background_queue")


def test_the_first_scrape_of_two_workers_lists_every_metric_with_idle_gauges_at_zero(
        start_server: Callable[..., ServerProcess]) -> None:
    """Before any request, with several workers (whose merged files hold only what was written): every documented
    metric is listed, the live gauges of every listed model are 0, and every fault kind counts 0."""
    server = start_server("--workers", "2")
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    families = {family.name: family for family in text_string_to_metric_families(text)}
    exposed = {f"{name}_total" if family.type == "counter" else name for name, family in families.items()}
    assert set(DOCUMENTED) <= exposed, sorted(set(DOCUMENTED) - exposed)
    samples = scrape(server)
    for model in ("gpt-4o", "o3"):
        for gauge in ("vllm:num_requests_waiting", "vllm:num_requests_running"):
            assert (gauge, frozenset({("model_name", model)})) in samples
            assert value(samples, gauge, model_name=model) == 0
    assert ("llmsim_faults_injected_total", frozenset({("kind", "stream_drop")})) in samples
    assert value(samples, "llmsim_background_queue") == 0 and ("llmsim_rate_limited_total", frozenset()) in samples
    assert text.count("# TYPE vllm:num_requests_waiting ") == 1  # listed once, however many workers hold it

    # The dashboard's history (llmsim/metrics/history.py): each worker samples the merged metrics, so whichever
    # worker a reloaded page asks has the traffic every worker served.
    with httpx.Client(base_url=server.base_url) as client:
        for _ in range(4):
            client.post("/responses", json={"model": "gpt-4o", "input": "Hi"}).raise_for_status()

    def seen_by_every_worker() -> bool:
        answers = [httpx.get(f"{server.url}/llmsim/ui/api/history").json()["points"] for _ in range(8)]
        return all(points and points[-1]["finished"].get("gpt-4o") == 4 for points in answers)

    deadline = time.monotonic() + 15
    while not seen_by_every_worker():
        assert time.monotonic() < deadline, "a worker's history never showed the traffic"
        time.sleep(0.3)
