"""One request's way through: translator → backend → events → store.

A surface's orchestrator (llmsim/responses/create.py, llmsim/chat/create.py) takes a typed request here:
`relay` for a relaying backend (proxy, replay), else `create` (Responses) or `direct_and_admit` and `generate` (Chat
Completions), and, for a JSON answer on Redis, `hold` and `finish`. `create` gives a Run: the events to send
(already serialized) and, once drained, the final Response. Storing happens when the stream ends. A non-streaming
request serializes no events: nobody reads them, and a stored response keeps only what it takes to build them again
on replay. Admission (scenarios, rate limits, faults) is the Gate the app was built with (llmsim/chaos/admission.py).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from llmsim import ids
from llmsim.backends.relay import Exchange, Relay, Relayed
from llmsim.chaos.admission import Gate, relayed_prompt
from llmsim.chaos.faults import Admission
from llmsim.errors import APIError, not_found
from llmsim.generation import Backend, Delta, Finish, Prompt, Usage, expand
from llmsim.request import ApiRequest, attach
from llmsim.responses import files, rawsse, schema, toolspec, translate
from llmsim.responses.events import TERMINAL, EventBuilder, PacedEvent, SerializedEvent, dumps, dumps_event
from llmsim.responses.relayed import RelayedStream
from llmsim.responses.replay import DeltaLog, Replay
from llmsim.responses.response import new_response
from llmsim.runtime.fairness import fair
from llmsim.store import (
    ConversationStore,
    MemoryConversations,
    ResponseStore,
    StorageUnavailable,
    StoredConversation,
    StoredResponse,
    background,
)
from llmsim.store.background import BackgroundRunner, follow
from llmsim.store.objects import OPENAI_FILE
from llmsim.timing import recorded
from llmsim.timing.pacing import Pacer
from llmsim.timing.profiles import Catalog

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Run:
    builder: EventBuilder
    events: Iterator[SerializedEvent]
    stream: bool
    record: StoredResponse  # put in the store at the end when the request asked; WebSocket mode also keeps it
    waits: bool = True  # False: nothing paces, slows or cuts the events, so a transport may send them together
    admission: Admission | None = None  # its ticket: what the answer carries (llmsim/chaos/admission.py)

    @property
    def response(self) -> dict[str, Any]:
        return self.builder.response

    def drain(self) -> dict[str, Any]:
        for _ in self.events:
            pass
        return self.response


class Pipeline:
    def __init__(self, catalog: Catalog, backend: Backend, store: ResponseStore, seed: int | None = None,
                 pacer: Pacer | None = None, conversations: ConversationStore | None = None,
                 gate: Gate | None = None, batch: Any = None) -> None:
        """`gate`: admission (none: everything admitted). `batch`: the Redis store's held writes (None: none)."""
        self.catalog = catalog
        self.backend = backend
        self.relaying = backend if isinstance(backend, Relay) else None  # proxy, replay: they answer whole requests
        self.store = store
        self.conversations = MemoryConversations() if conversations is None else conversations  # empty is falsy
        self.runner = BackgroundRunner(store, lambda event: (event["type"], dumps(event)))
        self.seed = seed
        self.pacer = pacer or Pacer(speed=0.0)
        self.gate = gate or Gate()
        self.batch = batch
        self.files: Callable[[str, str, str], str | None] | None = None  # (kind, owner, file id) → its words

    def create(self, asked: ApiRequest, *, recent: StoredResponse | None = None, generate: bool = True,
               paced_runs: bool = False, admitted: Admission | None = None) -> Run:
        """A Responses request run. `asked.owner`: the scope (API key) the response is stored in and chains within
        (see `stored`). `recent`: a response held outside the store (WebSocket mode's connection-local cache) to
        chain from. `generate=False` (WebSocket mode's warm-up): a completed response with no output, to chain from.
        `paced_runs`: the transport sends a run's text deltas itself, a paced run's each when due (SSE: api/sse.py);
        a stream with a fault, in the background or not streamed has each delta as an event instead.
        `admitted`: its limits and faults already checked (see `relay`)."""
        body, owner, seed, speed = asked.body, asked.owner, asked.seed, asked.speed
        request = schema.parse(schema.CreateRequest, body, asked.lenient)
        schema.check_metadata(request.metadata)
        toolspec.check(request)
        if request.background and not request.store:
            raise APIError("Background mode requires store=true.", param="background", code="invalid_value")
        profile = self.catalog.resolve(request.model)
        history = self.history(request.previous_response_id, request.conversation_id, recent, owner)
        items = translate.normalize_items(request.input, history, self.item_finder(owner))
        if profile.reasoning is not None:
            translate.require_reasoning(items, history)
        effort, summary = translate.resolve_reasoning(request, profile)
        read = items if self.files is None else files.read(items, functools.partial(self.files, OPENAI_FILE, owner))
        prompt = translate.build_prompt(request, profile, history + read, self.seed if seed is None else seed,
                                        effort, summary)
        if asked.text_mode:
            prompt = replace(prompt, text_mode=asked.text_mode)
        whole = not request.stream and not request.background and not self.waits(prompt, speed)
        if generate:
            prompt, admission = self.direct_and_admit("responses", prompt, asked, request.stream, whole, admitted)
        else:  # a warm-up makes no output: it takes no scenario turn (Codex warms up every WebSocket turn)
            admission = admitted or self.gate.check_limits_and_faults("responses", prompt, asked, request.stream,
                                                                      whole)
        response = new_response(request, profile, ids.new("resp"), translate.echo_tools(request), effort, summary)
        builder = EventBuilder(
            response,
            encrypted_reasoning="reasoning.encrypted_content" in request.include,
            obfuscate=request.stream and (request.stream_options is None or
                                          request.stream_options.include_obfuscation is not False),
        )
        record = StoredResponse(response, items, history, owner=owner)
        paced_runs = paced_runs and request.stream and not request.background and admission.stream_fault is None
        deltas = admission.deltas(self.generate(prompt, speed, runs=True, paced_runs=paced_runs) if generate else
                                  iter([Finish("stop", Usage(prompt.input_tokens, 0))]))
        if request.background:
            return self._background(builder, deltas, record, request.stream, admission)
        builder.quiet = not request.stream and admission.stream_fault is None  # nobody sees a text delta's event
        builder.whole_runs = paced_runs
        if builder.quiet:  # so the turns are taken between deltas: a long answer makes few events
            deltas = fair(deltas)
        events = admission.events(builder, self._events(builder, deltas, record, request.store, request.stream),
                                  dumps)
        waits = self.waits(prompt, speed) or admission.stream_fault is not None  # a fault may pause or cut
        return Run(builder, fair(events), request.stream, record, waits, admission)

    def waits(self, prompt: Prompt, speed: float | None) -> bool:
        """Whether time passes between the answer's deltas: the pacer's waits, or a backend's computing."""
        return self.backend.computes or self.pacer.paces(prompt, speed)

    def direct_and_admit(self, endpoint: str, prompt: Prompt, asked: ApiRequest, stream: bool, whole: bool = False,
                         admitted: Admission | None = None) -> tuple[Prompt, Admission]:
        """Scenarios, then rate limits and faults (the gate's): what every surface applies between the prompt and
        the backend. `whole`: nothing of the answer leaves or waits before it is made (see ChaosState.decide)."""
        return self.gate.direct_and_admit(endpoint, prompt, asked, stream, whole, admitted)

    def generate(self, prompt: Prompt, speed: float | None = None, runs: bool = False,
                 paced_runs: bool = False) -> Iterator[Delta]:
        """The backend's deltas: every transport (Responses, Chat Completions) comes through this one call.
        `runs`: the caller takes TextRuns (the event builder does); else each comes as its TextDeltas.
        `paced_runs`: paced TextRuns too, whose chunks' waits the transport keeps (see `create`)."""
        deltas = self.pacer.pace(self.backend.generate(prompt), prompt, speed,  # speed: None = the server's
                                 runs=paced_runs)
        return deltas if runs else expand(deltas)

    def item_finder(self, owner: str) -> Callable[[str], dict[str, Any] | None]:
        """`item_reference` (and items sent back by id) resolve among the stored responses of the caller's scope."""
        return functools.partial(self.store.find_item, owner=owner)

    def stored(self, response_id: str, owner: str) -> StoredResponse | None:
        """A stored response if `owner` may see it: another API key's is as missing as on the real API."""
        record = self.store.get(response_id)
        return record if record is not None and record.owner == owner else None

    def conversation(self, conversation_id: str, owner: str) -> StoredConversation | None:
        """A conversation if `owner` may see it, like `stored`."""
        conversation = self.conversations.get(conversation_id)
        return conversation if conversation is not None and conversation.owner == owner else None

    def hold(self) -> None:
        """Hold this request's writes (Redis) until its answer leaves, and let a JSON answer's admission wait for
        `finish` (a stream's writes are released before its first event; its admission never waits)."""
        if self.batch is not None:
            self.batch.hold(defer=True)

    def finish(self, made: T, make: Callable[[], T], drain: Callable[[T], R]) -> tuple[T, R]:
        """A held JSON answer `made` and drained, its deferred admission and held writes sent to Redis; if the
        fleet's faults or scenario changed meanwhile, nothing was written: made and drained again, under its own."""
        drained = drain(made)
        if self.batch is None or self.batch.commit():
            return made, drained
        made = make()
        return made, drain(made)

    def relay(self, endpoint: str, asked: ApiRequest, raw: bool = False) -> tuple[Relayed | None, Admission | None]:
        """The one road of a relayed request (proxy, replay; the lean WSGI path's too): admitted by what its body
        says, then answered by the backend with its own events and ids, around which the same recorded timing,
        stream faults, rate-limit settling and store apply. (None, None): the backend generates. (None, the
        admission): the backend left it to generation (replay's miss with `--on-miss sim`), admitted already.
        `raw`: the transport can send a live stream's bytes as they are, which it gets unless a stream fault needs
        the events one by one."""
        backend = self.relaying
        if backend is None:
            return None, None
        body = asked.body
        if not isinstance(body, dict):
            raise APIError("Invalid request body: expected a JSON object.", code="invalid_type")
        admission = self.gate.check_limits_and_faults(endpoint.replace("/", "."), relayed_prompt(body, self.catalog),
                                                      asked, bool(body.get("stream")))
        try:
            return self._relayed(backend, Exchange(endpoint, body, asked.raw), admission, asked.speed, asked.owner,
                                 raw), admission
        except BaseException as error:  # an upstream's error answer, say: its answer finishes the ticket
            attach(error, admission.ticket)
            raise

    def _relayed(self, backend: Relay, exchange: Exchange, admission: Admission, speed: float | None, owner: str,
                 raw: bool) -> Relayed | None:
        reply = backend.relay(exchange)
        if reply is None:
            return None
        speed = self.pacer.speed if speed is None else speed
        watch = RelayedStream(exchange.endpoint)
        store = exchange.endpoint == "responses" and exchange.body.get("store") is not False
        if reply.events is None and reply.chunks is None:
            recorded.wait(reply.wait, speed)
            watch.observe_body(reply.body)
            self._settle_relayed(watch, admission, store, [], owner)
            if admission.stream_fault is not None:
                admission.stream_fault.answer_body()
            return Relayed(reply.status, reply.headers, body=reply.body)
        if reply.chunks is not None and raw and admission.stream_fault is None:
            chunks = self._watch_raw(reply.chunks, watch, admission, store, owner)
            return Relayed(reply.status, reply.headers, chunks=admission.chunks(chunks, watch.chat))
        if reply.chunks is not None:
            events: Iterator[SerializedEvent] = rawsse.events(reply.chunks)
        elif reply.timed:
            events = recorded.play(reply.events, speed)  # type: ignore[arg-type]
        else:
            events = ((k, d) for _, k, d in reply.events)  # type: ignore[union-attr]
        watched = self._watch_relayed(events, watch, admission, store, owner)
        faulted = admission.events(watch, watched, watch.dumps)  # type: ignore[arg-type]  # the builder's stand-in
        return Relayed(reply.status, reply.headers, events=faulted)

    def _watch_relayed(self, events: Iterator[SerializedEvent], watch: RelayedStream, admission: Admission,
                       store: bool, owner: str) -> Iterator[SerializedEvent]:
        kept: list[SerializedEvent] = []
        try:
            for kind, data in events:
                final = watch.observe(kind, data)
                if store:
                    kept.append((kind, data))
                if final:  # settled before the client sees the end, as for a generated response
                    self._settle_relayed(watch, admission, store, kept, owner)
                yield kind, data
        finally:
            if isinstance(events, Generator):
                events.close()
        if watch.chat:
            self._settle_relayed(watch, admission, False, kept, owner)

    def _watch_raw(self, chunks: Iterator[bytes], watch: RelayedStream, admission: Admission, store: bool,
                   owner: str) -> Iterator[bytes]:
        """The bytes as they come; the final event, found in them, settles and stores before it is sent."""
        kept = bytearray()
        settled = False
        try:
            for chunk in chunks:
                kept += chunk
                if not settled and watch.observe_raw(kept):
                    settled = True
                    self._settle_relayed(watch, admission, store, [], owner, raw=bytes(kept))
                yield chunk
        finally:
            if isinstance(chunks, Generator):
                chunks.close()
        if not settled and (watch.chat or watch.observe_all(kept)):  # chat: its usage came last, if at all
            self._settle_relayed(watch, admission, store and not watch.chat, [], owner, raw=bytes(kept))

    def _settle_relayed(self, watch: RelayedStream, admission: Admission, store: bool,
                        events: list[SerializedEvent], owner: str, raw: bytes | None = None) -> None:
        """Rate limits settled with the answer's usage; the response stored with its events (or its raw bytes,
        cut into events only if it is ever replayed)."""
        finish = watch.finish()
        if finish is not None and admission.on_finish is not None:
            admission.on_finish(finish)
        if finish is not None and admission.meter is not None:  # the metrics count the answer's own usage
            admission.meter.usage.append(finish)
        if store and watch.response is not None and watch.response.get("id"):
            replay = rawsse.RawEvents(raw) if raw is not None else None
            self.store.put(StoredResponse(watch.response, [], [], events, owner=owner, replay=replay))

    def history(self, previous_response_id: str | None, conversation_id: str | None,
                recent: StoredResponse | None = None, owner: str = "") -> list[dict[str, Any]]:
        if previous_response_id and conversation_id:
            raise APIError(
                "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or "
                "'conversation'.", param=None, code="mutually_exclusive_parameters",
            )
        if conversation_id:
            items = self.conversations.items(conversation_id) if self.conversation(conversation_id, owner) else None
            if items is None:
                raise not_found("Conversation", conversation_id, param="conversation")
            return items
        if not previous_response_id:
            return []
        previous = recent if recent is not None and recent.id == previous_response_id else \
            self.stored(previous_response_id, owner)
        if previous is None:
            raise APIError(f"Previous response with id '{previous_response_id}' not found.",  # a 400 live
                           param="previous_response_id", code="previous_response_not_found")
        return previous.context()

    def count_input_tokens(self, body: Any, owner: str = "", lenient: list[str] | None = None) -> int:
        request = schema.parse(schema.InputTokensRequest, body, lenient)
        profile = self.catalog.resolve(request.model or "default")
        history = self.history(request.previous_response_id, request.conversation_id, owner=owner)
        items = history + translate.normalize_items(request.input, history, self.item_finder(owner))
        return translate.count_input_tokens(items, request.instructions, translate.echo_tools(request),
                                            profile.encoding)

    def _events(self, builder: EventBuilder, deltas: Iterator[Any], record: StoredResponse, store: bool,
                stream: bool) -> Iterator[SerializedEvent | PacedEvent]:
        """The serialized events (only the types when not streaming: nobody reads the data)."""
        log = DeltaLog()
        builder.render = stream  # this loop takes the text deltas the builder serializes itself
        for event in builder.run(log.recording(deltas)):
            if isinstance(event, tuple):  # a text delta the builder serialized itself
                yield event
                continue
            kind = event["type"]
            if kind in TERMINAL:  # settled before the client can see the end: nothing completed is lost
                self._add_turn(record.input_items, builder.response)
                if store:
                    record.replay = Replay(log, builder)
                    try:
                        self.store.put(record)
                    except StorageUnavailable as failure:  # too late for a 503: the stream's own error ends it
                        if not stream:
                            raise
                        yield "error", dumps_event(builder.error("storage_unavailable", failure.message))
                        return
            yield kind, dumps_event(event) if stream else ""

    def _background(self, builder: EventBuilder, deltas: Iterator[Delta], record: StoredResponse, stream: bool,
                    admission: Admission) -> Run:
        """Answer at once with the queued response; a worker generates it, the store carries its events."""
        queued = [(event["type"], dumps(event)) for event in builder.queue()]
        self.store.put(StoredResponse(copy.deepcopy(builder.response), record.input_items, record.history, queued,
                                      worker=background.this_worker(), owner=record.owner))
        self.runner.submit(builder.detached(), deltas, functools.partial(self._add_turn, record.input_items))
        events = follow(self.store, builder.response["id"]) if stream else iter(list(queued))
        return Run(builder, events, stream, record, admission=admission)

    def _add_turn(self, items: list[dict[str, Any]], response: dict[str, Any]) -> None:
        """A completed (or incomplete: cut at max_output_tokens) response in a conversation adds its input and
        output items to it, as the live API does."""
        conversation = response.get("conversation")
        if conversation and response["status"] in ("completed", "incomplete"):
            self.conversations.add_items(conversation["id"], [*items, *response["output"]])
