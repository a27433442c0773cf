"""Fair turns between requests in one gevent worker.

Nothing in a request at speed 0 waits, so without a pause it runs to its end while every other
request of the worker queues behind it: p50 stays low while p99 grows with the number of clients.
`fair` hands the worker over after each slice of work; a slice of ~1 ms keeps the switches
(a few µs each) cheap against the work between them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TypeVar

from llmsim.runtime.shutdown import turn

T = TypeVar("T")
SLICE_SECONDS = 0.001


def fair(items: Iterator[T], slice_seconds: float = SLICE_SECONDS) -> Iterator[T]:
    """`items`, letting the other requests run once every `slice_seconds` spent making them."""
    clock = time.perf_counter
    try:
        started = clock()
        for item in items:
            yield item
            if clock() - started >= slice_seconds:
                turn()
                started = clock()
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()  # a client gone mid-stream stops the backend (and its pacing slot) at once
