"""The Redis connection a fleet shares (`--store redis://host:port/db`, `rediss://`, a password in the URL).

One client per worker process, made after the fork. Commands fail fast while Redis is away (short
timeouts, no retry: a script whose reply was lost must not run twice) so a request gets a 503 at once,
and the pool reconnects by itself when Redis is back. Every key starts with `llmsim:`.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger("llmsim")
PREFIX = "llmsim:"
SCHEMES = ("redis://", "rediss://")
HEARTBEAT_SECONDS = 2.0  # how often a worker says it is alive
HEARTBEAT_TTL_SECONDS = 10  # a worker silent this long is taken for dead: its background responses fail


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


class Batch:
    """Script calls sent together on one round trip: what a request holds back until its answer leaves (a JSON
    answer's stored response and its request log entry), and what it sends with its next call.

    Per greenlet (gevent patches `threading.local`): one request's held writes never wait on another's.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self._local = threading.local()

    def hold(self) -> None:
        """From now until `release`, `write`s wait (nothing may read them before the answer leaves)."""
        self._local.held = []

    def write(self, script: Any, keys: list[Any], args: list[Any]) -> None:
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
            self.send(held)

    def send(self, calls: list[tuple[Any, list[Any], list[Any]]]) -> list[Any]:
        """The replies of several script calls, pipelined (no MULTI: each script is atomic by itself)."""
        if len(calls) == 1:
            script, keys, args = calls[0]
            return [script(keys=keys, args=args)]
        import redis

        with self.client.pipeline(transaction=False) as pipe:
            for script, keys, args in calls:
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            replies = pipe.execute(raise_on_error=False)
        for i, (reply, (script, keys, args)) in enumerate(zip(replies, calls)):
            if isinstance(reply, redis.exceptions.NoScriptError):  # Redis restarted: it ran nothing of this call
                replies[i] = script(keys=keys, args=args)
            elif isinstance(reply, Exception):
                raise reply
        return list(replies)


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
