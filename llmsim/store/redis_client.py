"""The Redis connection a fleet shares (`--store redis://host:port/db`, `rediss://`, a password in the URL).

One client per worker process, made after the fork. Commands fail fast while Redis is away (short
timeouts, no retry: a script whose reply was lost must not run twice) so a request gets a 503 at once,
and the pool reconnects by itself when Redis is back. Every key starts with `llmsim:`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

log = logging.getLogger("llmsim")
PREFIX = "llmsim:"
SCHEMES = ("redis://", "rediss://")
HEARTBEAT_SECONDS = 2.0  # how often a worker says it is alive
HEARTBEAT_TTL_SECONDS = 10  # a worker silent this long is taken for dead: its background responses fail


# Compact JSON, UTF-8 as is, for what goes to Redis; one encoder (json.dumps with options builds one per call).
dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def is_redis_url(url: str) -> bool:
    return url.startswith(SCHEMES)


def connect(url: str) -> Any:
    """A `redis.Redis` for `url`; the `redis` package comes with the `[redis]` extra."""
    try:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:  # pragma: no cover - depends on the install
        raise ValueError("--store redis:// needs the redis client: pip install 'llmsim[redis]'") from None
    return redis.Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=2.0, retry=Retry(NoBackoff(), 0),
                                health_check_interval=30)


class Script:
    """A Lua script run by `Scripts` (called like redis-py's: `script(keys=[...], args=[...])`)."""

    def __init__(self, scripts: Scripts, text: str) -> None:
        self.scripts = scripts
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()

    def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        return self.scripts.run([(self, keys, args)])[0]


Call = tuple[Script, Sequence[Any], Sequence[Any]]


class Scripts:
    """The scripts' round trips, on the hot path of every request: commands packed by hiredis, written to the
    socket of a redis-py connection (its handshake applies the URL's TLS, password and database) and read by a
    hiredis reader of our own, without redis-py's layers per command (its retry wrapper, the pool's poll for
    pending data, its parser's and observability hooks), which cost more CPU than the round trip itself.

    A connection goes back to this pool only once every reply it was sent is read; when one fails, every idle
    one is closed too (Redis restarted: they are all dead) and the next call connects again."""

    def __init__(self, client: Any) -> None:
        import hiredis  # with redis, in the `[redis]` extra
        from redis import exceptions

        self.pool = client.connection_pool
        self._pack = hiredis.pack_command
        self._reader = functools.partial(hiredis.Reader, replyError=exceptions.ResponseError)
        self._errors = exceptions
        self._idle: list[tuple[Any, Any]] = []  # (redis-py connection, hiredis reader)

    def register(self, text: str) -> Script:
        return Script(self, text)

    def run(self, calls: Sequence[Call]) -> list[Any]:
        """The replies of `calls`, pipelined (no MULTI: each script is atomic by itself); raises the first error
        reply once all are read."""
        replies = self._send([(b"EVALSHA", script.sha, len(keys), *keys, *args) for script, keys, args in calls])
        for i, reply in enumerate(replies):
            if isinstance(reply, self._errors.ResponseError) and str(reply).startswith("NOSCRIPT"):
                script, keys, args = calls[i]  # Redis restarted or was flushed: it ran nothing of this call
                replies[i] = self._send([(b"EVAL", script.text, len(keys), *keys, *args)])[0]
        for reply in replies:
            if isinstance(reply, self._errors.ResponseError):
                raise reply
        return replies

    def _send(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        connection = None
        try:
            if self._idle:
                connection, reader = self._idle.pop()
            else:
                connection, reader = self.pool.connection_class(**self.pool.connection_kwargs), self._reader()
                connection.connect()
            sock = connection._sock
            sock.sendall(b"".join(map(self._pack, commands)))
            replies: list[Any] = []
            while len(replies) < len(commands):
                reply = reader.gets()
                if reply is False:
                    data = sock.recv(65536)
                    if not data:
                        raise self._errors.ConnectionError("Redis closed the connection")
                    reader.feed(data)
                else:
                    replies.append(reply)
        except BaseException as error:
            if connection is not None:  # replies may be left unread on it: it cannot be used again
                connection.disconnect()
            if isinstance(error, (OSError, self._errors.ConnectionError)):  # Redis went away: the idle ones too
                while self._idle:
                    self._idle.pop()[0].disconnect()
            if isinstance(error, OSError):
                kind = self._errors.TimeoutError if isinstance(error, socket.timeout) else self._errors.ConnectionError
                raise kind(f"Error talking to Redis: {error}") from error
            raise
        self._idle.append((connection, reader))
        return replies


class Batch:
    """Script calls sent together on one round trip: what a request holds back until its answer leaves (a JSON
    answer's stored response and its request log entry), and what it sends with its next call.

    Per greenlet (gevent patches `threading.local`): one request's held writes never wait on another's.
    """

    def __init__(self, scripts: Scripts) -> None:
        self.scripts = scripts
        self._local = threading.local()

    def hold(self) -> None:
        """From now until `release`, `write`s wait (nothing may read them before the answer leaves)."""
        self._local.held = []

    def write(self, script: Script, keys: list[Any], args: list[Any]) -> None:
        """Run `script` now, or at `release` while held."""
        held = getattr(self._local, "held", None)
        if held is None:
            script(keys=keys, args=args)
        else:
            held.append((script, keys, args))

    def release(self) -> None:
        """Send what was held, in order, on one round trip; raises as a call would (the answer must not leave)."""
        held, self._local.held = getattr(self._local, "held", None), None
        if held:
            self.scripts.run(held)


def unavailable_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean Redis cannot be reached now (answered with a 503, retried later)."""
    import redis

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


class Heartbeat:
    """Keeps `llmsim:worker:<id>` alive while this process runs, so any server can tell an orphaned
    background response (its worker died) from one still generating elsewhere."""

    def __init__(self, client: Any, worker: str) -> None:
        self.client = client
        self.worker = worker
        self._started = False
        self._lock = threading.Lock()

    def key(self, worker: str) -> str:
        return f"{PREFIX}worker:{worker}"

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self._beat()
        threading.Thread(target=self._run, daemon=True, name="llmsim-heartbeat").start()

    def alive(self, worker: str) -> bool:
        return bool(self.client.exists(self.key(worker)))

    def _beat(self) -> None:
        try:
            self.client.set(self.key(self.worker), "1", ex=HEARTBEAT_TTL_SECONDS)
        except unavailable_errors():
            log.warning("redis unavailable: heartbeat skipped")

    def _run(self) -> None:
        while True:
            time.sleep(HEARTBEAT_SECONDS)
            self._beat()
