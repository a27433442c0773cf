"""The one job runner of both providers' batches: each request of a job runs as the request it names, through
`dispatch` (the same road as over HTTP), in a background greenlet that never holds up other requests.

What a job is (its lines, its result lines, its fields at each step) is its Kind's (llmsim/jobs/openai_batches.py,
llmsim/jobs/message_batches.py); the runner only moves it along: validating (a kind that has it), in progress,
finalizing, ended, each step written to the store as it happens, so any process reads where it stands. A step
waits STEP_SECONDS divided by the job's speed (speed 0: none), and each line is paced as its request would be.

Everything a job needs is in the store: a cancel is a field the runner reads before each line; a job whose process
died (a restart) is adopted by the next process that reads it, which runs the lines that have no result yet.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from llmsim.jobs import dispatch
from llmsim.jobs.dispatch import Reply
from llmsim.request import ApiRequest
from llmsim.runtime import shutdown, waits
from llmsim.store.objects import PINNED, ObjectStore, Stored
from llmsim.store.workers import alive, this_worker

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline

log = logging.getLogger("llmsim")
STEP_SECONDS = 1.0  # a step's wait (validating, finalizing) at speed 1; speed divides it, as every wait
LINES_AT_ONCE = 8  # a paced job's lines in flight together (at speed 0 one by one: nothing to overlap)
LINE_PAUSE_SECONDS = 0.001  # a pause after each line: a turn (sleep 0) lets ready work in, a pause lets in IO
WINDOW_SECONDS = 24 * 3600  # the completion window both providers give a job
WORKER, STATE, CANCEL, REQUEST = "_worker", "_state", "_cancel", "_request"  # the runner's own fields


@dataclass(frozen=True)
class Line:
    index: int
    custom_id: str
    url: str
    body: Any


class Invalid(Exception):
    """A job whose input cannot run (a kind's validation, as the live API fails a batch): its errors."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors[0]["message"] if errors else "invalid")
        self.errors = errors


@dataclass
class Tally:
    """A job's results so far, by category (a kind's own names), and the token usage of the succeeded ones."""

    counts: dict[str, int] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)

    def add(self, category: str, usage: dict[str, int] | None = None) -> None:
        self.counts[category] = self.counts.get(category, 0) + 1
        for name, value in (usage or {}).items():
            self.usage[name] = self.usage.get(name, 0) + value


class Kind(Protocol):
    """One provider's job: its lines, its results, its fields at each step."""

    kind: str
    validates: bool  # the job shows a validating step first (OpenAI)

    def lines(self, record: Stored) -> list[Line]:
        """The requests to run; raises Invalid when the input cannot run."""
        ...

    def result(self, line: Line, reply: Reply) -> tuple[str, str, dict[str, int] | None]:
        """A line's result as its JSONL line, its category, and its usage."""
        ...

    def unrun(self, line: Line, why: str) -> tuple[str, str] | None:
        """The result of a line not run (`why`: cancelled, expired) and its category; None: it has none."""
        ...

    def category(self, text: str) -> tuple[str, dict[str, int] | None]:
        """A stored result line's category and usage (a job resumed counts what was done)."""
        ...

    def started(self, record: Stored, lines: list[Line], now: float) -> dict[str, Any]: ...

    def progress(self, record: Stored, tally: Tally) -> dict[str, Any]: ...

    def finalizing(self, record: Stored, now: float) -> dict[str, Any]: ...

    def ended(self, record: Stored, outcome: str, results: dict[int, str], tally: Tally,
              now: float) -> dict[str, Any]:
        """The final fields; `outcome`: completed, cancelled or expired."""
        ...

    def failed(self, record: Stored, errors: list[dict[str, Any]], now: float) -> dict[str, Any]: ...


def request_fields(asked: ApiRequest) -> dict[str, Any]:
    """What a job's lines take from the request that made it (its overrides, its fault header)."""
    return {"seed": asked.seed, "speed": asked.speed, "text_mode": asked.text_mode, "fault": asked.fault,
            "strict_params": asked.strict_params}


