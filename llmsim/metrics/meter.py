"""One generating request, measured where its events leave the server: what the client saw.

The chaos gate measures its checks with `Measured`, which makes a Meter for every admitted request; the Admission
wraps two streams with it: the backend's deltas (to read the usage and finish reason) and the serialized events,
last before they become bytes (to time the first token and the gaps between tokens, latency faults included). When
the events end, however they end, the request's figures go into the metrics at once. Per event it costs a dict
lookup and, for a token, a clock read; the histograms are written once per request.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Any

from llmsim.chaos.faults import Admission
from llmsim.generation import Finish, Prompt
from llmsim.metrics.registry import ITL_BUCKETS, Metrics
from llmsim.request import SerializedEvent, ticket_of
from llmsim.shared.events import PACED_TEXT
from llmsim.timing.pricing import Pricing

FINISHED = {"stop": "stop", "tool_calls": "stop", "length": "length"}  # vLLM's reasons; anything else: abort
CHUNK = "chat.completion.chunk"
BLOCK_DELTA = "content_block_delta"  # the Messages API's token-carrying event
TEXT, OTHER, LOOK = 1, 0, 2  # an event type carries tokens, does not, or (a chat chunk) its data says
_KINDS: dict[str, int] = {}  # by event type: the builders' few names, so a lookup, not a string test per event


def _kind(kind: str) -> int:
    found = _KINDS[kind] = LOOK if kind == CHUNK else TEXT if kind.endswith(".delta") or kind == BLOCK_DELTA \
        else OTHER
    return found


def carries_tokens(kind: str, data: str) -> bool:
    """A Responses `*.delta` event, a Messages `content_block_delta`, or a Chat Completions chunk with content
    (not the role or finish chunk)."""
    found = _KINDS.get(kind)
    if found is None:
        found = _kind(kind)
    return found == TEXT or (found == LOOK and '"finish_reason":null' in data and '"role":"' not in data)


class Meter:
    """The figures of one request: made by the chaos gate, fed by the Admission's two wrappers."""

    def __init__(self, metrics: Metrics, model: str, *, stream: bool, input_tokens: int,
                 pricing: Pricing | None = None, entry: dict[str, Any] | None = None,
                 started: float | None = None) -> None:
        self.metrics = metrics
        self.series = metrics.series(model)
        self.model = self.series.model
        self.stream = stream
        self.pricing = pricing
        self.entry = entry  # the request log's entry (llmsim/chaos/admission.py): the dashboard's row
        self.started = time.perf_counter() if started is None else started
        self.prompt_tokens = input_tokens
        self.usage: list[Finish] = []  # one per choice (Chat Completions' n)
        self.streamed_tokens = 0
        self.response_id: str | None = None
        self.at_edge = False
        self.paced: Any = None  # the last paced TextRun (llmsim/timing/pacing.py), sent chunk by chunk
        self.closed = False
        self.first_made: float | None = None  # when the backend gave the first token: a JSON answer's first token

    def deltas(self, deltas: Iterator[Any]) -> Iterator[Any]:
        behind = not self.at_edge  # a background response: no events pass the edge, so it runs from its deltas
        if behind:
            self.series.running.inc()
        try:
            for delta in deltas:
                if isinstance(delta, Finish):
                    self.usage.append(delta)
                else:
                    tokens = getattr(delta, "tokens", 0)
                    if tokens and self.first_made is None:
                        self.first_made = time.perf_counter()
                    self.streamed_tokens += tokens
                    if getattr(delta, "pace", None) is not None:
                        self.paced = delta
                yield delta
        finally:
            if behind:  # its end is the deltas'
                self.series.running.dec()
                self.close(None, 0.0)

    def events(self, events: Iterator[SerializedEvent]) -> Iterator[SerializedEvent]:
        self.at_edge = True
        return self._timed(events)

    def _timed(self, events: Iterator[SerializedEvent]) -> Iterator[SerializedEvent]:
        running = self.series.running
        running.inc()
        first: float | None = None
        last = 0.0
        gaps = Gaps()
        add, clock, kinds = gaps.values.append, time.perf_counter, _KINDS.get  # per event: locals only
        try:
            for item in events:
                kind = item[0]
                found = kinds(kind)
                if found is None:
                    found = _kind(kind)
                if found == TEXT or (found == LOOK and carries_tokens(kind, item[1])):
                    now = clock()
                    if first is None:
                        first = now
                        if self.entry is not None:  # the request log shows it while the stream goes on
                            self.entry["ttft_ms"] = round((now - self.started) * 1000, 1)
                    else:
                        add(now - last)
                    last = now
                elif kind == PACED_TEXT:  # sent by the transport: when due (timed as each left), or at once
                    pace = item[1].pace
                    try:
                        yield item
                    finally:
                        for now in pace.sent if pace is not None else repeat(clock(), len(item[1].data)):
                            if first is None:
                                first = now
                            else:
                                add(now - last)
                            last = now
                    continue
                elif kind == "response.created" and self.response_id is None:
                    self.response_id = _response_id(item[1])
                yield item
        finally:
            running.dec()
            self.close(first, last, gaps)

    def chunks(self, chunks: Iterator[bytes], marks: tuple[bytes, bytes | None]) -> Iterator[bytes]:
        """A relayed stream forwarded as SSE bytes: its token events counted in each chunk, not cut out of it;
        the tokens of one chunk left the server together (no gap between them). `marks`: what a token event
        carries, and what such an event that carries no token has besides (llmsim/surface.py `token_marks`)."""
        self.at_edge = True
        token, none = marks
        return self._timed_chunks(chunks, Tally(token), Tally(none) if none is not None else None)

    def _timed_chunks(self, chunks: Iterator[bytes], tally: Tally, roles: Tally | None) -> Iterator[bytes]:
        running = self.series.running
        running.inc()
        first: float | None = None
        last = 0.0
        gaps = Gaps()
        try:
            for chunk in chunks:
                tokens = tally.count(chunk) - (roles.count(chunk) if roles is not None else 0)
                if tokens > 0:
                    now = time.perf_counter()
                    if first is None:
                        first = now
                        if self.entry is not None:
                            self.entry["ttft_ms"] = round((now - self.started) * 1000, 1)
                    else:
                        gaps.add(now - last)
                    gaps.values.extend([0.0] * (tokens - 1))
                    last = now
                if self.response_id is None and roles is None and b'"response.created"' in chunk:
                    self.response_id = _response_id(chunk.decode("utf-8", "replace"))
                yield chunk
        finally:
            running.dec()
            self.close(first, last, gaps)

    def close(self, first: float | None, last: float, gaps: Gaps | None = None) -> None:
        """Everything about the request, once: latencies, finish reason, tokens, cost, the log entry."""
        if self.closed:
            return
        self.closed = True
        m, series = self.metrics, self.series
        end = time.perf_counter()
        series.e2e.observe(end - self.started)
        if not self.stream:  # vLLM times every request's first token, a JSON answer's too: when it was made (a
            first = self.first_made or (end if self.usage else None)  # relayed answer: when it came, whole)
        ttft = None
        if first is not None:
            ttft = first - self.started
            series.ttft.observe(ttft)
        if self.stream and first is not None and gaps is not None and gaps.values:
            gaps.write(series.itl)
            series.tpot.observe((last - first) / len(gaps.values))
        reason = FINISHED.get(self.usage[-1].reason, "abort") if self.usage else "abort"
        prompt, output, reasoning, cached = self._tokens()
        series.success(reason).inc()
        series.prompt_tokens.inc(prompt)
        series.generation_tokens.inc(output)
        series.request_prompt_tokens.observe(prompt)
        series.request_generation_tokens.observe(output)
        if reasoning:
            series.reasoning_tokens.inc(reasoning)
        if self.pricing is not None:
            series.cost.inc(self.pricing.cost({"input_tokens": prompt, "output_tokens": output,
                                               "input_tokens_details": {"cached_tokens": cached}}))
        if m.refresh is not None:
            m.refresh()
        if self.entry is not None:
            self.entry.update(response_id=self.response_id, finished_reason=reason, input_tokens=prompt,
                              output_tokens=output, ttft_ms=None if ttft is None else round(ttft * 1000, 1),
                              duration_ms=round((end - self.started) * 1000, 1))

    def _unsent(self) -> int:
        """The tokens of the last paced run's chunks its client never got (counted whole when it came)."""
        run = self.paced
        return 0 if run is None else sum(tokens for _, tokens in run.chunks[run.pace.released:])

    def _tokens(self) -> tuple[int, int, int, int]:
        """(prompt, output, reasoning, cached): the usage the backend reported, or what was streamed before an
        abort."""
        if not self.usage:
            return self.prompt_tokens, self.streamed_tokens - self._unsent(), 0, 0
        return (max(f.usage.input_tokens for f in self.usage), sum(f.usage.output_tokens for f in self.usage),
                sum(f.usage.reasoning_tokens for f in self.usage), max(f.usage.cached_tokens for f in self.usage))


