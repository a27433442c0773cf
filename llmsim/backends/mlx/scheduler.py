"""Continuous batching: every request for one model shares one `mlx_lm` BatchGenerator.

A driver greenlet loops while there is work. Each turn it hands the model's native worker thread one
step: insert the sequences that arrived, remove the ones whose client left or was cancelled, and decode
one token for every running sequence, prefilling new prompts between decode steps. Then it hands each
request's tokens to that request's queue. MLX only ever runs on the worker thread, and gevent keeps serving
while it computes. A long generation never blocks a short one's first token: new prompts join the batch at
the next step.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent
from gevent.event import Event
from gevent.queue import Queue
from gevent.threadpool import ThreadPool

from llmsim.timing.pacing import QueueObserver

DECODE_CONCURRENCY = 32  # sequences decoded at once (mlx_lm.server's --decode-concurrency)
PROMPT_CONCURRENCY = 8  # prompts prefilled at once (its --prompt-concurrency)


@dataclass(frozen=True)
class Token:
    """One decoded token for a sequence; `finish` is "stop" (an end token, not shown) or "length"."""

    token: int
    finish: str | None = None


@dataclass(eq=False)
class Sequence:
    """One request in the batch: its prompt (past the part already in `cache`) and its sampling."""

    prompt: list[int]
    cached: list[int]  # prompt tokens already in `cache` (prompt-cache reuse across turns)
    cache: list[Any]
    max_tokens: int
    sampler: Callable[[Any], Any]
    processors: list[Callable[[Any, Any], Any]]
    tokens: Queue = field(default_factory=Queue)  # Token, or the exception that ended the step
    uid: int | None = None
    done: bool = False
    queued_at: float | None = None  # when it began waiting for a decode slot (None: it got one at once)


class Scheduler:
    def __init__(self, model: Any, stop_tokens: list[int], keep_cache: Callable[[list[Any], list[int]], None],
                 decode_concurrency: int = DECODE_CONCURRENCY, prompt_concurrency: int = PROMPT_CONCURRENCY,
                 worker: ThreadPool | None = None, name: str = "", observer: QueueObserver | None = None) -> None:
        self.model = model
        self.name = name
        self.observer = observer  # the metrics' running/waiting gauges and queue-time histogram
        self.stop_tokens = stop_tokens
        self.keep_cache = keep_cache  # the model's PromptCache.keep: a finished sequence's KV cache is reused
        self.decode_concurrency = decode_concurrency
        self.prompt_concurrency = prompt_concurrency
        self.worker = worker or ThreadPool(1)
        self._generator: Any = None  # made on the worker thread, where MLX runs
        self._arrived: list[Sequence] = []
        self._leaving: list[Sequence] = []
        self._running: dict[int, Sequence] = {}
        self._wake = Event()
        self._driver: gevent.Greenlet | None = None

    @property
    def running(self) -> int:
        """Sequences in the batch (prefilling or decoding)."""
        return len(self._running)

    @property
    def waiting(self) -> int:
        """Sequences admitted but not yet in a batch: arrived, or queued behind the concurrency limits."""
        over = max(0, len(self._running) - self.decode_concurrency)
        return len(self._arrived) + over

    def submit(self, sequence: Sequence) -> None:
        if self.observer is not None and len(self._running) + len(self._arrived) >= self.decode_concurrency:
            sequence.queued_at = time.monotonic()
            self.observer.waiting(self.name, 1)
        self._arrived.append(sequence)
        self._wake.set()
        if self._driver is None or self._driver.dead:
            self._driver = gevent.spawn(self._drive)

    def leave(self, sequence: Sequence) -> None:
        """The request stopped reading (client gone, cancelled, closed): free its slot at the next step."""
        if sequence.done:
            return
        sequence.done = True
        self._dequeued(sequence)
        if sequence in self._arrived:
            self._arrived.remove(sequence)
        else:
            self._leaving.append(sequence)
            self._wake.set()

    def _drive(self) -> None:
        while True:
            if not (self._arrived or self._leaving or self._running):
                self._wake.clear()
                self._wake.wait()
                continue
            arrived, self._arrived = self._arrived, []
            leaving, self._leaving = self._leaving, []
            try:
                uids, tokens, kept = self.worker.apply(self._step, (arrived, [s.uid for s in leaving]))
            except Exception as error:  # a failed step fails every request in it, not the server
                for sequence in itertools.chain(arrived, self._running.values()):
                    sequence.tokens.put(error)
                self._running.clear()
                self._generator = None
                continue
            for sequence, uid in zip(arrived, uids, strict=True):
                sequence.uid = uid
                self._running[uid] = sequence
            for sequence in leaving:
                self._running.pop(sequence.uid, None)  # type: ignore[arg-type]
            for cache, all_tokens in kept:
                self.keep_cache(cache, all_tokens)
            for uid, token, finish, cache, all_tokens in tokens:
                running = self._running.get(uid)
                if running is None:
                    continue
                self._dequeued(running)
                running.tokens.put(Token(token, finish))
                if finish is not None:
                    running.done = True
                    del self._running[uid]
                    self.keep_cache(cache, all_tokens)
            gevent.sleep(0)  # let the requests write what they got before the next step

    def _dequeued(self, sequence: Sequence) -> None:
        """A waiting sequence got its slot (its first token) or left."""
        if sequence.queued_at is not None and self.observer is not None:
            self.observer.waiting(self.name, -1)
            self.observer.queued(self.name, time.monotonic() - sequence.queued_at)
            sequence.queued_at = None

    def _step(self, arrived: list[Sequence], leaving: list[int]
              ) -> tuple[list[int], list[tuple[int, int, str | None, Any, Any]], list[tuple[Any, list[int]]]]:
        """On the worker thread: admit, remove, then one batched step."""
        generator = self._generator or self._make()
        kept = []
        if leaving:
            removed = generator.remove(leaving, return_prompt_caches=True)
            kept = [(cache, list(all_tokens)) for cache, all_tokens in removed.values() if cache]
        uids: list[int] = []
        if arrived:
            from mlx_lm.generate import StopSequences

            stops = StopSequences([[t] for t in self.stop_tokens])
            uids = generator.insert([s.prompt for s in arrived], max_tokens=[s.max_tokens for s in arrived],
                                    caches=[s.cache for s in arrived], all_tokens=[s.cached for s in arrived],
                                    samplers=[s.sampler for s in arrived],
                                    logits_processors=[s.processors for s in arrived],
                                    stop_sequences=[stops] * len(arrived))
        _, responses = generator.next()
        tokens = [(r.uid, r.token, r.finish_reason, r.prompt_cache, r.all_tokens) for r in responses]
        return uids, tokens, kept

    def _make(self) -> Any:
        from mlx_lm.generate import BatchGenerator

        self._generator = BatchGenerator(self.model, completion_batch_size=self.decode_concurrency,
                                         prefill_batch_size=self.prompt_concurrency)
        return self._generator
