"""Realistic timing: wraps a backend's deltas and waits before each one as the model's profile says.

The first delta waits the time to first token (a sampled base plus input_tokens at the
prefill rate), hidden reasoning tokens take their time at the reasoning rate, and every
further visible token waits one inter-token latency. Waits run against a schedule (a
late wake-up shortens the next wait) so gaps keep their configured distribution under load.

Waiting is `waits.wait`: in the gevent workers a waiting stream is a parked greenlet that the worker's
one pacing timer wakes with every other stream due in the same tick (llmsim/runtime/ticks.py), and a
wait ends the request when its client hangs up. A paced TextRun (`pace(runs=True)`, for SSE) waits only for
its first chunk here and carries the others' waits (RunPace) to the transport, which sends each chunk when it
is due (llmsim/runtime/release.py): the same draws, the same schedule. The per-model queue is a
`threading.BoundedSemaphore` made per model at run time, so it is gevent's too.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import Protocol, cast

from llmsim.generation import Delta, Prompt, ReasoningDelta, TextDelta, TextRun, ToolArgsDelta, expand
from llmsim.rng import for_request as rng_for
from llmsim.runtime import shutdown, waits
from llmsim.timing.latency import Concurrency, Timing
from llmsim.timing.sequences import Sequences


def _sleep(seconds: float) -> None:
    waits.wait(seconds)  # the worker's shared timer, or a plain sleep looked up at call time; ends if the client left


class QueueObserver(Protocol):
    """Told about the per-model queues (the metrics' running/waiting gauges and queue-time histogram)."""

    def waiting(self, model: str, change: int) -> None: ...

    def queued(self, model: str, seconds: float) -> None: ...


class ModelLoad:
    """Sequences running for one model in this process, and the queue past its limit."""

    def __init__(self, concurrency: Concurrency | None, name: str = "",
                 observer: QueueObserver | None = None) -> None:
        self.concurrency = concurrency
        self.name = name
        self.observer = observer
        self.running = 0
        self.waiting = 0
        self._slots = threading.BoundedSemaphore(concurrency.max_sequences) if concurrency else None

    @contextmanager
    def slot(self) -> Iterator[bool]:
        """Hold one of the model's sequences; yields whether the request had to queue for it."""
        queued = False
        if self._slots is not None and not self._slots.acquire(blocking=False):
            queued = True
            self.waiting += 1
            if self.observer is not None:
                self.observer.waiting(self.name, 1)
            try:
                self._slots.acquire()
            finally:
                self.waiting -= 1
                if self.observer is not None:
                    self.observer.waiting(self.name, -1)
        self.running += 1
        try:
            yield queued
        finally:
            self.running -= 1
            if self._slots is not None:
                self._slots.release()

    def factor(self) -> float:
        return self.concurrency.factor(self.running) if self.concurrency else 1.0


class Pacer:
    """Paces deltas for every request of a server; `speed` divides every wait (0 = never wait)."""

    def __init__(self, speed: float = 1.0, *, sleep: Callable[[float], None] = _sleep,
                 clock: Callable[[], float] = time.monotonic, observer: QueueObserver | None = None,
                 sequences: Sequences | None = None) -> None:
        """`sequences`: the worker's running limit and queue (`--max-num-seqs`), which every paced request passes."""
        self.speed = speed
        self.observer = observer
        self.sleep = sleep
        self.clock = clock
        self.loads: dict[str, ModelLoad] = {}
        self.sequences = sequences

    def full(self, prompt: Prompt, speed: float | None = None) -> bool:
        """Whether this request, paced, would find the worker's queue full (it is refused: see Sequences)."""
        return self.sequences is not None and self.sequences.full and self.paces(prompt, speed)

    def paces(self, prompt: Prompt, speed: float | None = None) -> bool:
        """Whether `pace` makes this prompt's deltas wait."""
        return (self.speed if speed is None else speed) > 0 and prompt.profile.timing is not None

    def pace(self, deltas: Iterator[Delta], prompt: Prompt, speed: float | None = None,
             runs: bool = False, key: str = "") -> Iterator[Delta]:
        """`deltas` with the waits of `prompt.profile`; `speed` overrides the server's for one request; `key`: whose
        line the request waits in when the worker runs its most sequences (the API key).
        `runs`: a TextRun comes whole once its first chunk is due, carrying the waits of the others (a RunPace)
        for the transport that sends its chunks (llmsim/runtime/release.py); else each chunk comes on its own."""
        if not self.paces(prompt, speed):
            return deltas  # nothing to wait for: not even the per-model queue
        speed = self.speed if speed is None else speed
        timing = prompt.profile.timing
        assert timing is not None
        load = self._load(prompt.profile.id, timing)
        rng = rng_for(None if prompt.seed is None else f"llmsim-pacing:{prompt.seed}")
        return self._paced(deltas if runs else expand(deltas), timing, load, rng, speed, prompt.input_tokens,
                           self.clock(), key)

    def _load(self, name: str, timing: Timing) -> ModelLoad:
        """The model's shared load; only models with a concurrency limit have one (any name could come)."""
        if timing.concurrency is None:
            return ModelLoad(None, name)
        load = self.loads.get(name)
        if load is None or load.concurrency != timing.concurrency:
            load = self.loads[name] = ModelLoad(timing.concurrency, name, self.observer)
        return load

    def _paced(self, deltas: Iterator[Delta], timing: Timing, load: ModelLoad, rng: random.Random, speed: float,
               input_tokens: int, start: float, key: str) -> Iterator[Delta]:
        """`start`: when the request was ready; the TTFT counts from there, or from leaving a queue (the worker's,
        then the model's): the wait adds to the time to first token, as a real server's does."""
        with self._sequence(key, load.name) as waited, load.slot() as queued:
            schedule = Schedule(self.clock() if queued or waited else start, load, speed, self.clock, self.sleep)
            if self.observer is not None:
                self.observer.queued(load.name, schedule.at - start)
            first = True
            for delta in deltas:
                shutdown.check()  # past a shutdown's graceful timeout, even a delta already due ends the response
                run = delta.chunks if type(delta) is TextRun else None
                ms = chunk_ms(run[0][1], timing, rng, first) if run else delay_ms(delta, timing, rng, first)
                if first:
                    ms += timing.ttft_ms.sample(rng) + 1000.0 * input_tokens / timing.prefill_tokens_per_s
                    first = False
                schedule.wait(ms)
                if run is not None and len(run) > 1:  # the other chunks' waits, drawn in the order they would be
                    rest = run[1:]
                    delays = timing.itl_ms.samples(rng, len(rest)) if all(t == 1 for _, t in rest) else \
                        [chunk_ms(tokens, timing, rng, False) for _, tokens in rest]
                    delta = replace(cast(TextRun, delta), pace=RunPace(schedule, delays))  # a run is a TextRun's
                yield delta


    def _sequence(self, key: str, model: str) -> ContextManager[bool]:
        return nullcontext(False) if self.sequences is None else self.sequences.slot(key, model)


class Schedule:
    """When a request's next token is due: each wait counts from the last token's due time, so a late
    wake-up shortens the next wait; a target already past starts the schedule again from now (no bursts)."""

    __slots__ = ("at", "load", "speed", "clock", "sleep")

    def __init__(self, at: float, load: ModelLoad, speed: float, clock: Callable[[], float],
                 sleep: Callable[[float], None]) -> None:
        self.at = at
        self.load = load
        self.speed = speed
        self.clock = clock
        self.sleep = sleep

    def due(self, ms: float, now: float) -> float:
        """When a token that takes `ms` is due (not after `now`: at once); the schedule moves on to it."""
        if ms <= 0:
            return now
        target = self.at + ms * self.load.factor() / 1000.0 / self.speed
        self.at = target if target > now else now
        return target

    def wait(self, ms: float) -> None:
        """Sleep until the next token, which takes `ms`, is due."""
        now = self.clock()
        target = self.due(ms, now)
        if target > now:
            self.sleep(target - now)


class RunPace:
    """The waits of a paced TextRun's chunks after its first, kept for the transport that sends them: each is
    due `delays[i]` ms after the one before, on the request's schedule. `sent`: when each of them left (the
    Meter's inter-token gaps), filled by the sender."""

    __slots__ = ("schedule", "delays", "sent")

    def __init__(self, schedule: Schedule, delays: list[float]) -> None:
        self.schedule = schedule
        self.delays = delays
        self.sent: list[float] = []

    @property
    def released(self) -> int:
        """The run's chunks sent, its first included."""
        return 1 + len(self.sent)


def delay_ms(delta: Delta, timing: Timing, rng: random.Random, first: bool) -> float:
    """The time `delta` takes to generate, in ms; the first token of a response is the TTFT's."""
    if isinstance(delta, ReasoningDelta) and not (delta.text or delta.summary):
        return 1000.0 * max(0, delta.tokens - first) / timing.reasoning_tokens_per_s
    if isinstance(delta, (TextDelta, ToolArgsDelta, ReasoningDelta)):
        return chunk_ms(delta.tokens, timing, rng, first)
    return 0.0  # a tool call's start and the finish come with the tokens around them


def chunk_ms(tokens: int, timing: Timing, rng: random.Random, first: bool) -> float:
    """The time a piece of `tokens` visible tokens takes: one inter-token gap each (the first token's is the TTFT)."""
    tokens = max(1, tokens) - first
    if tokens == 1:  # nearly every delta: one sample, without a generator (the same draws either way)
        return timing.itl_ms.sample(rng)
    return sum(timing.itl_ms.sample(rng) for _ in range(tokens))
