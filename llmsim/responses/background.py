"""Background responses: run on a pool of workers, with their events in the store as they happen.

Everything goes through the store, never through this process's memory, so with SQLite any
worker process (with Redis, any worker of any server) can follow a running response's events or
cancel it. A store that can block until a response changes (Redis: `wait`) spares followers
their polling. Workers are `threading` threads, which gevent's patching (in the server) turns
into greenlets.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from llmsim.responses.events import SNAPSHOT, TERMINAL, EventBuilder, cancelled_event
from llmsim.runtime import shutdown, waits
from llmsim.shared.events import dumps
from llmsim.store import FINAL_STATUSES, ResponseStore, SerializedEvent, StoredResponse
from llmsim.store.workers import alive

log = logging.getLogger("llmsim")
POLL_SECONDS = 0.02  # how often a follower looks for new events of a running response
CANCEL_WAIT_SECONDS = 5.0  # how long a cancel waits for the response's worker to stop it
ORPHAN_CHECK_SECONDS = 1.0  # how long a follower waits without news before checking its worker is alive

Serialize = Callable[[dict[str, Any]], SerializedEvent]


def settle_orphan(store: ResponseStore, record: StoredResponse) -> StoredResponse:
    """A response whose worker process died (kill -9, say) will never finish: it fails, with a terminal event
    for anyone following its stream, so nobody waits forever."""
    is_alive = getattr(store, "worker_alive", alive)  # Redis: the worker's heartbeat, on whichever server
    if record.status in FINAL_STATUSES or record.worker is None or is_alive(record.worker):
        return record
    builder = EventBuilder(record.response)
    builder.sequence = len(record.events)
    events = [(event["type"], json.dumps(event, separators=(",", ":"), ensure_ascii=False))
              for event in builder.fail("server_error", "The server stopped while generating this response.")]
    store.append(record.id, events, record.response, force=True)
    return record


def follow(store: ResponseStore, response_id: str, after: int = -1,
           poll_seconds: float = POLL_SECONDS) -> Iterator[SerializedEvent]:
    """The stored events of a response past sequence number `after`, waiting for more until it is final."""
    quiet_since = time.monotonic()
    while True:
        state = store.tail(response_id, after)
        if state is None:  # deleted or expired meanwhile
            return
        status, events = state
        yield from events
        after += len(events)
        if status in FINAL_STATUSES:  # read with its events: nothing more comes
            return
        if events:
            quiet_since = time.monotonic()
            continue
        if time.monotonic() - quiet_since > ORPHAN_CHECK_SECONDS:
            record = store.get(response_id)
            if record is not None:
                settle_orphan(store, record)
            quiet_since = time.monotonic()
        try:
            _wait(store, response_id, after, status, poll_seconds)
        except shutdown.ShuttingDown:  # the server's cut: the response's runner stores its end now, sent from here
            pass


def _wait(store: ResponseStore, response_id: str, after: int, status: str, poll_seconds: float) -> None:
    """Until the response may have changed: the store's own blocking wait, else one poll interval."""
    wait = getattr(store, "wait", None)
    if wait is None:
        time.sleep(poll_seconds)
    else:
        wait(response_id, after, status, ORPHAN_CHECK_SECONDS)


def cancel(store: ResponseStore, response_id: str, wait_seconds: float = CANCEL_WAIT_SECONDS,
           poll_seconds: float = POLL_SECONDS) -> StoredResponse | None:
    """Cancel a response and wait until its worker, in whichever process, has stopped and settled it.

    A worker that never answers (its process was killed) leaves it to us after `wait_seconds`.
    """
    record = store.cancel(response_id)
    deadline = time.monotonic() + wait_seconds
    while record is not None and record.status not in FINAL_STATUSES:
        state = store.tail(response_id, 1 << 62)  # just the status
        if state is None:
            return None
        if state[0] in FINAL_STATUSES:
            return _end_stream(store, store.get(response_id))
        if time.monotonic() > deadline:
            record.response = {**record.response, "status": "cancelled"}
            store.append(response_id, [], record.response, force=True)
            return _end_stream(store, store.get(response_id))
        _wait(store, response_id, 1 << 62, state[0], poll_seconds)
    return _end_stream(store, record)


