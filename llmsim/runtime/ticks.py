"""The pacing scheduler: one timer per worker wakes every stream whose next token is due in the same tick.

A paced token used to be one sleeping greenlet with a timer of its own: at hundreds of streams that is
tens of thousands of timers a second, each a wake-up of the event loop. Here a waiting stream parks on
a heap, and one periodic timer (every `TICK_SECONDS`, only while anyone waits) wakes all whose time
has come, rounded to the nearest tick, one after another in the same loop turn; each writes what it
has ready and parks again. A paced run's writer (release.py) parks no greenlet: the tick calls it, in the hub.

Outside a gevent worker (tests with Flask's client, plain threads) and for long waits, `sleep` is
`time.sleep`, looked up at call time (gevent patches it after this module may have been imported).
"""

from __future__ import annotations

import heapq
import itertools
import sys
import time
from collections.abc import Callable
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
        entry = self.call_at(time.monotonic() + seconds, getcurrent().switch)
        try:
            self.hub.switch()
        finally:
            entry[2] = None  # killed while parked (its client left): the tick passes it by

    def call_at(self, due: float, callback: Callable[[], Any]) -> list[Any]:
        """Run `callback` in the hub at the tick of `due` (it must not block); its entry, whose callback set
        to None cancels it."""
        entry = [due, next(self._order), callback]
        heapq.heappush(self._heap, entry)
        if not self._timer.active:
            self._timer.start(self._wake)
        return entry

    def _wake(self) -> None:
        """In the hub: wake, in order, every stream due by the middle of this tick that was parked before it.
        Each runs until it parks again (or blocks on its socket) and the hub carries on from here."""
        heap = self._heap
        limit = time.monotonic() + self.tick / 2
        newest = next(self._order)  # streams that park again while this runs wait for the next tick
        while heap and heap[0][0] <= limit and heap[0][1] < newest:
            callback = heapq.heappop(heap)[2]
            if callback is not None:
                try:
                    callback()
                except Exception:  # noqa: BLE001 - a stream's failure is its own; the others still wake
                    self.hub.handle_error(callback, *sys.exc_info())
        if not heap:
            self._timer.stop()


def ticker() -> Ticker | None:
    """This gevent hub's ticker (made on first use); None where gevent does not run the worker."""
    if not monkey.is_module_patched("time"):
        return None
    hub = get_hub()
    found: Ticker | None = getattr(hub, "llmsim_ticker", None)
    if found is None:
        found = hub.llmsim_ticker = Ticker(hub)  # type: ignore[attr-defined]  # ours, kept on the hub it serves
    return found


def sleep(seconds: float) -> None:
    """Wait `seconds`: on the worker's shared ticker when gevent runs it, else a plain sleep."""
    shared = ticker() if 0 < seconds < LONG_SECONDS else None
    if shared is None:
        time.sleep(seconds)
        return
    shared.wait(seconds)