DELTA_EVENT = b".delta\ndata:"  # the end of a Responses `*.delta` event's name line (its `token_marks`)


class Tally:
    """Events counted in a stream's bytes by a mark they carry, a mark cut in two by a read counted once: the
    bytes before a chunk that could start one are looked at with it."""

    def __init__(self, mark: bytes) -> None:
        self.mark, self.keep, self.tail = mark, len(mark) - 1, b""

    def count(self, chunk: bytes) -> int:
        data = self.tail + chunk if self.tail else chunk
        self.tail = data[-self.keep:]
        return data.count(self.mark)


class Gaps:
    """A request's inter-token gaps, kept as they come and written to the histogram once, at the end: what
    `observe` does per value (prometheus-client has no batch observe), one file write per bucket instead of
    several per token."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def add(self, seconds: float) -> None:
        self.values.append(seconds)

    def write(self, child: Any) -> None:
        ordered = sorted(self.values)
        below = 0
        for i, bound in enumerate((*ITL_BUCKETS, math.inf)):
            upto = bisect.bisect_right(ordered, bound)  # values <= bound: observe() puts each in the first such
            if upto > below:
                child._buckets[i].inc(upto - below)  # the histogram's own values, as observe() writes them
            below = upto
        child._sum.inc(sum(ordered))


def _response_id(data: str) -> str | None:
    """The id in a `response.created` event, without parsing the whole response it carries."""
    start = data.find('"id":"')
    if start < 0:
        return None
    start += 6
    end = data.find('"', start)
    return data[start:end] if end > start else None


class Measured:
    """Admission measured (the chaos gate's `measure`): the fault or rate limit its checks gave counted, and a
    Meter on the admitted request, timed from before the checks (an injected hang is part of its wait)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def __call__(self, prompt: Prompt, stream: bool, check: Callable[[], Admission]) -> Admission:
        started = time.perf_counter()
        try:
            admission = check()
        except BaseException as error:
            ticket = ticket_of(error)
            self._count(ticket.entry if ticket is not None else None)
            raise
        entry = admission.ticket.entry if admission.ticket is not None else None
        self._count(entry)
        admission.meter = Meter(self.metrics, prompt.profile.id, stream=stream, input_tokens=prompt.input_tokens,
                                pricing=prompt.profile.pricing, entry=entry, started=started)
        return admission

    def _count(self, entry: dict[str, Any] | None) -> None:
        if entry is not None and entry.get("fault"):
            self.metrics.faults.labels(entry["fault"]).inc()
        if entry is not None and entry.get("rate_limited"):
            self.metrics.rate_limited.inc()