def _end_stream(store: ResponseStore, record: StoredResponse | None) -> StoredResponse | None:
    """A response cancelled where no worker ran it (queued, or its worker gone) gets its stream's terminal event."""
    events = [] if record is None else record.stream_events()
    if record is None or record.status != "cancelled" or (events and events[-1][0] in TERMINAL):
        return record
    event = cancelled_event(record.response, len(events))
    store.append(record.id, [(event["type"], dumps(event))], force=True)
    return store.get(record.id)


class BackgroundRunner:
    """At most `size` background responses generate at once; the rest wait, queued. A paced one is a parked
    greenlet, so the bound is high: 64 made background mode far slower than synchronous under load."""

    def __init__(self, store: ResponseStore, serialize: Serialize | None = None, size: int = 1024) -> None:
        self.store = store
        self.serialize = serialize or (lambda event: (event["type"], dumps(event)))
        self._slots = threading.BoundedSemaphore(size)
        self.on_queue: Callable[[int], None] | None = None  # told +1 on submit, -1 when done (a metrics gauge)

    def submit(self, builder: EventBuilder, deltas: Iterator[Any],
               on_end: Callable[[dict[str, Any]], None]) -> None:
        """Run `builder` over `deltas` later; `on_end(response)` runs before the terminal event is stored."""
        if self.on_queue is not None:
            self.on_queue(1)
        threading.Thread(target=self._run, args=(builder, deltas, on_end), daemon=True,
                         name=f"background-{builder.response['id']}").start()

    def _run(self, builder: EventBuilder, deltas: Iterator[Any],
             on_end: Callable[[dict[str, Any]], None]) -> None:
        response_id = builder.response["id"]
        waits.watch(None)  # nobody's connection: the client that asked may leave, the response runs on
        shutdown.working()  # a shutdown's cut ends it failed (llmsim/runtime/shutdown.py), never lost or stuck
        try:
            with self._slots:
                if self.store.append(response_id, []):  # False: cancelled (or deleted) while queued
                    self._generate(builder, deltas, on_end)
        except shutdown.ShuttingDown as cut:  # cut while queued, or between its events
            builder.response.update(status="failed", error={"code": cut.code, "message": cut.message})
            self._settle(builder)
        except Exception:
            log.exception("background response %s failed", response_id)
            builder.response.update(status="failed", error={"code": "server_error",
                                                            "message": "The server failed to run the response."})
            self._settle(builder)
        finally:
            shutdown.done()
            close = getattr(deltas, "close", None)
            if close is not None:
                close()  # stops the backend (and frees its pacing slot) when we stopped early
            if self.on_queue is not None:
                self.on_queue(-1)

    def _settle(self, builder: EventBuilder) -> None:
        """A response that ended outside its builder's events (a failure, a cut while queued): stored failed, with
        a terminal event for anyone following its stream."""
        response_id = builder.response["id"]
        record = self.store.get(response_id)
        events = [] if record is None else record.stream_events()
        if not events or events[-1][0] not in TERMINAL:
            event = {"type": "response.failed", "sequence_number": len(events), "response": builder.response}
            self.store.append(response_id, [self.serialize(event)], builder.response, force=True)
        else:
            self.store.append(response_id, [], builder.response, force=True)

    def _generate(self, builder: EventBuilder, deltas: Iterator[Any],
                  on_end: Callable[[dict[str, Any]], None]) -> None:
        response_id = builder.response["id"]
        for event in builder.events(deltas):
            if event["type"] in TERMINAL:
                on_end(builder.response)
            snapshot = builder.response if event["type"] in SNAPSHOT else None
            serialized = self.serialize(event)
            if not self.store.append(response_id, [serialized], snapshot):
                self._cancelled(builder, serialized)
                return
            shutdown.turn()  # let requests (a cancel, say) in between events when nothing paces them

    def _cancelled(self, builder: EventBuilder, pending: SerializedEvent) -> None:
        """Asked to stop: store the event already made, close what is open, end the response cancelled."""
        events = [pending, *(self.serialize(event) for event in builder.cancel())]
        self.store.append(builder.response["id"], events, builder.response, force=True)
