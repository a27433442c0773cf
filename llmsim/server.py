"""Runs the app on gunicorn with gevent workers: thousands of open streams without a thread each.

Slow or idle clients cannot starve the others. A request's head must arrive within `--read-timeout`
seconds (idle keep-alive time included), and then its body within as long again (else a 408); the body
is read whole before the app sees the request. At `--worker-connections` open connections, the one that
has waited longest for its client (idle, or still sending a request) is closed to let a new one in; when
every connection is busy working, a new one gets a 503 at once.
"""

from __future__ import annotations

import gc
import logging
import math
import os
from typing import Any

from gunicorn.app.base import BaseApplication

from llmsim.config import CUT_GRACE, Settings
from llmsim.metrics import multiprocess

# Python's defaults (700, 10, 10) collect the young objects every few ms under hundreds of paced streams, and the
# middle generation, which holds every open stream's objects, every ~0.1 s in pauses of up to ~50 ms that every
# stream feels as a late token (ITL p99 +46 % at 400 streams, +4 % with these; bench/run.py --part c).
GC_THRESHOLDS = (50_000, 20, 10)


class LLMSimServer(BaseApplication):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # Made before the workers fork: they write their metrics there. One worker keeps them in memory: the files
        # cost a lock and an mmap write per update, ~40 us a request.
        self.metrics_dir: str | None = None
        if settings.workers > 1:
            self.metrics_dir = multiprocess.make_dir()
        else:
            multiprocess.no_dir()
        super().__init__()

    def load_config(self) -> None:
        s = self.settings
        options: dict[str, Any] = {
            "bind": f"{s.host}:{s.port}",
            "workers": s.workers,
            "worker_class": "llmsim.runtime.forked.ForkedWorker",  # the gevent worker, once forked
            "worker_connections": s.worker_connections,
            "timeout": 0,  # streams may stay open for minutes; gevent workers heartbeat on their own
            # the wait for the requests after SIGTERM (a master's for its workers, a worker's for its connections):
            # the requests' own time, then their cut's
            "graceful_timeout": math.ceil(s.graceful_timeout + CUT_GRACE) + 2,
            "keepalive": 75,  # on; how long an idle connection may wait is --read-timeout (Worker.timeout_ctx)
            "accesslog": None,
            "errorlog": "-",
            "loglevel": "warning",
            "child_exit": multiprocess.child_exit,
            "on_exit": lambda _server: multiprocess.remove_dir(self.metrics_dir),
            "post_worker_init": _ready,
            "worker_exit": _exiting,
        }
        if "control_socket_disable" in self.cfg.settings:  # gunicorn >= 25.1 would open a Unix socket, one path
            options["control_socket_disable"] = True  # for every server of the user's, to manage its workers
        for key, value in options.items():
            self.cfg.set(key, value)

    def run_alone(self) -> None:
        """One worker, no master: this process binds the socket and serves on it, as uvicorn does by default. A
        master only forks workers and watches them; for one it would hold ~25 MB to restart a worker that a test run
        or a laptop does not need restarted. `--workers N` keeps gunicorn's master."""
        from gunicorn import sock

        log = self.cfg.logger_class(self.cfg)
        listeners: Any = sock.create_sockets(self.cfg, log)  # what gunicorn's arbiter hands its workers
        worker: Any = self.cfg.worker_class(1, os.getppid(), listeners, self, 0, self.cfg, log)
        worker.alone = True
        try:
            worker.init_process()  # returns once its requests are done after SIGTERM (it closes the listener)
        finally:
            worker.tmp.close()
            self.cfg.worker_exit(None, worker)

    def load(self) -> Any:
        from llmsim.app import create_app  # built inside the worker, after gevent has patched the stdlib

        return create_app(self.settings)


def serving_line(settings: Settings) -> str:
    return f"llmsim: serving {settings.backend} on http://{settings.host}:{settings.port}/openai/v1"


def _ready(worker: Any) -> None:
    """The worker has its app: what it holds now (the app, profiles, encodings, text sources) lives as long as it
    does, so the garbage collector stops walking it (`gc.freeze`); a full collection would walk it all, a pause
    of ~0.1 s for every stream of the worker. And the young generations are collected less often (GC_THRESHOLDS).
    The default profile's token encoding (o200k, every profile's but gpt-4-legacy's) is loaded first (~0.35 s), so
    the first request does not wait for it and it is frozen with the rest; another (cl100k, ~0.15 s) loads when a
    request first needs it, which saves each start that time and ~27 MB that most servers never use."""
    _load_encodings(worker.wsgi)
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    _give_back_freed_memory()
    _announce(worker)


def _load_encodings(app: Any) -> None:
    from llmsim import tokens  # imported in the worker, after gevent has patched the stdlib

    services = getattr(app, "extensions", {}).get("llmsim")  # none in bench/bare.py's bare app
    if services is not None:
        tokens.encoding(services.catalog.default.encoding)


def _give_back_freed_memory() -> None:
    """Building the encoding frees tens of MB of parsing's objects, and glibc's malloc keeps some of those pages
    (~4 MB) for later: an idle worker gives them back to the system (~5 ms, once). Elsewhere (musl, macOS), nothing."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _exiting(_arbiter: Any, _worker: Any) -> None:
    """Logging's handlers closed while gevent still works. Else, as the worker's interpreter shuts down, each
    handler that dies calls back into logging, whose lock gevent has patched, after gevent's own module is gone:
    a traceback on every stop ("Exception ignored in _removeHandlerRef")."""
    logging.shutdown()
    del logging._handlerList[:]  # type: ignore[attr-defined]  # the weak references whose callbacks would fire


def _announce(worker: Any) -> None:
    """Said by the first worker once it has the app loaded (the socket was bound before), so "serving" means
    requests are answered; a server that fails to bind or to boot never says it."""
    if worker.age == 1:
        print(serving_line(worker.app.settings), flush=True)


def serve(settings: Settings) -> None:
    server = LLMSimServer(settings)
    if settings.workers == 1:
        server.run_alone()
    else:
        server.run()
