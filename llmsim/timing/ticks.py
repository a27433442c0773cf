"""The pacing scheduler: one timer per worker wakes every stream whose next token is due in the same tick.

A paced token used to be one sleeping greenlet with a timer of its own: at hundreds of streams that is
tens of thousands of timers a second, each a wake-up of the event loop. Here a waiting stream parks on
a heap, and one periodic timer (every `TICK_SECONDS`, only while anyone waits) wakes all whose time
has come, rounded to the nearest tick, one after another in the same loop turn; each writes what it
has ready and parks again.

Outside a gevent worker (tests with Flask's client, plain threads) and for long waits, `sleep` is
`time.sleep`, looked up at call time (gevent patches it after this module may have been imported).
"""

from __future__ import annotations

import heapq
import itertools
import sys
import time
from typing import Any

from gevent import get_hub, monkey
from greenlet import getcurrent

TICK_SECONDS = 0.001
LONG_SECONDS = 1.0  # longer waits gain nothing from sharing a timer: a plain sleep


class Ticker:
    """The waiting streams of one gevent hub, and its periodic timer."""

    def __init__(self, hub: Any, tick: float = TICK_SECONDS) -> None:
        self.hub = hub
        self.tick = tick
        self._heap: list[list[Any]] = []  # [due, order, parked greenlet or None once gone]
        self._order = itertools.count()
        self._timer = hub.loop.timer(tick, tick)

    def wait(self, seconds: float) -> None:
        """Park this greenlet until its tick; only `_wake` (or a kill) switches back into it."""
        entry = [time.monotonic() + seconds, next(self._order), getcurrent()]
        heapq.heappush(self._heap, entry)
        if not self._timer.active:
            self._timer.start(self._wake)
        try:
            self.hub.switch()
        finally:
            entry[2] = None  # killed while parked (its client left): the tick passes it by

    def _wake(self) -> None:
        """In the hub: wake, in order, every stream due by the middle of this tick that was parked before it.
        Each runs until it parks again (or blocks on its socket) and the hub carries on from here."""
        heap = self._heap
        limit = time.monotonic() + self.tick / 2
        newest = next(self._order)  # streams that park again while this runs wait for the next tick
        while heap and heap[0][0] <= limit and heap[0][1] < newest:
            parked = heapq.heappop(heap)[2]
            if parked is not None:
                try:
                    parked.switch()
                except Exception:  # noqa: BLE001 - a stream's failure is its own; the others still wake
                    self.hub.handle_error(parked, *sys.exc_info())
        if not heap:
            self._timer.stop()


def sleep(seconds: float) -> None:
    """Wait `seconds`: on the worker's shared ticker when gevent runs it, else a plain sleep."""
    if not 0 < seconds < LONG_SECONDS or not monkey.is_module_patched("time"):
        time.sleep(seconds)
        return
    hub = get_hub()
    ticker = getattr(hub, "llmsim_ticker", None)
    if ticker is None:
        ticker = hub.llmsim_ticker = Ticker(hub)
    ticker.wait(seconds)
