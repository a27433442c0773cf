"""A worker's running sequences (`--max-num-seqs`) and the queue past them, as a model server batches.

A worker paces a few hundred streams on time (bench/README.md, "the knee"); past that every stream would slow
down together. A real server (vLLM's `max_num_seqs`) runs a bounded number and queues the rest, and so does
this: a paced request past the limit waits for a slot (its wait is part of its time to first token, as on a
real server), and past `--max-queue` waiting ones, a new one is refused at once with its surface's overload
error (`Surface.overloaded`, raised by the pipeline when `full`; the requests admitted meanwhile may take the
queue a few past its bound). The queue is FIFO within an API key and takes the keys in turn, so one busy key
cannot hold back the others: a freed slot goes to the next key in line, whose oldest request runs.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from llmsim.runtime import waits


class Observer(Protocol):
    """Told when a request starts or stops waiting (the metrics' running/waiting gauges) and how long it waited."""

    def waiting(self, model: str, change: int) -> None: ...

    def queued(self, model: str, seconds: float) -> None: ...


class _Waiter:
    __slots__ = ("event", "model")

    def __init__(self, model: str) -> None:
        self.event = threading.Event()  # looked up now: gevent's once the worker is patched
        self.model = model


class Sequences:
    """The slots of one worker process and its queue: FIFO per key, the keys in turn."""

    def __init__(self, limit: int, queue_limit: int, observer: Observer | None = None) -> None:
        """`limit`: `--max-num-seqs` (256 by default, vLLM's too: one worker paces a few hundred gpt-4o streams on
        time on a core); `queue_limit`: `--max-queue`."""
        self.limit = limit
        self.queue_limit = queue_limit
        self.observer = observer
        self.running = 0
        self.waiting = 0
        self._lines: dict[str, deque[_Waiter]] = {}  # keys with requests waiting, in the order of their turns

    @property
    def full(self) -> bool:
        """Whether a new request would find every slot taken and the queue full: it is refused before its answer
        starts (an HTTP error)."""
        return self.running >= self.limit and self.waiting >= self.queue_limit

    @contextmanager
    def slot(self, key: str, model: str) -> Iterator[bool]:
        """Hold one sequence while the body runs; yields whether the request waited for it. Raises ClientGone
        when the client leaves while it waits."""
        queued = False
        if self.running < self.limit and not self.waiting:
            self.running += 1
        else:
            self._wait(key, model)
            queued = True
        try:
            yield queued
        finally:
            self._release()

    def _wait(self, key: str, model: str) -> None:
        """Wait in `key`'s line until `_release` hands this request a running slot."""
        waiter = _Waiter(model)
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = deque()
        line.append(waiter)
        self._count(model, 1)
        try:
            while not waiter.event.wait(waits.CHECK_EVERY):
                waits.check()  # a client gone, or the graceful timeout over, ends it here
        except BaseException:
            if waiter.event.is_set():  # handed a slot as it ended: give it to the next one
                self._release()
            else:
                line = self._lines.get(key)
                if line is not None:
                    line.remove(waiter)
                    if not line:
                        del self._lines[key]
                self._count(model, -1)
            raise

    def _release(self) -> None:
        """A slot freed: to the oldest request of the key whose turn it is (that key goes to the back of the
        turns), else back to the pool."""
        lines = self._lines
        if not lines:
            self.running -= 1
            return
        key = next(iter(lines))
        line = lines.pop(key)
        waiter = line.popleft()
        if line:
            lines[key] = line  # back of the turns
        self._count(waiter.model, -1)
        waiter.event.set()  # the slot passes to it: `running` stays

    def _count(self, model: str, change: int) -> None:
        self.waiting += change
        if self.observer is not None:
            self.observer.waiting(model, change)
