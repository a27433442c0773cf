"""The relay road: one road for every relayed request (proxy, replay; the lean WSGI path's too), whatever its
surface. The request is admitted by what its body says, then answered by the backend with its own events and ids,
around which the same recorded timing, stream faults, rate-limit settling and store apply. What it needs of the
surface (where the end and the usage sit in its stream, whether its final object is stored, how its stream ends in
error) is the surface's contract (llmsim/surface.py)."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

from llmsim.backends.relay import Exchange, Relay, Relayed
from llmsim.chaos.admission import relayed_prompt
from llmsim.chaos.faults import Admission
from llmsim.errors import APIError
from llmsim.request import ApiRequest, attach
from llmsim.shared import rawsse
from llmsim.shared.events import SerializedEvent
from llmsim.shared.relayed import RelayedStream
from llmsim.store import StoredResponse
from llmsim.timing import recorded

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Route, Surface


def relay(pipeline: Pipeline, surface: Surface, asked: ApiRequest, raw: bool = False, route: Route | None = None
          ) -> tuple[Relayed | None, Admission | None]:
    """(None, None): the backend generates. (None, the admission): the backend left it to generation (replay's
    miss with `--on-miss sim`), admitted already. `raw`: the transport can send a live stream's bytes as they
    are, which it gets unless a stream fault needs the events one by one. `route`: the surface's route it came
    by (None: its create route), which may say where it goes and whether it streams."""
    backend = pipeline.relaying
    if backend is None:
        return None, None
    body = asked.body
    if not isinstance(body, dict):
        raise APIError("Invalid request body: expected a JSON object.", code="invalid_type")
    outline = surface.outline(asked, route)
    admission = pipeline.gate.check_limits_and_faults(surface, relayed_prompt(outline, pipeline.catalog), asked,
                                                      outline.stream)
    exchange = Exchange(surface, body, asked.raw, outline.upstream_path, outline.stream)
    try:
        return _Road(pipeline, admission, asked.owner).relayed(backend, exchange, asked.speed, raw), admission
    except BaseException as error:  # an upstream's error answer, say: its answer finishes the ticket
        attach(error, admission.ticket)
        raise


class _Road:
    """One relayed request's way: timed, watched, settled and stored."""

    def __init__(self, pipeline: Pipeline, admission: Admission, owner: str) -> None:
        self.pipeline = pipeline
        self.admission = admission
        self.owner = owner

    def relayed(self, backend: Relay, exchange: Exchange, speed: float | None, raw: bool) -> Relayed | None:
        reply = backend.relay(exchange)
        if reply is None:
            return None
        admission = self.admission
        speed = self.pipeline.pacer.speed if speed is None else speed
        watch = RelayedStream(exchange.surface)
        store = exchange.surface.stores_relayed and exchange.body.get("store") is not False
        if reply.events is None and reply.chunks is None:
            recorded.wait(reply.wait, speed)
            watch.observe_body(reply.body)
            self._settle(watch, store, [])
            if admission.meter is not None:  # a whole answer passes no events: measured as it came
                admission.meter.close(None, 0.0)
            if admission.stream_fault is not None:
                admission.stream_fault.answer_body()
            return Relayed(reply.status, reply.headers, body=reply.body)
        if reply.chunks is not None and raw and admission.stream_fault is None:
            chunks = self._watch_raw(reply.chunks, watch, store)
            return Relayed(reply.status, reply.headers, chunks=admission.chunks(chunks, exchange.surface.token_marks))
        if reply.chunks is not None:
            events: Iterator[SerializedEvent] = rawsse.events(reply.chunks)
        elif reply.timed:
            events = recorded.play(reply.events or iter(()), speed)
        else:
            events = ((k, d) for _, k, d in reply.events or ())
        watched = self._watch(events, watch, store)
        return Relayed(reply.status, reply.headers, events=admission.events(watch, watched))

    def _watch(self, events: Iterator[SerializedEvent], watch: RelayedStream, store: bool
               ) -> Iterator[SerializedEvent]:
        kept: list[SerializedEvent] = []
        try:
            for kind, data in events:
                final = watch.observe(kind, data)
                if store:
                    kept.append((kind, data))
                if final:  # settled before the client sees the end, as for a generated response
                    self._settle(watch, store, kept)
                yield kind, data
        finally:
            if isinstance(events, Generator):
                events.close()
        if watch.chat:
            self._settle(watch, False, kept)

    def _watch_raw(self, chunks: Iterator[bytes], watch: RelayedStream, store: bool) -> Iterator[bytes]:
        """The bytes as they come; the final event, found in them, settles and stores before it is sent."""
        kept = bytearray()
        settled = False
        try:
            for chunk in chunks:
                kept += chunk
                if not settled and watch.observe_raw(kept):
                    settled = True
                    self._settle(watch, store, [], raw=bytes(kept))
                yield chunk
        finally:
            if isinstance(chunks, Generator):
                chunks.close()
        if not settled and (watch.chat or watch.observe_all(kept)):  # chat: its usage came last, if at all
            self._settle(watch, store and not watch.chat, [], raw=bytes(kept))

    def _settle(self, watch: RelayedStream, store: bool, events: list[SerializedEvent], raw: bytes | None = None
                ) -> None:
        """Rate limits settled with the answer's usage; the response stored with its events (or its raw bytes,
        cut into events only if it is ever replayed)."""
        admission = self.admission
        finish = watch.finish()
        if finish is not None and admission.on_finish is not None:
            admission.on_finish(finish)
        if finish is not None and admission.meter is not None:  # the metrics count the answer's own usage
            admission.meter.usage.append(finish)
        if store and watch.response is not None and watch.response.get("id"):
            replay = rawsse.RawEvents(raw) if raw is not None else None
            self.pipeline.store.put(StoredResponse(watch.response, [], [], events, owner=self.owner, replay=replay))
