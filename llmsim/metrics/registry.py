"""The metrics LLMSim exposes: vLLM's names (so its dashboards and autoscalers work unchanged) and `llmsim_*`.

Built once per app, after the server has chosen the multiprocess directory (llmsim/metrics/multiprocess.py):
under gunicorn every worker writes its own files there and a scrape merges them, so counters are summed,
histograms merged and live gauges count only live workers, whichever worker answers.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, get_args

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    values,
)
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from llmsim.chaos.rules import Kind
from llmsim.metrics.multiprocess import current_dir

MAX_MODELS = 64  # distinct model_name values per process; requests may name any model, the series must stay few
OTHER_MODEL = "other"

# vLLM's bucket bounds, with finer ones added where a simulated profile puts its p50/p95 (a superset, so
# queries written for vLLM's `le` values still find theirs).
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9,
                1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.01, 0.0125, 0.015, 0.0175, 0.02,
               0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
               40.0, 80.0)
REQUEST_BUCKETS = (0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
TOKEN_BUCKETS = tuple(float(m * 10 ** e) for e in range(7) for m in (1, 2, 5))  # vLLM's 1-2-5 series

_pid = [os.getpid()]  # this process's id, kept current across forks: prometheus-client asks for it on every update
os.register_at_fork(after_in_child=lambda: _pid.__setitem__(0, os.getpid()))


def _process_identifier() -> int:
    return _pid[0]


def _value_class() -> type:
    """prometheus-client's value class for this process: in files when a multiprocess directory is set, with the
    process id read from memory instead of a `getpid` call per update (a fork still changes it, and the files)."""
    if current_dir() is None:
        return values.MutexValue
    return values.MultiProcessValue(process_identifier=_process_identifier)


class Metrics:
    """Every metric of one app. In multiprocess mode the values live in files; otherwise in `registry`."""

    def __init__(self, shared_store: bool = False) -> None:
        self.multiprocess = current_dir() is not None
        # prometheus_client picks its value class (in memory, or mmapped files) when first imported, and the
        # server's process may import it before it makes the directory: pick again now that the choice is known.
        values.ValueClass = _value_class()
        disable_created_metrics()  # multiprocess mode has no `_created` series: one worker's server shows none either
        self.registry = CollectorRegistry()
        r = self.registry
        model = ["model_name"]
        self.running = Gauge("vllm:num_requests_running", "Requests being generated (LLMSim: admitted and not "
                             "finished, not waiting for a slot).", model, registry=r, multiprocess_mode="livesum")
        self.waiting = Gauge("vllm:num_requests_waiting", "Requests waiting for a slot (the worker's "
                             "--max-num-seqs, or the model's concurrency).", model, registry=r,
                             multiprocess_mode="livesum")
        self.ttft = Histogram("vllm:time_to_first_token_seconds", "Time to first token, from admission to the "
                              "first token written to the client (streams) or made (JSON answers).", model, registry=r,
                              buckets=TTFT_BUCKETS)
        self.itl = Histogram("vllm:inter_token_latency_seconds", "Time between tokens written to the client "
                             "(streams).", model, registry=r, buckets=ITL_BUCKETS)
        self.tpot = Histogram("vllm:time_per_output_token_seconds", "Per request: (last token - first token) / "
                              "(tokens written - 1) (streams).", model, registry=r, buckets=ITL_BUCKETS)
        self.e2e = Histogram("vllm:e2e_request_latency_seconds", "Admission to the last byte of the answer.",
                             model, registry=r, buckets=REQUEST_BUCKETS)
        self.queue_time = Histogram("vllm:request_queue_time_seconds", "Time in the model's queue (paced "
                                    "requests).", model, registry=r, buckets=REQUEST_BUCKETS)
        self.prompt_tokens = Counter("vllm:prompt_tokens", "Prompt tokens processed.", model, registry=r)
        self.generation_tokens = Counter("vllm:generation_tokens", "Output tokens generated (reasoning "
                                         "included).", model, registry=r)
        self.success = Counter("vllm:request_success", "Generations finished, by reason (stop, length, abort).",
                               [*model, "finished_reason"], registry=r)
        self.request_prompt_tokens = Histogram("vllm:request_prompt_tokens", "Prompt tokens per request.", model,
                                               registry=r, buckets=TOKEN_BUCKETS)
        self.request_generation_tokens = Histogram("vllm:request_generation_tokens", "Output tokens per request.",
                                                   model, registry=r, buckets=TOKEN_BUCKETS)
        self.faults = Counter("llmsim_faults_injected", "Faults injected, by kind.", ["kind"], registry=r)
        self.rate_limited = Counter("llmsim_rate_limited", "Requests refused by a real RPM/TPM limit.", registry=r)
        self.requests = Counter("llmsim_requests", "API requests answered, by endpoint and HTTP status.",
                                ["endpoint", "status"], registry=r)
        self.cost = Counter("llmsim_cost_usd", "What the traffic would have cost at the model's list prices.",
                            model, registry=r)
        self.reasoning_tokens = Counter("llmsim_reasoning_tokens", "Reasoning tokens generated.", model,
                                        registry=r)
        self.store_entries = Gauge("llmsim_store_entries", "Entries in the store, by kind.", ["kind"], registry=r,
                                   multiprocess_mode="livemostrecent" if shared_store else "livesum")
        self.background_queue = Gauge("llmsim_background_queue", "Background responses queued or running.",
                                      registry=r, multiprocess_mode="livesum")
        self.refresh: Callable[[], None] | None = None  # sets the gauges that follow a request (store sizes)
        self.store_sizes: tuple[int, int] | None = None  # as the store gauges were last set
        self._answered: dict[tuple[str, int], Any] = {}
        self._models: set[str] = set()
        self._series: dict[str, Series] = {}
        self._lock = threading.Lock()
        self.queues = Queues(self)
        self.background_queue.set(0)  # a series from the start, so a scrape shows the gauge before any job
        for kind in get_args(Kind):  # every kind at 0: `rate(...)` has a series before the first fault
            self.faults.labels(kind)
        self.families = [family for metric in vars(self).values() if isinstance(metric, MetricWrapperBase)
                         for family in metric.describe()]  # every metric, as a family with no samples

    def declare(self, models: Iterable[str]) -> None:
        """The live gauges of the models this server lists, at 0 from the start (a worker that never served one
        still reports it): an autoscaler or a "Scheduler State" panel reading `vllm:num_requests_waiting` finds
        a series before the first request. Not counted against MAX_MODELS: the list is the server's, not a
        client's."""
        for name in models:
            self.running.labels(name)
            self.waiting.labels(name)

    def answered(self, endpoint: str, status: int) -> None:
        """An API request answered, counted by endpoint and status (the labelled children kept, as in `series`)."""
        child = self._answered.get((endpoint, status))
        if child is None:
            child = self._answered[(endpoint, status)] = self.requests.labels(endpoint, str(status))
        child.inc()

    def set_store_sizes(self, responses: int, conversations: int, force: bool = False) -> None:
        """The store gauges, written only when a size changed or `force`: each write is a locked write to this
        process's metrics file, and every request would make two. `force`: a gauge whose most recent writer
        among the processes wins (a fleet's shared store) is written each time it is read."""
        if force or self.store_sizes != (responses, conversations):
            self.store_sizes = (responses, conversations)
            self.store_entries.labels("responses").set(responses)
            self.store_entries.labels("conversations").set(conversations)

    def model_label(self, name: str) -> str:
        """`name`, or "other" once this process has seen MAX_MODELS names: a client cannot grow the series."""
        if name in self._models:
            return name
        with self._lock:
            if len(self._models) < MAX_MODELS:
                self._models.add(name)
                return name
        return OTHER_MODEL

    def series(self, name: str) -> Series:
        """The labelled series of model `name` (its `model_label`), kept: `labels` costs more than an update."""
        found = self._series.get(name)
        if found is None:
            label = self.model_label(name)
            found = self._series.get(label)
            if found is None:
                found = self._series[label] = Series(self, label)
        return found

    def collecting_registry(self) -> CollectorRegistry:
        """What a scrape reads: every worker's files merged, or this process's values."""
        directory = current_dir()
        if not self.multiprocess or directory is None:
            return self.registry
        merged = CollectorRegistry()
        merged.register(Declared(MultiProcessCollector(None, path=directory), self.families))
        return merged

    def exposition(self) -> bytes:
        return generate_latest(self.collecting_registry())

    def samples(self) -> dict[str, list[tuple[dict[str, str], float]]]:
        """Every sample, merged across workers, by sample name (`..._total`, `..._bucket`, ...)."""
        out: dict[str, list[tuple[dict[str, str], float]]] = {}
        for family in self.collecting_registry().collect():
            for sample in family.samples:
                if not math.isnan(sample.value):
                    out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
        return out


