"""POST /responses, the one place that runs it: relayed (proxy, replay), streamed, or answered whole, on the one
pipeline; over HTTP or a WebSocket (its transports, llmsim/api/responses.py and llmsim/api/websocket.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llmsim.errors import APIError
from llmsim.request import Answer, ApiRequest, Ticket, attach
from llmsim.responses import compat
from llmsim.timing.pricing import COST_HEADER, Pricing, response_cost
from llmsim.timing.profiles import Catalog

if TYPE_CHECKING:  # the pipeline runs what this module asks of it; nothing below imports this
    from llmsim.chaos.faults import Admission
    from llmsim.pipeline import Pipeline, Run
    from llmsim.store import StoredResponse


def create(pipeline: Pipeline, asked: ApiRequest) -> Answer:
    """An HTTP request's answer: a relayed one, an SSE stream, or the response's JSON (its Redis writes held and
    sent with its admission on one round trip, made again if the fleet's chaos changed meanwhile)."""
    relayed, admitted = pipeline.relay("responses", asked, raw=True)
    if relayed is not None:
        return Answer(relayed=relayed, ticket=_ticket(admitted))
    pipeline.hold()

    def make() -> Run:
        return pipeline.create(asked, paced_runs=True, admitted=admitted)

    run = make()
    if run.stream:  # the cost is known only at the end: an SSE comment after the last event
        pricing = _pricing(pipeline.catalog, run.response["model"])
        return Answer(events=run.events, trailer=lambda: _cost_comment(pricing, run.response),
                      together=not run.waits, ticket=_ticket(run.admission), headers=compat.headers(asked.warnings))
    try:
        run, response = pipeline.finish(run, make, _drained)
    except BaseException as unavailable:  # Redis away, say: the first ticket, where the drain attached none
        attach(unavailable, _ticket(run.admission))
        raise
    if response["status"] == "failed":
        error = response["error"] or {}
        failed = APIError(error.get("message", "The model failed."), status=500, type="server_error",
                          code=error.get("code"))
        attach(failed, _ticket(run.admission))
        raise failed
    # As jsonify writes it; encoded once with the stored response (llmsim/store/base.py `response_json`)
    return Answer(json=run.record.response_json() + "\n",
                  headers={**cost_headers(pipeline.catalog, response), **compat.headers(asked.warnings)},
                  ticket=_ticket(run.admission))


def create_streamed(pipeline: Pipeline, asked: ApiRequest, recent: StoredResponse | None = None,
                    generate: bool = True) -> Answer:
    """A WebSocket `response.create`'s answer: a stream, event by event (`asked.body` says `stream`). `recent`:
    the connection's last response, to chain from; `generate=False`: a warm-up with no output."""
    relayed, admitted = pipeline.relay("responses", asked)
    if relayed is not None:
        return Answer(relayed=relayed, ticket=_ticket(admitted))
    run = pipeline.create(asked, recent=recent, generate=generate, admitted=admitted)
    return Answer(events=run.events, ticket=_ticket(run.admission), run=run)


def _drained(run: Run) -> dict[str, Any]:
    try:
        return run.drain()
    except BaseException as error:
        attach(error, _ticket(run.admission))
        raise


def _ticket(admission: Admission | None) -> Ticket | None:
    return admission.ticket if admission is not None else None


def _pricing(catalog: Catalog, model: str) -> Pricing | None:
    return (catalog.get(model) or catalog.default).pricing


def cost_headers(catalog: Catalog, response: dict[str, Any]) -> dict[str, str]:
    """What the response cost at its model's prices, as a header (none when the model has no prices)."""
    cost = response_cost(_pricing(catalog, response["model"]), response)
    return {COST_HEADER: cost} if cost is not None else {}


def _cost_comment(pricing: Pricing | None, response: dict[str, Any]) -> str | None:
    cost = response_cost(pricing, response)
    return None if cost is None else f"{COST_HEADER}: {cost}"