class Runner:
    def __init__(self, pipeline: Pipeline, store: ObjectStore, on_answer: Callable[[str, int], None] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.pipeline = pipeline
        self.store = store
        self.on_answer = on_answer
        self.clock = clock
        self.alive: Callable[[str], bool] = getattr(pipeline.store, "worker_alive", alive)

    def new_fields(self, asked: ApiRequest, state: str) -> dict[str, Any]:
        """The runner's fields of a job about to start in this process."""
        return {PINNED: True, WORKER: this_worker(), STATE: state, CANCEL: None, REQUEST: request_fields(asked)}

    def start(self, kind: Kind, job_id: str, api_key: str | None = None) -> None:
        threading.Thread(target=self._run, args=(kind, job_id, api_key), daemon=True,
                         name=f"job-{job_id}").start()

    def adopt(self, kind: Kind, record: Stored) -> Stored:
        """A job whose process is gone (a restart) goes on here; anything else comes back as it is."""
        worker = record.fields.get(WORKER)
        if not record.fields.get(PINNED) or not isinstance(worker, str) or self.alive(worker):
            return record
        if self.store.claim(kind.kind, record.id, WORKER, worker, this_worker()):
            log.info("job %s adopted from %s", record.id, worker)
            self.start(kind, record.id)
        return self.store.get(kind.kind, record.id) or record

    def _run(self, kind: Kind, job_id: str, api_key: str | None) -> None:
        waits.watch(None)  # nobody's connection: the client that asked may leave, the job runs on
        shutdown.working()
        try:
            self._steps(kind, job_id, api_key)
        except shutdown.ShuttingDown:  # left as it stands: the next process to read it takes it on
            log.info("job %s stopped by the shutdown", job_id)
        except Exception:
            log.exception("job %s failed", job_id)
            record = self.store.get(kind.kind, job_id)
            if record is not None:
                error = {"code": "server_error", "message": "The server failed to run the batch.", "line": None,
                         "param": None}
                self.store.update(kind.kind, job_id, {**kind.failed(record, [error], self.clock()),
                                                      PINNED: False, STATE: "ended"})
        finally:
            shutdown.done()

    def _steps(self, kind: Kind, job_id: str, api_key: str | None) -> None:
        record = self.store.get(kind.kind, job_id)
        if record is None:
            return
        speed = self._speed(record)
        if record.fields[STATE] == "validating":
            self._pause(speed)
            try:
                lines = kind.lines(record)
            except Invalid as invalid:
                self._end(kind, job_id, kind.failed(record, invalid.errors, self.clock()))
                return
            record = self._update(kind, job_id, {**kind.started(record, lines, self.clock()),
                                                 STATE: "in_progress"})
            if record is None:
                return
        else:
            lines = kind.lines(record)
        if record.fields[STATE] == "in_progress":
            record = self._lines(kind, record, lines, speed, api_key)
            if record is None:
                return
        outcome = record.fields.get("_outcome", "completed")
        if record.fields[STATE] != "finalizing":
            record = self._update(kind, job_id, {**kind.finalizing(record, self.clock()), STATE: "finalizing",
                                                 "_outcome": outcome})
            if record is None:
                return
            if kind.validates:  # a kind that shows its steps (OpenAI's finalizing) holds each a while
                self._pause(speed)
        results = self.store.lines(kind.kind, job_id)
        tally = self._tally(kind, results)
        self._end(kind, job_id, kind.ended(record, outcome, results, tally, self.clock()))

    def _lines(self, kind: Kind, record: Stored, lines: list[Line], speed: float,
               api_key: str | None) -> Stored | None:
        """Run every line that has no result yet; then, if cancelled or past the window, give the rest theirs."""
        job_id = record.id
        results = self.store.lines(kind.kind, job_id)
        tally = self._tally(kind, results)
        pending = iter([line for line in lines if line.index not in results])
        lock = threading.Lock()
        stop: list[str] = []  # why the lines stopped: cancelled, expired
        pending_left: list[Line] = []  # taken, then not run
        template = self._template(record, api_key)
        expires_at = float(record.fields.get("_expires_at") or record.created + WINDOW_SECONDS)

        def work() -> None:
            while not stop:
                if shutdown.state.draining:  # a graceful stop ends the lines in hand; the rest are the next server's
                    raise shutdown.ShuttingDown()
                with lock:
                    line = next(pending, None)
                if line is None:
                    return
                current = self.store.get(kind.kind, job_id)
                if current is None or current.fields.get(CANCEL):
                    stop.append("cancelled")
                elif self.clock() >= expires_at:
                    stop.append("expired")
                if stop:
                    with lock:
                        pending_left.append(line)
                    return
                reply = dispatch.run(self.pipeline, line.url, replace(template, body=line.body), self.on_answer)
                text, category, usage = kind.result(line, reply)
                self.store.add_line(kind.kind, job_id, line.index, text)
                with lock:
                    tally.add(category, usage)
                    self.store.update(kind.kind, job_id, kind.progress(record, tally))
                time.sleep(LINE_PAUSE_SECONDS)  # the worker's other requests go on between lines

        failures: list[BaseException] = []  # what ended a helper thread (a store gone away, the shutdown's cut)

        def helper() -> None:
            waits.watch(None)
            shutdown.working()
            try:
                work()
            except BaseException as failure:  # noqa: BLE001 - raised again in the job's own thread, below
                failures.append(failure)
                stop.append("failed")
            finally:
                shutdown.done()

        threads = [threading.Thread(target=helper, daemon=True) for _ in range(0 if speed == 0 else LINES_AT_ONCE - 1)]
        for thread in threads:
            thread.start()
        try:
            work()
        except BaseException:
            stop.append("failed")  # the helpers take no more lines
            raise
        finally:
            for thread in threads:
                thread.join()
        if failures:
            raise failures[0]
        if stop:
            why = stop[0]
            for line in [*pending_left, *pending]:
                unrun = kind.unrun(line, why)
                if unrun is not None:
                    self.store.add_line(kind.kind, job_id, line.index, unrun[0])
                    tally.add(unrun[1])
            outcome = "cancelled" if why == "cancelled" else "expired"
            return self._update(kind, job_id, {**kind.progress(record, tally), "_outcome": outcome})
        return self._update(kind, job_id, {**kind.progress(record, tally), "_outcome": "completed"})

    def _template(self, record: Stored, api_key: str | None) -> ApiRequest:
        said = record.fields.get(REQUEST) or {}
        return ApiRequest(None, owner=record.owner, api_key=api_key, seed=said.get("seed"), speed=said.get("speed"),
                          text_mode=said.get("text_mode"), fault=said.get("fault"),
                          strict_params=bool(said.get("strict_params")))

    def _speed(self, record: Stored) -> float:
        speed = (record.fields.get(REQUEST) or {}).get("speed")
        return float(self.pipeline.pacer.speed if speed is None else speed)

    @staticmethod
    def _pause(speed: float) -> None:
        if speed > 0:
            waits.wait(STEP_SECONDS / speed)

    def _tally(self, kind: Kind, results: dict[int, str]) -> Tally:
        tally = Tally()
        for text in results.values():
            tally.add(*kind.category(text))
        return tally

    def _update(self, kind: Kind, job_id: str, changes: dict[str, Any]) -> Stored | None:
        return self.store.update(kind.kind, job_id, changes)

    def _end(self, kind: Kind, job_id: str, changes: dict[str, Any]) -> None:
        self.store.update(kind.kind, job_id, {**changes, PINNED: False, STATE: "ended"})


def ordered(results: dict[int, str]) -> Iterator[str]:
    """The result lines in their input lines' order."""
    for index in sorted(results):
        yield results[index]
