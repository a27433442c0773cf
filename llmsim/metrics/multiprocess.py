"""One metrics directory per server of several workers, for prometheus-client's multiprocess mode under gunicorn.

The master makes a fresh directory before it forks (stale files from another run would add their counts),
marks each worker dead as it exits (its live gauges stop counting, its counters stay in the sums), and
removes the directory when the server stops.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # read by prometheus-client in every worker


def current_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def make_dir() -> str:
    """A fresh directory, named in the environment the workers inherit."""
    path = tempfile.mkdtemp(prefix="llmsim-metrics-")
    os.environ[MULTIPROC_ENV] = path
    return path


def no_dir() -> None:
    """No directory: a server of one worker keeps its metrics in that worker's memory."""
    os.environ.pop(MULTIPROC_ENV, None)


def child_exit(_server: Any, worker: Any) -> None:
    """gunicorn's child_exit hook: a worker that is gone no longer counts in the live gauges."""
    if current_dir() is None:  # one worker's metrics live in its memory
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def remove_dir(path: str | None) -> None:
    if path is not None:
        shutil.rmtree(path, ignore_errors=True)
