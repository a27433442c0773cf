"""Recorded timing: replayed events leave at their recorded offsets, divided by the speed (0 = at once).

Offsets count from the start of the replay, so a late wake-up does not push every later event back.
Waiting is `time.sleep` looked up at call time (gevent patches it in the workers).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

TimedEvent = tuple[float, str, str]  # (seconds since the request, SSE event name or "", data)


def play(events: Iterator[TimedEvent], speed: float) -> Iterator[tuple[str, str]]:
    start = time.monotonic()
    try:
        for offset, kind, data in events:
            if speed > 0:
                wait(start + offset / speed - time.monotonic(), 1.0)
            yield kind, data
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def wait(seconds: float, speed: float) -> None:
    if speed > 0 and seconds > 0:
        time.sleep(seconds / speed)
