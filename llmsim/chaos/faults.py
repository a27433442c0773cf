"""Fault injection: which request fails, how it fails, and a count of every fault served.

Rules are data (a YAML/JSON file, `--fault` flags, the admin API). Each names one fault and which requests
it hits: a seeded probability, a schedule (the first N, every k-th, listed request indexes), within a scope
(models, endpoints, API keys, metadata). The `X-LLMSim-Fault` header forces one fault on one request.
Nothing here knows HTTP: HTTP faults become APIErrors, stream faults wrap the serialized event stream.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llmsim.chaos.ratelimit import duration, retry_after_headers
from llmsim.chaos.rules import DEFAULT_AFTER_EVENTS, DEFAULT_RETRY_AFTER, Fault, FaultConfig, RequestInfo, Rule
from llmsim.errors import APIError
from llmsim.generation import Delta, Finish, expand
from llmsim.request import SerializedEvent
from llmsim.runtime import waits

if TYPE_CHECKING:
    from llmsim.metrics.meter import Meter
    from llmsim.request import Ticket
    from llmsim.surface import Ending


@dataclass(frozen=True)
class HttpFault:
    status: int
    type: str
    code: str | None
    message: str
    param: str | None = None


# The bodies the real API (or its Cloudflare edge, for 502/504) sends.
HTTP_FAULTS: dict[str, HttpFault] = {
    "rate_limit": HttpFault(429, "requests", "rate_limit_exceeded", "Rate limit reached for {model} in organization "
                            "org-llmsim on requests per min (RPM): Limit {rpm}, Used {rpm}, Requested 1. Please try "
                            "again in {retry}. Visit https://platform.openai.com/account/rate-limits to learn more."),
    "insufficient_quota": HttpFault(429, "insufficient_quota", "insufficient_quota",
                                    "You exceeded your current quota, please check your plan and billing details. "
                                    "For more information on this error, read the docs: "
                                    "https://platform.openai.com/docs/guides/error-codes/api-errors."),
    "server_error": HttpFault(500, "server_error", None,
                              "The server had an error while processing your request. Sorry about that!"),
    "bad_gateway": HttpFault(502, "cf_bad_gateway", None, "Bad gateway."),
    "overloaded": HttpFault(503, "server_error", None, "The server is overloaded or not ready yet."),
    "slow_down": HttpFault(503, "server_error", "slow_down",
                           "Slow Down: a sudden increase in your request rate is impacting service reliability. "
                           "Please reduce your request rate to its original level, maintain a consistent rate for "
                           "at least 15 minutes, and then gradually increase it."),
    "gateway_timeout": HttpFault(504, "cf_gateway_timeout", None, "Gateway timeout."),
    "context_length_exceeded": HttpFault(400, "invalid_request_error", "context_length_exceeded",
                                         "Your input exceeds the context window of this model. Please adjust your "
                                         "input and try again.", "input"),
    "invalid_api_key": HttpFault(401, "invalid_request_error", "invalid_api_key",
                                 "Incorrect API key provided: sk-****. You can find your API key at "
                                 "https://platform.openai.com/account/api-keys."),
    "forbidden": HttpFault(403, "request_forbidden", "unsupported_country_region_territory",
                           "Country, region, or territory not supported"),
}


class ConnectionDropped(waits.ClientGone):
    """Raised to cut the connection with no further bytes; the server closes the socket quietly."""

    def __init__(self) -> None:
        super().__init__("LLMSim fault: connection dropped")


class Injector:
    """Holds the config and the state that makes schedules exact and probabilities reproducible: per rule,
    the count of requests in its scope and a random generator seeded by (seed, rule position)."""

    def __init__(self, config: FaultConfig | None = None, seed: int | None = None) -> None:
        self.default_seed = seed
        self.counters: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.configure(config or FaultConfig())

    def configure(self, config: FaultConfig) -> None:
        with self._lock:
            self.config = config
            self._restart()

    def reset(self) -> None:
        """Counters back to zero and every schedule and random sequence from its start."""
        with self._lock:
            self.counters.clear()
            self._restart()

    def _restart(self) -> None:
        seed = self.config.seed if self.config.seed is not None else self.default_seed
        self._seen = [0] * len(self.config.faults)
        self._rngs = [random.Random(None if seed is None else f"{seed}:{i}") for i in range(len(self.config.faults))]

    def choose(self, request: RequestInfo) -> Rule | None:
        """The first rule that fires for this request. Every rule in scope counts the request and draws its
        random number, fired or not, so each rule's schedule and sequence stay independent of the others."""
        chosen: Rule | None = None
        with self._lock:
            for i, rule in enumerate(self.config.faults):
                if not rule.in_scope(request):
                    continue
                self._seen[i] += 1
                drawn = self._rngs[i].random() < rule.probability if rule.probability is not None else False
                if chosen is None and (rule.unconditional or drawn or rule.scheduled(self._seen[i])):
                    chosen = rule
        return chosen

    def count(self, kind: str) -> None:
        with self._lock:
            self.counters[kind] += 1


def http_error(fault: Fault, model: str, headers: dict[str, str]) -> APIError:
    """The APIError for an HTTP fault, with the headers the real API sends with it."""
    spec = HTTP_FAULTS[fault.kind]
    headers = dict(headers)
    retry_after = fault.retry_after
    if fault.kind == "rate_limit":
        retry_after = DEFAULT_RETRY_AFTER if retry_after is None else retry_after
    message = fault.message or spec.message.format(
        model=model, rpm=headers.get("x-ratelimit-limit-requests", "?"),
        retry=duration(retry_after or 0.0),
    )
    if retry_after is not None:
        headers.update(retry_after_headers(retry_after))
    return APIError(message, status=spec.status, type=spec.type, param=spec.param, code=spec.code, headers=headers)