class Declared(Collector):
    """The workers' merged files, then every metric this process declares that they hold no value of yet (a
    labelled metric before its first label): a scrape of several workers lists every metric, as one worker's
    does, from the first scrape."""

    def __init__(self, merged: MultiProcessCollector, declared: list[Metric]) -> None:
        self.merged = merged
        self.declared = declared

    def collect(self) -> Iterator[Metric]:
        seen = set()
        for family in self.merged.collect():
            seen.add(family.name)
            yield family
        for family in self.declared:
            if family.name not in seen:
                yield family


class Series:
    """One model's children of the per-model metrics (`series.ttft` is `metrics.ttft.labels(model)`), each made
    when first used, as `labels` makes it, so a scrape shows the same series."""

    def __init__(self, metrics: Metrics, model: str) -> None:
        self._metrics = metrics
        self.model = model
        self._success: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        child = getattr(self._metrics, name).labels(self.model)
        setattr(self, name, child)
        return child

    def success(self, reason: str) -> Any:
        child = self._success.get(reason)
        if child is None:
            child = self._success[reason] = self._metrics.success.labels(self.model, reason)
        return child


class Queues:
    """The pacer's QueueObserver (llmsim/timing/pacing.py): a queued request waits instead of running."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def waiting(self, model: str, change: int) -> None:
        label = self.metrics.model_label(model)
        self.metrics.waiting.labels(label).inc(change)
        self.metrics.running.labels(label).dec(change)

    def queued(self, model: str, seconds: float) -> None:
        self.metrics.queue_time.labels(self.metrics.model_label(model)).observe(seconds)


def histogram(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **match: str) -> dict[str, Any]:
    """One histogram's merged buckets (cumulative counts by finite upper bound: JSON has no +Inf; `count` is
    the +Inf bucket's), sum and count, for labels `match`."""
    def picked(suffix: str) -> list[tuple[dict[str, str], float]]:
        return [(labels, value) for labels, value in samples.get(name + suffix, [])
                if all(labels.get(k) == v for k, v in match.items())]

    cumulative: dict[float, float] = {}
    for labels, value in picked("_bucket"):
        bound = float(labels["le"])
        if bound != math.inf:
            cumulative[bound] = cumulative.get(bound, 0.0) + value
    return {"buckets": sorted(cumulative.items()), "sum": sum(v for _, v in picked("_sum")),
            "count": sum(v for _, v in picked("_count"))}
