"""An LLMSim served in the test process: `llmsim serve`'s worker (llmsim/runtime/worker.py) on a gevent hub of its
own, in a thread, on 127.0.0.1. A start costs no process (a process's start costs a core ~1.5 s).

It serves as `llmsim serve` does with one worker: gunicorn's HTTP parser, gevent's StreamServer and pool, the
worker's read deadlines and connection cap, the same app. Its waits must yield to its hub as they do under
gevent's monkey-patching, yet the test process is not patched (pytest-xdist's channel thread, asyncio clients
and Playwright stop working under it). So the calls the app waits, locks or starts a thread with (`time.sleep`,
`select.select`, `selectors.DefaultSelector`, `threading.Lock` and `RLock` and what the standard library builds
of them: Condition, Semaphore, Event; a Thread's start) are routed to gevent's in a server's thread, and stay
the standard library's in every other thread.

What is about the process stays with a process of its own (llmsim.testing.ServerProcess): signals, shutdown,
several workers, what the server prints, environment variables other than LLMSIM_*, and backends that wait on
sockets of their own (an upstream, Redis) where a test needs them not to hold up the server's other requests.
"""

from __future__ import annotations

import functools
import logging
import os
import select
import selectors
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, Self

from llmsim.testing import ServerProcess

_serving = threading.local()  # .hub: True in a server's thread
_environ = threading.Lock()  # parsing flags with the server's LLMSIM_* variables set in os.environ


class _Routed:
    """gevent's `green` in a server's thread, `plain` elsewhere. An object, not a function: a class attribute
    holding it (werkzeug's `Map.lock_class`) stays unbound."""

    def __init__(self, plain: Callable[..., Any], green: Callable[..., Any]) -> None:
        self.plain = plain
        self.green = green

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return (self.green if getattr(_serving, "hub", False) else self.plain)(*args, **kwargs)


def _route(module: Any, name: str, green: Callable[..., Any]) -> None:
    setattr(module, name, _Routed(getattr(module, name), green))


@functools.cache
def route_to_gevent() -> None:
    """Once per process: the waits and locks a server's thread makes are gevent's (see the module's docstring)."""
    import gevent
    import gevent.lock
    import gevent.select
    import gevent.selectors
    import gevent.thread

    _route(time, "sleep", gevent.sleep)
    _route(select, "select", gevent.select.select)
    _route(selectors, "DefaultSelector", gevent.selectors.GeventSelector)  # simple-websocket's reader
    _route(threading, "Lock", gevent.thread.allocate_lock)
    _route(threading, "_allocate_lock", gevent.thread.allocate_lock)  # Condition's waiters
    _route(threading, "RLock", gevent.lock.RLock)
    _route(threading, "_start_new_thread", _start_greenlet)  # Thread.start: a background response, the history


