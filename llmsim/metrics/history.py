"""The dashboard's time series, kept by the server: a reload (or a second screen) starts with the last 15 minutes.

Each worker samples the merged metrics (what a scrape reads, so any worker holds the same series) every few
seconds into a ring buffer of fixed length; the page loads it when it opens and adds its own polls after. A point
is what the page's charts are drawn from: requests finished by model, faults by kind, rate-limited requests, all
cumulative (the page subtracts its baseline).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any

from llmsim.metrics.registry import Metrics

WINDOW_S = 900.0  # seconds of history kept
EVERY_S = 3.0  # seconds between samples (one costs ~4 ms in one worker, ~17 ms merging several workers' files)

log = logging.getLogger("llmsim")
Samples = dict[str, list[tuple[dict[str, str], float]]]


def point(samples: Samples, now: float) -> dict[str, Any]:
    """One sample of the charts' series, as the page keeps them."""
    finished: dict[str, float] = {}
    for labels, value in samples.get("vllm:request_success_total", []):
        finished[labels["model_name"]] = finished.get(labels["model_name"], 0.0) + value
    faults: dict[str, float] = {}
    for labels, value in samples.get("llmsim_faults_injected_total", []):
        if value:
            faults[labels["kind"]] = faults.get(labels["kind"], 0.0) + value
    limited = sum(value for _, value in samples.get("llmsim_rate_limited_total", []))
    return {"t": now, "finished": finished, "faults": faults, "limited": limited}


class History:
    """A worker's ring buffer of points, filled by a daemon thread (a greenlet under gevent's patching)."""

    def __init__(self, metrics: Metrics, every: float = EVERY_S, window: float = WINDOW_S) -> None:
        self.metrics = metrics
        self.every = every
        self.window = window
        self._points: deque[dict[str, Any]] = deque(maxlen=int(window / every) + 1)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> History:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="llmsim-history", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception:  # a scrape that failed (a file half written): the next one will do
                log.debug("history sample failed", exc_info=True)
            time.sleep(self.every)  # looked up at call time: gevent's, once the worker is patched

    def sample(self, samples: Samples | None = None) -> None:
        made = point(self.metrics.samples() if samples is None else samples, time.time())
        with self._lock:
            self._points.append(made)

    def points(self) -> list[dict[str, Any]]:
        """The points of the last `window` seconds, oldest first."""
        since = time.time() - self.window
        with self._lock:
            return [p for p in self._points if p["t"] >= since]
