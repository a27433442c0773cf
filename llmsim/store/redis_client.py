"""The Redis connection a fleet shares (`--store redis://host:port/db`, `rediss://`, a password in the URL).

One client per worker process, made after the fork. Commands fail fast while Redis is away (short
timeouts, no retry: a script whose reply was lost must not run twice) so a request gets a 503 at once,
and the pool reconnects by itself when Redis is back. Every key starts with `llmsim:`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llmsim.runtime.redis_link import Link
from llmsim.runtime.redis_pipe import Pipe
from llmsim.wire import dumps_plain as dumps  # noqa: F401  # compact JSON for what goes to Redis (the Redis modules import it here)

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


class Script:
    """A Lua script run by `Scripts` (called like redis-py's: `script(keys=[...], args=[...])`)."""

    def __init__(self, scripts: Scripts, text: str) -> None:
        self.scripts = scripts
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()

    def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        return self.scripts.run([(self, keys, args)])[0]


Call = tuple[Script, Sequence[Any], Sequence[Any]]
MAX_JOINED = 64  # distinct sequences of scripts joined into one (a few in practice: put, then finish or settle)

# Runs calls[1] (a guard), then the other calls only when its reply is {'ok', ...}; returns the guard's reply.
# ARGV: the number of calls, each one's number of keys and of arguments, then their arguments; KEYS: their keys.
_JOINED = """
local function slice(t, from, n)
  local part = {}
  for i = 1, n do part[i] = t[from + i - 1] end
  return part
end
local m = tonumber(ARGV[1])
local k, a, first = 1, 2 + 2 * m, nil
for i = 1, m do
  local nk, na = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local reply = calls[i](slice(KEYS, k, nk), slice(ARGV, a, na))
  k, a = k + nk, a + na
  if i == 1 then
    if type(reply) ~= 'table' or reply[1] ~= 'ok' then return reply end
    first = reply
  end
end
return first
"""


class Scripts:
    """The scripts' round trips, on the hot path of every request: commands packed by hiredis, written to the
    socket of a redis-py connection and read by a hiredis reader of our own (llmsim/runtime/redis_link.py), without
    redis-py's layers per command (its retry wrapper, the pool's poll for pending data, its parser's and
    observability hooks), which cost more CPU than the round trip itself.

    Under gevent, a worker's calls share one connection (llmsim/runtime/redis_pipe.py): the calls of one turn of
    the event loop go out in one `send`. Elsewhere (TLS, outside gevent) a connection goes back to this pool only
    once every reply it was sent is read. When one fails, every idle one is closed too (Redis restarted: they are
    all dead) and the next call connects again."""

    def __init__(self, client: Any) -> None:
        import hiredis  # with redis, in the `[redis]` extra
        from redis import exceptions

        self.pool = client.connection_pool
        self._pack = hiredis.pack_command
        self._reader = functools.partial(hiredis.Reader, replyError=exceptions.ResponseError)
        self._errors = exceptions
        self._idle: list[Link] = []
        self._pipe: Pipe | None = None  # the connection calls share under gevent
        self._joined: dict[tuple[Script, ...], Script] = {}  # see `guarded`

    def register(self, text: str) -> Script:
        return Script(self, text)

    def guarded(self, calls: Sequence[Call]) -> Call:
        """`calls` as one call, one script: the first (a guard, replying {'ok', ...} or a refusal) runs, then the
        others only if it accepted, all atomically; its reply is the guard's."""
        scripts = tuple(script for script, _, _ in calls)
        joined = self._joined.get(scripts)
        if joined is None:
            if len(self._joined) >= MAX_JOINED:
                self._joined.clear()
            functions = "".join(f"calls[{i}] = function(KEYS, ARGV)\n{script.text}\nend\n"
                                for i, script in enumerate(scripts, 1))
            joined = self._joined[scripts] = Script(self, "local calls = {}\n" + functions + _JOINED)
        keys: list[Any] = []
        sizes: list[Any] = [len(calls)]
        args: list[Any] = []
        for _, call_keys, call_args in calls:  # extended list by list: a generator per argument cost more
            keys += call_keys
            args += call_args
            sizes += (len(call_keys), len(call_args))
        return joined, keys, sizes + args

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
        pipe = self._pipe
        if pipe is not None and pipe.usable:
            return self._piped(pipe, commands)
        link = None
        try:
            link = self._idle.pop() if self._idle else Link(
                self.pool.connection_class(**self.pool.connection_kwargs), self._reader())
            if link.raw is None:  # TLS, or outside gevent: a round trip of its own on a pooled connection
                replies = link.exchange(b"".join(map(self._pack, commands)), len(commands))
        except BaseException as error:
            if link is not None:  # replies may be left unread on it: it cannot be used again
                link.close()
            if isinstance(error, (OSError, self._errors.ConnectionError)):  # Redis went away: the idle ones too
                while self._idle:
                    self._idle.pop().close()
            if isinstance(error, OSError):
                raise self._redis_error(error) from error
            raise
        if link.raw is not None:  # gevent's plain socket: this worker's calls share it from now on
            if self._pipe is not None:
                self._pipe.retire()
            pipe = self._pipe = Pipe(link)
            return self._piped(pipe, commands)
        self._idle.append(link)
        return replies

    def _piped(self, pipe: Pipe, commands: list[tuple[Any, ...]]) -> list[Any]:
        try:
            return pipe.exchange(b"".join(map(self._pack, commands)), len(commands))
        except OSError as error:
            raise self._redis_error(error) from error

    def _redis_error(self, error: OSError) -> Exception:
        """A socket's failure as redis-py's own error (the app answers those with a 503)."""
        kind = self._errors.TimeoutError if isinstance(error, socket.timeout) else self._errors.ConnectionError
        return kind(f"Error talking to Redis: {error}")


@dataclass
class Guard:
    """A request's admission, sent first with its held writes: they are written only if it accepts (see
    `Scripts.guarded`). `args` are made as it is sent (the request log entry is complete then); `accepted`
    reads the reply."""

    script: Script
    keys: list[Any]
    args: Callable[[], list[Any]]
    accepted: Callable[[Any], bool]


class _Hold:
    """A request's held writes and its deferred admission (`Batch`)."""

    __slots__ = ("held", "guard", "defer")

    def __init__(self, defer: bool) -> None:
        self.held: list[Call] = []
        self.guard: Guard | None = None
        self.defer = defer


class Batch:
    """Script calls sent together on one round trip: what a request holds back until its answer leaves (a JSON
    answer's stored response and its request log entry), and what it sends with its next call. A JSON answer
    that nothing can intervene in may send its admission with them too (`defer`): one round trip in all.

    Per greenlet (gevent patches `threading.local`): one request's held writes never wait on another's.
    """

    def __init__(self, scripts: Scripts) -> None:
        self.scripts = scripts
        self._local = threading.local()  # .hold: this greenlet's _Hold, or None (one lookup per call)

    def hold(self, defer: bool = False) -> None:
        """From now until `release`, `write`s wait (nothing may read them before the answer leaves). `defer`: the
        request's admission may wait with them (`commit` is called once its answer is made)."""
        self._local.hold = _Hold(defer)

    def holding(self) -> bool:
        """Whether `write`s wait (between `hold` and `release`)."""
        return getattr(self._local, "hold", None) is not None

    def deferrable(self) -> bool:
        """Whether this request's admission may be sent with its held writes (`defer`)."""
        hold = getattr(self._local, "hold", None)
        return hold is not None and hold.defer and hold.guard is None

    def defer(self, guard: Guard) -> None:
        """Send `guard` (the request's admission) first with the held writes, which it lets through or not."""
        self._local.hold.guard = guard

    def write(self, script: Script, keys: list[Any], args: list[Any]) -> None:
        """Run `script` now, or at `release` while held."""
        hold = getattr(self._local, "hold", None)
        if hold is None:
            script(keys=keys, args=args)
        else:
            hold.held.append((script, keys, args))

    def commit(self) -> bool:
        """The answer is made: send a deferred admission with what is held so far, on one round trip. False: the
        admission was refused (the fleet's config moved on) and nothing was written; the request must be admitted
        again, the usual way (writes stay held, none deferred). True (also when nothing was deferred): go on."""
        hold = getattr(self._local, "hold", None)
        if hold is None or hold.guard is None:
            return True
        guard, held, hold.guard, hold.held, hold.defer = hold.guard, hold.held, None, [], False
        return self._send(guard, held)

    def release(self) -> None:
        """Send what was held, in order, on one round trip; raises as a call would (the answer must not leave)."""
        hold, self._local.hold = getattr(self._local, "hold", None), None
        if hold is None:
            return
        if hold.guard is not None:  # never committed (the request failed first): its admission is recorded as it ended
            if not self._send(hold.guard, hold.held):
                log.warning("an answer made under the fleet's previous config was not recorded")
        elif hold.held:
            self.scripts.run(hold.held)

    def _send(self, guard: Guard, held: list[Call]) -> bool:
        call = self.scripts.guarded([(guard.script, guard.keys, guard.args()), *held])
        return guard.accepted(self.scripts.run([call])[0])


def unavailable_errors() -> tuple[type[Exception], ...]:
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
        self._stopped = threading.Event()

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

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(HEARTBEAT_SECONDS):
            self._beat()
