"""gunicorn's gevent worker with read deadlines and a connection cap that sheds idle connections first.

It relies on gunicorn internals: `AsyncWorker.handle` (called instead of `GeventWorker.handle`, which makes the
socket blocking), `handle_request`/`handle_error`/`timeout_ctx` as hooks, `req.body` as a `Body` it may replace,
and `worker_connections` as the size of gevent's pool; and on gevent's `Timeout` for the read deadlines.
"""

from __future__ import annotations

import io
import json
import re
import resource
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import TYPE_CHECKING, Any, cast

import gevent
from gunicorn.http.body import Body
from gunicorn.http.errors import NoMoreData, ParseException
from gunicorn.workers.base_async import AsyncWorker
from gunicorn.workers.ggevent import GeventWorker

from llmsim.config import CUT_GRACE
from llmsim.runtime import shutdown, sockets
from llmsim.runtime.fairness import SLICE_SECONDS

if TYPE_CHECKING:
    from llmsim.server import LLMSimServer

SPARE_FDS = 128  # file descriptors kept for the store, logs and the listener beside the connections


def _answer(status: str, message: str, type_: str, code: str | None, extra: str = "") -> bytes:
    """A whole HTTP answer with the OpenAI error envelope, for what the worker refuses before the app."""
    body = json.dumps({"error": {"message": message, "type": type_, "param": None, "code": code}}).encode()
    head = (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}Connection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


OVERLOADED = _answer("503 Service Unavailable", "The server is overloaded or not ready yet.", "server_error", None,
                     "Retry-After: 1\r\n")


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's open-file limit towards `wanted` (within the hard limit); the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


@contextmanager
def _entry_points_read_once() -> Iterator[None]:
    everything = metadata.entry_points()
    real = metadata.entry_points
    metadata.entry_points = lambda **select: everything.select(**select) if select else everything  # type: ignore[assignment]
    try:
        yield
    finally:
        metadata.entry_points = real


