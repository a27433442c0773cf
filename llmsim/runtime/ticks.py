"""The pacing scheduler: one timer per worker wakes every stream whose next token is due in the same tick.

A paced token used to be one sleeping greenlet with a timer of its own: at hundreds of streams that is
tens of thousands of timers a second, each a wake-up of the event loop. Here a waiting stream parks on
a heap, and one timer wakes all whose time has come (due within half a tick), one after another in the
same loop turn; each writes what it has ready and parks again. The timer is set for the earliest due,
and at least a tick after the last wake: many streams share a wake every `TICK_SECONDS` (never more
often), a few streams wake only when one is due (a periodic tick woke a worker pacing 10 streams 1,000 times a
second for their ~400 tokens), and each is woken within half a tick of its time either way. A paced run's writer
(release.py) parks no greenlet: the tick calls it, in the hub.

Outside a gevent worker (tests with Flask's client, plain threads) and for long waits, `sleep` is
`time.sleep`, looked up at call time (gevent patches it after this module may have been imported).
"""

from __future__ import annotations

import heapq
import itertools
import math
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
        self._timer: Any = None  # the one-shot timer of the next wake, while anyone waits
        self._armed = math.inf  # when it fires
        self._last = -math.inf  # when the last wake began
        self._waking = False

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
        if not self._waking and due < self._armed:  # within a wake, it sets the timer once at its end
            self._arm(due)
        return entry

    def _arm(self, due: float) -> None:
        """The next wake at `due`, but not sooner than a tick after the last."""
        at = max(due, self._last + self.tick)
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.hub.loop.timer(max(0.0, at - time.monotonic()))
        self._armed = at
        self._timer.start(self._wake)

    def _wake(self) -> None:
        """In the hub: wake, in order, every stream due by the middle of this tick that was parked before it.
        Each runs until it parks again (or blocks on its socket) and the hub carries on from here."""
        self._timer, self._armed = None, math.inf
        heap = self._heap
        now = self._last = time.monotonic()
        limit = now + self.tick / 2
        newest = next(self._order)  # streams that park again while this runs wait for the next tick
        self._waking = True
        try:
            while heap and heap[0][0] <= limit and heap[0][1] < newest:
                callback = heapq.heappop(heap)[2]
                if callback is not None:
                    try:
                        callback()
                    except Exception:  # noqa: BLE001 - a stream's failure is its own; the others still wake
                        self.hub.handle_error(callback, *sys.exc_info())
        finally:
            self._waking = False
        while heap and heap[0][2] is None:  # gone while parked: no wake for them
            heapq.heappop(heap)
        if heap:
            self._arm(heap[0][0])

    @property
    def idle(self) -> bool:
        """Nobody waits, and no wake is set."""
        return self._timer is None


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