def _start_greenlet(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> int:
    """A thread started in a server's thread runs as a greenlet of its hub, as under gevent's patching: its waits
    and locks are then the hub's (a real thread could not wake the hub's locks). It is a daemon as the app's are;
    its `start` returns once it runs, and `join` waits for its end (a batch's line runners)."""
    import gevent
    import gevent.thread

    thread = getattr(function, "__self__", None)  # Thread._bootstrap's thread
    if not isinstance(thread, threading.Thread):
        return id(gevent.spawn(function, *args, **(kwargs or {})))

    ended = gevent.thread.allocate_lock()  # held while it runs: what `join` waits on, as a thread's state lock
    ended.acquire()
    thread._tstate_lock = ended  # type: ignore[attr-defined]

    def run() -> None:
        with threading._active_limbo_lock:  # type: ignore[attr-defined]
            threading._limbo.pop(thread, None)  # type: ignore[attr-defined]
        thread._started.set()  # type: ignore[attr-defined]
        try:
            thread.run()
        finally:
            thread._is_stopped = True  # type: ignore[attr-defined]
            ended.release()

    return id(gevent.spawn(run))


def fits(flags: tuple[str, ...], env: dict[str, str]) -> bool:
    """Whether a server of these flags and environment can serve in process (else it needs a process)."""
    workers = next((flags[i + 1] for i, flag in enumerate(flags[:-1]) if flag == "--workers"), "1")
    if workers != "1" or any(flag.startswith("--workers=") for flag in flags):
        return False
    return all(name.startswith("LLMSIM_") and name != "LLMSIM_WORKERS" for name in env)


class _Log(logging.Handler):
    """What the server's loggers say from its thread: its `log()`."""

    def __init__(self, thread: threading.Thread) -> None:
        super().__init__()
        self.thread = thread
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread.ident:
            self.lines.append(self.format(record))


class InProcessServer(ServerProcess):
    """`ServerProcess`'s interface (`url`, `base_url`, `port`, `start`, `stop`, `log`) for a server in this process:
    `InProcessServer("--seed", "7").start()`. It has no `process`."""

    LOGGERS = ("llmsim", "gunicorn.error")

    def __init__(self, *flags: str, env: dict[str, str] | None = None, startup_timeout: float = 30.0) -> None:
        self.flags = flags
        self.env = env or {}
        self.startup_timeout = startup_timeout
        self.port = 0
        self.stopping = False
        self._up = threading.Event()
        self._failed: BaseException | None = None
        self._wake: Any = None  # the hub's async watcher: sent from any thread, it stops the server
        self._thread: threading.Thread | None = None
        self._log: _Log | None = None

    @property  # type: ignore[override]
    def process(self) -> NoReturn:
        raise AttributeError("this server serves in the test process, which has no process of its own to signal or "
                             "kill: mark the test @pytest.mark.process (or name its file for the process area)")

    def launch(self) -> Self:
        route_to_gevent()
        settings = self._settings()
        self._thread = threading.Thread(target=self._serve, args=(settings,), daemon=True,
                                        name=f"llmsim-{' '.join(self.flags)}")
        self._log = _Log(self._thread)
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self._log)
        self._thread.start()
        return self

    def wait_until_up(self) -> Self:
        if not self._up.wait(self.startup_timeout):
            self.stop()
            raise RuntimeError(f"llmsim did not start within {self.startup_timeout:g} s")
        if self._failed is not None:
            self.stop()
            raise RuntimeError(f"llmsim did not start: {self._failed!r}") from self._failed
        return self

    def log(self) -> str:
        return "".join(f"{line}\n" for line in self._log.lines) if self._log else ""

    def signal_stop(self) -> None:
        if self._wake is not None and not self.stopping:
            self.stopping = True
            self._wake.send()  # thread-safe: the hub wakes and stops serving

    def stop(self) -> None:
        self.signal_stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for name in self.LOGGERS:
            if self._log is not None:
                logging.getLogger(name).removeHandler(self._log)

    def _settings(self) -> Any:
        from llmsim.cli import build_parser, settings_from_args

        with _environ, _environment(self.env):
            args = build_parser().parse_args(["serve", "--host", "127.0.0.1", "--port", "1", *self.flags])
            return settings_from_args(args)

    def _serve(self, settings: Any) -> None:
        _serving.hub = True
        try:
            self._run(settings)
        except BaseException as error:  # noqa: BLE001 - said by wait_until_up, in the test's thread
            self._failed = error
            self._up.set()

    def _run(self, settings: Any) -> None:
        from gevent import get_hub
        from gevent import socket as gsocket
        from gevent.pool import Pool
        from gevent.server import StreamServer
        from gunicorn import sock

        from llmsim import preflight
        from llmsim.runtime.worker import Worker
        from llmsim.server import LLMSimServer, _load_encodings

        if found := preflight.problem(settings):
            raise RuntimeError(found)
        settings.port = 0  # the system's choice: no race for a free port
        server = LLMSimServer(settings)
        log = server.cfg.logger_class(server.cfg)
        bound = sock.create_sockets(server.cfg, log)[0]
        listener = gsocket.socket(bound.FAMILY, gsocket.SOCK_STREAM, fileno=bound.sock.detach())
        self.port = listener.getsockname()[1]
        worker = Worker(1, os.getpid(), [listener], server, 0, server.cfg, log)
        worker.alone = True
        worker.configure()
        worker.load_wsgi()  # the app, built in this thread: its locks are gevent's
        _load_encodings(worker.wsgi)
        hub = get_hub()
        self._wake = hub.loop.async_()
        serving = StreamServer(listener, handle=functools.partial(worker.handle, listener),
                               spawn=Pool(worker.worker_connections))
        serving.start()
        self._up.set()
        try:
            hub.wait(self._wake)
        finally:
            worker.alive = False
            serving.close()
            while worker.waiting:  # idle keep-alive connections end as the worker sheds them: quietly
                worker._shed()
            serving.stop(timeout=1)  # then the requests still at work get a second to end
            worker.tmp.close()
            self._wake.close()
            hub.destroy(destroy_loop=True)


@contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