class Worker(GeventWorker):
    """gunicorn's gevent worker with read deadlines and a connection cap that sheds idle connections first."""

    alone = False  # serving with no master (LLMSimServer.run_alone sets it)

    def init_process(self) -> None:
        self.configure()
        super().init_process()

    def configure(self) -> None:
        """The worker's limits from the server's settings (tests/inprocess.py serves with them in a thread)."""
        settings = cast("LLMSimServer", self.app).settings
        limit = raise_fd_limit(settings.worker_connections + SPARE_FDS)
        self.cap = max(1, min(settings.worker_connections, limit - SPARE_FDS))
        if self.cap < settings.worker_connections:
            self.log.warning("llmsim: %d connections per worker, not %d: the open-file limit is %d",
                             self.cap, settings.worker_connections, limit)
        self.read_timeout = settings.read_timeout
        self.graceful_timeout = settings.graceful_timeout
        self.max_body = settings.max_body_bytes
        self.worker_connections = self.cap + 64  # the pool: room to accept past the cap, and shed
        self.open = 0
        self.turn = 0.0  # when a request last handed the worker to the others
        self.waiting: dict[socket.socket, None] = {}  # connections waiting for a request, oldest first

    def notify(self) -> None:
        """gevent's worker stops when its parent changes: its master is gone. One serving alone has no master, and
        its parent (a shell, a test run) may leave before it."""
        if self.alone:
            self.tmp.notify()
        else:
            super().notify()

    def init_signals(self) -> None:
        """Alone, SIGHUP (a closed terminal) leaves it serving, as gunicorn's master went on serving (it reloads)."""
        super().init_signals()
        if self.alone:
            signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def patch(self) -> None:
        """gevent's `patch_all` looks up its plugins' entry points 25 times, each a read of every installed
        package's metadata: ~0.25 s of a core in an environment of 200 packages, on every worker's start. The
        packages are read once and the same entry points served for the time of the patching."""
        with _entry_points_read_once():
            super().patch()

    @contextmanager  # gunicorn's handle enters it (its stub says the method returns None)
    def timeout_ctx(self) -> Iterator[None]:  # type: ignore[override]
        """Around reading each request head: past the deadline, or a read that timed out, ends the connection."""
        with gevent.Timeout(self.read_timeout, False):  # type: ignore[arg-type]  # False: silent (gevent's docs)
            try:
                yield
            except TimeoutError:
                pass

    def handle(self, listener: Any, client: socket.socket, addr: Any) -> None:
        self.open += 1
        try:
            if self.open > self.cap and not self._shed():
                self._refuse(client)
                return
            sockets.adopt(client)  # a small write is one system call, not two
            client.settimeout(self.read_timeout)  # each read of a head or body, and each write, at most this long
            self.waiting[client] = None
            AsyncWorker.handle(self, listener, client, addr)  # not GeventWorker's: it makes the socket blocking
        finally:
            self.waiting.pop(client, None)
            self.open -= 1

    def handle_request(self, listener_name: Any, req: Any, sock: socket.socket, addr: Any) -> Any:
        if any(name == "UPGRADE" and value.lower() == "websocket" for name, value in req.headers):
            sock.settimeout(None)  # a WebSocket may rightly stay quiet between responses
        else:
            if req.body is not None:
                self._read_body(req, sock)
            sockets.hold(sock)  # the response's head leaves with its first piece of body: one write, not two
        self.waiting.pop(sock, None)
        shutdown.working()  # until it ends: a shutdown waits for it, then cuts it
        try:
            return super().handle_request(listener_name, req, sock, addr)
        finally:
            shutdown.done()
            try:
                sockets.flush(sock)  # what the response held back (its head, or a corked body)
            except OSError:
                pass  # the client has left: its connection ends as after any failed write
            self.waiting[sock] = None  # back to waiting for its next request, the newest in line
            # A client that sends its next request at once finds it already read: without a turn here, one
            # keep-alive connection keeps the worker while the others' requests wait (fair turns, as within one).
            if time.perf_counter() - self.turn >= SLICE_SECONDS:
                shutdown.turn()
                self.turn = time.perf_counter()

    def run(self) -> None:
        super().run()  # gunicorn's loop: it ends once no connection is left, after SIGTERM
        self._await_work()

    def _await_work(self) -> None:
        """Work that holds no connection (a background response, a batch) is waited for as a request is, and
        its cut gets its grace to store its end: gunicorn would exit the worker under it."""
        cut_at = getattr(self, "cut_at", None)
        while cut_at is not None and shutdown.busy() and time.monotonic() < cut_at + CUT_GRACE:
            gevent.sleep(0.05)

    def handle_exit(self, sig: Any, frame: Any) -> None:
        """SIGTERM: stop taking requests, and drain (gunicorn's run loop stops accepting and waits for the pool)."""
        if self.alive:
            gevent.spawn(self._drain)
        super().handle_exit(sig, frame)

    def _drain(self) -> None:
        """Close idle connections at once, and each kept-alive one once its request ends; let requests at work
        finish within --graceful-timeout; then cut what is left (llmsim/runtime/shutdown.py), which ends each
        stream with its terminal event. gunicorn's run loop exits the worker when no connection is left (it, and a
        master, wait CUT_GRACE seconds more than the graceful timeout before they stop the connections)."""
        shutdown.begin()
        deadline = self.cut_at = time.monotonic() + self.graceful_timeout
        while shutdown.busy() and time.monotonic() < deadline:
            self._shed_idle()
        if shutdown.busy():
            self.log.warning("llmsim: graceful timeout (%gs): ending %d requests and background responses",
                             self.graceful_timeout, shutdown.busy())
            shutdown.cut()
        while True:  # until gunicorn's run loop finds no connection left and the worker exits
            self._shed_idle()

    def _shed_idle(self) -> None:
        """Close every connection waiting for a request (kept alive after its last one); then a moment's wait."""
        while self.waiting:
            self._shed()
        gevent.sleep(0.05)

    def _read_body(self, req: Any, sock: socket.socket) -> None:
        """Read the body whole within the deadline, still counted as waiting for the client; then the app
        reads it from memory. One over --max-body-bytes is left to the app, which refuses it unread."""
        length = next((int(v) for n, v in req.headers if n == "CONTENT-LENGTH" and v.isdigit()), None)
        if length is not None and length > self.max_body:
            return
        data = None
        with gevent.Timeout(self.read_timeout, False):  # type: ignore[arg-type]  # False: silent (gevent's docs)
            try:
                data = req.body.read(self.max_body + 1)
            except TimeoutError:
                pass
        if data is None:
            message = f"The request body did not arrive within {self.read_timeout:g} seconds."
            try:
                sock.sendall(_answer("408 Request Timeout", message, "invalid_request_error", "request_timeout"))
            except OSError:
                pass
            raise StopIteration  # gunicorn closes the connection
        req.body = Body(io.BytesIO(data))  # type: ignore[arg-type]  # any reader with read(size) does

    def handle_error(self, req: Any, client: socket.socket, addr: Any, exc: BaseException) -> None:
        """A request gunicorn cannot parse (its request line, a header, a chunk of its body) gets a 400 in the
        OpenAI error envelope, not gunicorn's HTML page."""
        if not isinstance(exc, (ParseException, NoMoreData)):
            super().handle_error(req, client, addr, exc)
            return
        what = re.sub(r"(?<!^)(?=[A-Z])", " ", type(exc).__name__).lower()  # InvalidChunkSize → invalid chunk size
        try:
            client.sendall(_answer("400 Bad Request", f"The request is not valid HTTP/1.1 ({what}).",
                                   "invalid_request_error", "invalid_http_request"))
        except OSError:
            pass

    def _shed(self) -> bool:
        """Close the connection that has waited longest for a request; False when every one is busy."""
        if not self.waiting:
            return False
        oldest = next(iter(self.waiting))
        del self.waiting[oldest]
        try:  # through a second socket object on the same descriptor, so its handler reads an end of stream and
            # closes quietly (the handler's own object would fail its pending read with an error that gets logged)
            twin = socket.socket(fileno=oldest.fileno())
            try:
                twin.shutdown(socket.SHUT_RDWR)
            finally:
                twin.detach()
        except OSError:
            pass
        return True

    @staticmethod
    def _refuse(client: socket.socket) -> None:
        try:
            client.settimeout(1.0)
            client.sendall(OVERLOADED)
        except OSError:
            pass
        finally:
            client.close()
