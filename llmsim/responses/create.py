"""POST /responses as the one template runs it (llmsim/orchestrate.py): over HTTP (SSE or JSON) or a WebSocket
(`Create` for a connection's turn: its last response to chain from, a warm-up that generates nothing)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from llmsim import ids
from llmsim.errors import APIError
from llmsim.generation import Finish, Usage
from llmsim.request import Answer, ApiRequest
from llmsim.responses import run, schema, toolspec, translate
from llmsim.responses.events import EventBuilder
from llmsim.responses.response import new_response
from llmsim.runtime.fairness import fair
from llmsim.shared import compat
from llmsim.store import StoredResponse
from llmsim.surface import Job
from llmsim.timing.pricing import COST_HEADER, Pricing, response_cost
from llmsim.timing.profiles import Catalog, Profile

if TYPE_CHECKING:
    from llmsim.chaos.faults import Admission
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface


@dataclass
class Read:
    """A Responses request read: what `make` builds its response from."""

    request: schema.CreateRequest
    profile: Profile
    history: list[dict[str, Any]]
    items: list[dict[str, Any]]
    effort: Any
    summary: Any


class Create:
    """The Responses surface's generating steps. `recent`: a response held outside the store (WebSocket mode's
    connection-local cache) to chain from. `generate=False` (WebSocket mode's warm-up): a completed response
    with no output, to chain from. `paced_runs`: the transport sends a run's text deltas itself, a paced run's
    each when due (SSE: llmsim/api/sse.py); a stream with a fault, in the background or not streamed has each
    delta as an event instead. `holds`: the answer's store writes wait for it (HTTP; a WebSocket turn's do not)."""

    def __init__(self, surface: Surface, recent: StoredResponse | None = None, generate: bool = True,
                 paced_runs: bool = True, holds: bool = True) -> None:
        self.surface = surface
        self.recent = recent
        self.generate = generate
        self.paced_runs = paced_runs
        self.holds = holds

    def read(self, pipeline: Pipeline, asked: ApiRequest) -> Job:
        """`asked.owner`: the scope (API key) the response is stored in and chains within."""
        owner, seed = asked.owner, asked.seed
        request = schema.parse(schema.CreateRequest, asked.body, asked.lenient)
        schema.check_metadata(request.metadata)
        toolspec.check(request)
        if request.background and not request.store:
            raise APIError("Background mode requires store=true.", param="background", code="invalid_value")
        profile = pipeline.catalog.resolve(request.model)
        history = run.history(pipeline, request.previous_response_id, request.conversation_id, self.recent, owner)
        items = translate.normalize_items(request.input, history, run.item_finder(pipeline, owner))
        if profile.reasoning is not None:
            translate.require_reasoning(items, history)
        effort, summary = translate.resolve_reasoning(request, profile)
        prompt = translate.build_prompt(request, profile, history + items, pipeline.seed if seed is None else seed,
                                        effort, summary)
        if asked.text_mode:
            prompt = replace(prompt, text_mode=asked.text_mode)
        return Job(prompt, request.stream, Read(request, profile, history, items, effort, summary),
                   detached=request.background, holds=self.holds)

    def make(self, pipeline: Pipeline, asked: ApiRequest, job: Job, whole: bool, admitted: Admission | None
             ) -> run.Run:
        read: Read = job.request
        request, profile, prompt, speed = read.request, read.profile, job.prompt, asked.speed
        if self.generate:
            prompt, admission = pipeline.direct_and_admit(self.surface, prompt, asked, request.stream, whole,
                                                          admitted)
        else:  # a warm-up makes no output: it takes no scenario turn (Codex warms up every WebSocket turn)
            admission = admitted or pipeline.gate.check_limits_and_faults(self.surface, prompt, asked,
                                                                          request.stream, whole)
        response = new_response(request, profile, ids.new("resp"), translate.echo_tools(request), read.effort,
                                read.summary)
        builder = EventBuilder(
            response,
            encrypted_reasoning="reasoning.encrypted_content" in request.include,
            obfuscate=request.stream and (request.stream_options is None or
                                          request.stream_options.include_obfuscation is not False),
        )
        record = StoredResponse(response, read.items, read.history, owner=asked.owner)
        paced_runs = self.paced_runs and request.stream and not request.background and admission.stream_fault is None
        deltas = admission.deltas(pipeline.generate(prompt, speed, runs=True, paced_runs=paced_runs)
                                  if self.generate else iter([Finish("stop", Usage(prompt.input_tokens, 0))]))
        if request.background:
            return run.background(pipeline, builder, deltas, record, request.stream, admission)
        builder.quiet = not request.stream and admission.stream_fault is None  # nobody sees a text delta's event
        builder.whole_runs = paced_runs
        if builder.quiet:  # so the turns are taken between deltas: a long answer makes few events
            deltas = fair(deltas)
        events = admission.events(builder, run.events(pipeline, builder, deltas, record, request.store,
                                                      request.stream))
        waits = pipeline.waits(prompt, speed) or admission.stream_fault is not None  # a fault may pause or cut
        return run.Run(builder, fair(events), request.stream, record, waits, admission)

    def streamed(self, pipeline: Pipeline, made: run.Run, asked: ApiRequest, together: bool) -> Answer:
        """The cost is known only at the end: an SSE comment after the last event. A WebSocket turn's answer
        keeps its run (the connection chains the next response from its record)."""
        ticket = made.admission.ticket if made.admission is not None else None
        if not self.holds:
            return Answer(events=made.events, ticket=ticket, run=made)
        pricing = _pricing(pipeline.catalog, made.response["model"])
        return Answer(events=made.events, trailer=lambda: _cost_comment(pricing, made.response),
                      together=together, ticket=ticket, headers=compat.headers(asked.warnings))

    def drained(self, made: run.Run) -> APIError | None:
        response = made.drain()
        if response["status"] != "failed":
            return None
        error = response["error"] or {}
        return APIError(error.get("message", "The model failed."), status=500, type="server_error",
                        code=error.get("code"))

    def answered(self, pipeline: Pipeline, made: run.Run, asked: ApiRequest) -> Answer:
        # As jsonify writes it; encoded once with the stored response (llmsim/store/base.py `response_json`)
        return Answer(json=made.record.response_json() + "\n",
                      headers={**cost_headers(pipeline.catalog, made.response), **compat.headers(asked.warnings)},
                      ticket=made.admission.ticket if made.admission is not None else None)


def _pricing(catalog: Catalog, model: str) -> Pricing | None:
    return (catalog.get(model) or catalog.default).pricing


def cost_headers(catalog: Catalog, response: dict[str, Any]) -> dict[str, str]:
    """What the response cost at its model's prices, as a header (none when the model has no prices)."""
    cost = response_cost(_pricing(catalog, response["model"]), response)
    return {COST_HEADER: cost} if cost is not None else {}


def _cost_comment(pricing: Pricing | None, response: dict[str, Any]) -> str | None:
    cost = response_cost(pricing, response)
    return None if cost is None else f"{COST_HEADER}: {cost}"