class StreamFault:
    """Wraps one response's serialized events (and counts its output tokens) to fail, cut or slow it."""

    def __init__(self, fault: Fault, stream: bool, sleep: Callable[[float], None] | None = None) -> None:
        self.fault = fault
        self.kind = fault.kind if stream or fault.kind != "stream_error" else "stream_failed"
        self.sleep = sleep or waits.wait  # never `time.sleep` as a default: bound at import, it blocks the worker
        self.tokens = 0
        self.after_events = fault.after_events
        if fault.after_events is None and fault.after_tokens is None:
            self.after_events = 0 if fault.kind in ("latency_spike", "slow_stream") else DEFAULT_AFTER_EVENTS

    def count(self, delta: Delta) -> None:
        self.tokens += getattr(delta, "tokens", 0)

    def _due(self, sent: int) -> bool:
        return ((self.after_events is not None and sent >= self.after_events)
                or (self.fault.after_tokens is not None and self.tokens >= self.fault.after_tokens))

    def events(self, builder: Ending, events: Iterator[SerializedEvent]) -> Iterator[SerializedEvent]:
        """The events, ended (or slowed) as the fault says, the end in the builder's words."""
        ending = self.kind not in ("latency_spike", "slow_stream")
        sent, slept = 0, False
        while True:
            due = self._due(sent)
            if ending and due:
                yield from self._end(builder, events, None)
                return
            item = next(events, None)
            if item is None:  # a stream with no terminal event (Chat Completions chunks) ended short of the trigger
                if ending:
                    yield from self._end(builder, events, None)
                return
            if ending and item[0] in builder.terminal:  # a stream shorter than the trigger: the fault takes its end
                yield from self._end(builder, events, item)
                return
            if due and (self.kind == "slow_stream" or not slept):
                slept = True
                self.sleep(self.fault.seconds or 0.0)
            yield item
            sent += 1

    def answer_body(self) -> None:
        """The fault on a JSON answer made elsewhere (proxy, replay): a cut, a 500, or a wait before it."""
        if self.kind in ("latency_spike", "slow_stream"):
            self.sleep(self.fault.seconds or 0.0)
        elif self.kind in ("stream_drop", "stream_malformed"):
            raise ConnectionDropped()
        else:
            raise APIError(self.fault.message or "The server had an error while processing your request. Sorry "
                           "about that!", status=500, type="server_error")

    def _end(self, builder: Ending, events: Iterator[SerializedEvent], pending: SerializedEvent | None
             ) -> Iterator[SerializedEvent]:
        if self.kind == "stream_malformed" and pending is None:
            pending = next(events, None)
        close = getattr(events, "close", None)  # stop the generator under it: nothing more is made
        if close is not None:
            close()
        message = self.fault.message or "The server had an error while processing your request. Sorry about that!"
        if self.kind == "stream_failed":
            for event in builder.fail("server_error", message):
                yield event["type"], builder.dumps(event)
        elif self.kind == "stream_error":
            event = builder.error("server_error", message)
            yield event["type"], builder.dumps(event)
        else:
            if self.kind == "stream_malformed" and pending is not None:  # half of an event's JSON, then nothing
                yield pending[0], pending[1][: len(pending[1]) // 2]
            raise ConnectionDropped()


@dataclass
class Admission:
    """What the gate (llmsim/chaos/admission.py) hands the pipeline: count the output tokens, settle rate limits
    at the end, and wrap the events when a stream fault was chosen. `meter` measures the request
    (llmsim/metrics/meter.py); `ticket` is what its answer carries (x-ratelimit headers, the request log entry)."""

    on_finish: Callable[[Finish], None] | None = None
    stream_fault: StreamFault | None = None
    meter: Meter | None = None
    ticket: Ticket | None = None

    def deltas(self, deltas: Iterator[Delta]) -> Iterator[Delta]:
        if self.stream_fault is not None:  # it counts the tokens as the client gets them: one by one
            deltas = self._deltas(expand(deltas))
        elif self.on_finish is not None:  # else nothing to do per delta
            deltas = self._deltas(deltas)
        return self.meter.deltas(deltas) if self.meter else deltas

    def _deltas(self, deltas: Iterator[Delta]) -> Iterator[Delta]:
        for delta in deltas:
            if self.stream_fault is not None:
                self.stream_fault.count(delta)
            if isinstance(delta, Finish) and self.on_finish is not None:
                self.on_finish(delta)
            yield delta

    def events(self, builder: Ending, events: Iterator[SerializedEvent]) -> Iterator[SerializedEvent]:
        """`events` (the builder's), ended or slowed by the stream fault, timed by the meter."""
        events = self.stream_fault.events(builder, events) if self.stream_fault else events
        if self.meter is None:
            return events
        if self.meter.response_id is None and builder.response:  # a JSON answer's events are not serialized:
            self.meter.response_id = builder.response.get("id")  # its id is the builder's
        return self.meter.events(events)  # last: what leaves the server is timed

    def chunks(self, chunks: Iterator[bytes], marks: tuple[bytes, bytes | None]) -> Iterator[bytes]:
        """A relayed stream sent as its bytes (no stream fault: nothing needs its events one by one), timed;
        `marks`: how its token events are told in its bytes (llmsim/surface.py `token_marks`)."""
        assert self.stream_fault is None, "a stream fault needs the events"
        return self.meter.chunks(chunks, marks) if self.meter else chunks

