"""One Redis connection a worker's greenlets share, their scripts pipelined (llmsim/store/redis_client.py `Scripts`).

At speed 0 a worker's CPU, not Redis, limits it, and a round trip of its own per request cost each request a `send`
and a `recv` (system calls, ~50 us together) and a wake-up of the event loop. Here the requests that reach Redis in
one turn of the loop (those whose sockets were readable together, 32 clients keep several in flight) queue their
commands; at the end of the turn, one `send` takes them all, and one readable event's `recv` usually brings all the
replies back. Each request still waits for its own replies only (read in order: Redis answers a connection's
commands in the order sent) and is acknowledged only once they are read, so pipelining loses nothing it answered.

Each wait has the whole socket timeout. A wait that runs out abandons its replies (read and dropped when they come)
and retires the connection: the others already sent on it keep their waits, while new requests go to a fresh one.
A failing connection fails every request waiting on it (their scripts may or may not have run: no retry).
"""

from __future__ import annotations

import socket
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol, cast

from gevent import get_hub
from gevent.hub import Waiter

from llmsim.runtime.redis_link import RECV_BYTES, Link


class _Watcher(Protocol):
    """The event loop's io watcher as the pipe uses it (gevent's stubs leave out `ref` and `active`)."""

    ref: bool  # whether it keeps the loop running

    @property
    def active(self) -> bool: ...

    def start(self, callback: Callable[[], Any]) -> None: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


class _Slot:
    """One request's commands on the pipe: how many replies it waits for, and those read so far."""

    __slots__ = ("count", "replies", "waiter", "abandoned")

    def __init__(self, count: int, waiter: Waiter) -> None:
        self.count = count
        self.replies: list[Any] = []
        self.waiter = waiter
        self.abandoned = False


class Pipe:
    """A `Link` (gevent's plain socket) whose greenlets' commands go out together at the end of the loop's turn.
    Its replies are read by a watcher of the event loop, which hands each request its own."""

    __slots__ = ("link", "hub", "queued", "outgoing", "unsent", "sent", "retired", "closed", "_reading",
                 "_writing", "_flushing")

    def __init__(self, link: Link) -> None:
        assert link.raw is not None, "a pipe needs gevent's plain socket"
        self.link = link
        self.hub = get_hub()
        self.queued: list[_Slot] = []  # waiting for the turn's flush, their commands in `outgoing`
        self.outgoing: list[bytes] = []
        self.unsent = b""  # what one `send` could not take (the socket's buffer was full)
        self.sent: deque[_Slot] = deque()  # in the order their replies come
        self.retired = False  # takes no new request; closes once nothing is waiting on it
        self.closed = False
        loop, fileno = self.hub.loop, link.raw.fileno()
        self._reading = cast(_Watcher, loop.io(fileno, 1, ref=False))
        self._writing = cast(_Watcher, loop.io(fileno, 2, ref=False))
        self._flushing = False
        self._reading.start(self._readable)

    @property
    def usable(self) -> bool:
        return not (self.retired or self.closed)

    def exchange(self, data: bytes, count: int) -> list[Any]:
        """Send `data` (packed commands) with the others of this turn and wait for its `count` replies; raises
        OSError when the connection fails or the wait times out."""
        if not self.usable:
            raise ConnectionError("this Redis connection is closed")
        slot = _Slot(count, Waiter(self.hub))
        self.queued.append(slot)
        self.outgoing.append(data)
        if not self._flushing:
            self._flushing = True
            self.hub.loop.run_callback(self._flush)
        seconds = self.link.sock.timeout  # how long a wait for its replies may take
        timer = None
        if seconds is not None:
            timer = self.hub.loop.timer(seconds, ref=False)
            timer.start(slot.waiter.throw, TimeoutError("timed out"), update=True)
        try:
            return slot.waiter.get()
        except BaseException as error:
            slot.abandoned = True  # its replies, if they come, are read and dropped
            if isinstance(error, socket.timeout):
                self.retire()
            raise
        finally:
            if timer is not None:
                timer.close()

    def retire(self) -> None:
        """New requests go elsewhere; closed once the ones already waiting on it are answered or gave up."""
        self.retired = True
        self._close_if_done()

    def _flush(self) -> None:
        """In the loop's callbacks, after the greenlets of this turn ran: their commands go in one `send`."""
        self._flushing = False
        if self.closed:
            return
        slots, self.queued = self.queued, []
        data = b"".join([self.unsent, *self.outgoing]) if self.unsent else b"".join(self.outgoing)
        self.outgoing = []
        self.sent.extend(slots)
        self._reading.ref = True  # the loop waits for their replies
        self._send(data)

    def _send(self, data: bytes) -> None:
        try:
            sent = self.link.raw.send(data)  # type: ignore[union-attr]
        except BlockingIOError:
            sent = 0
        except OSError as error:
            self._fail(error)
            return
        self.unsent = data[sent:]
        if self.unsent and not self._writing.active:
            self._writing.start(self._writable)
        elif not self.unsent and self._writing.active:
            self._writing.stop()

    def _writable(self) -> None:
        if not self.closed and self.unsent and not self._flushing:  # a flush due this turn sends it first
            self._send(self.unsent)

    def _readable(self) -> None:
        try:
            data = self.link.raw.recv(RECV_BYTES)  # type: ignore[union-attr]
        except BlockingIOError:
            return
        except OSError as error:
            self._fail(error)
            return
        if not data:
            self._fail(ConnectionResetError("Redis closed the connection"))
            return
        reader, sent, done = self.link.reader, self.sent, []
        failure: BaseException | None = None
        try:
            reader.feed(data)
            while sent:
                reply = reader.gets()
                if reply is False:
                    break
                slot = sent[0]
                slot.replies.append(reply)
                if len(slot.replies) == slot.count:
                    done.append(sent.popleft())
            if not sent and reader.gets() is not False:
                failure = ConnectionError("Redis sent a reply nobody asked for")
        except Exception as exc:  # a protocol error
            failure = ConnectionError(f"Redis protocol error: {exc}")
        if failure is not None:  # the connection is out of step: the requests still waiting fail
            self._fail(failure)
        elif not sent and not self.queued:
            self._reading.ref = False  # a worker with nothing in flight may stop
        for slot in done:  # those answered in full have their replies
            if not slot.abandoned:
                slot.waiter.switch(slot.replies)  # runs the request until it next waits, then comes back here
        self._close_if_done()

    def _fail(self, error: BaseException) -> None:
        """The connection is lost: every request waiting on it gets `error`."""
        waiting = [*self.sent, *self.queued]
        self.sent.clear()
        self.queued, self.outgoing = [], []
        self._close()
        for slot in waiting:
            if not slot.abandoned:
                slot.abandoned = True
                slot.waiter.throw(error)

    def _close_if_done(self) -> None:
        if self.retired and not self.closed and not self.queued and all(slot.abandoned for slot in self.sent):
            self._close()

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self._reading.close()
            self._writing.close()
            self.link.close()
