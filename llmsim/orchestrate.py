"""The one template every surface's generating route runs (llmsim/surface.py `Generation`), Responses included:

1. a relaying backend (proxy, replay) answers on the relay road (llmsim/relaying.py), admitted by its body;
2. else the surface reads the request: parse, resolve the model, build the prompt with its seed and text mode;
3. whether time passes in it (the pacer, a computing backend): a JSON answer nothing waits in is made whole, its
   Redis writes and admission held and sent with its request log entry on one round trip (`Pipeline.hold`);
4. the surface makes it: admission (scenarios, rate limits, faults), the backend's deltas, its builder's events;
5. a stream is answered as it is made (together when nothing waits in it, slows or cuts it);
6. a whole answer is drained, made again if the fleet's chaos changed meanwhile (`Pipeline.finish`), and a
   failure in it becomes the surface's 500; every error on the way carries the request's ticket.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule

from llmsim import relaying
from llmsim.errors import APIError
from llmsim.request import Answer, ApiRequest, Ticket, attach
from llmsim.surfaces import SURFACES

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Generation, Made, Route, Surface


def create(pipeline: Pipeline, generation: Generation[Any], asked: ApiRequest, raw: bool = True,
           route: Route | None = None) -> Answer:
    """The answer: a relayed one, a stream, or a whole answer. `raw`: the transport can send a relayed stream's
    bytes as they are (SSE; a WebSocket takes events one by one). `route`: the route it came by, for the relay
    road (None: the surface's create route)."""
    relayed, admitted = relaying.relay(pipeline, generation.surface, asked, raw=raw, route=route)
    if relayed is not None:
        return Answer(relayed=relayed, ticket=_ticket(admitted))
    job = generation.read(pipeline, asked)
    waits = pipeline.waits(job.prompt, asked.speed)
    whole = not job.stream and not job.detached and not waits
    if whole or job.holds:
        pipeline.hold()

    def make() -> Made:
        return generation.make(pipeline, asked, job, whole, admitted)

    made = make()
    if job.stream:
        return generation.streamed(pipeline, made, asked, not waits and not _faulted(made))

    def drained(made: Made) -> APIError | None:
        try:
            return generation.drained(made)
        except BaseException as error:
            attach(error, _ticket(made.admission))
            raise

    try:
        made, failed = pipeline.finish(made, make, drained)
    except BaseException as unavailable:  # Redis away, say: the first ticket, where the drain attached none
        attach(unavailable, _ticket(made.admission))
        raise
    if failed is not None:
        attach(failed, _ticket(made.admission))
        raise failed
    return generation.answered(pipeline, made, asked)


def _faulted(made: Made) -> bool:
    return made.admission is not None and made.admission.stream_fault is not None


def _ticket(admission: Any) -> Ticket | None:
    return admission.ticket if admission is not None else None


def run(pipeline: Pipeline, surface: Surface, route: Route, asked: ApiRequest) -> Answer:
    """A route's answer, whatever runs it: a Generation on the template, an Operation (relayed first when the
    route says so and the backend relays)."""
    if not callable(route.run):
        return create(pipeline, route.run, asked, route=route)
    if route.relayed:
        relayed, admitted = relaying.relay(pipeline, surface, asked, raw=True, route=route)
        if relayed is not None:
            return Answer(relayed=relayed, ticket=_ticket(admitted))
    return route.run(pipeline, asked)


@dataclass(frozen=True)
class Routed:
    """What answers a request to a URL: its surface, its route, and the route's variables."""

    surface: Surface
    route: Route
    params: dict[str, str]


def route_for(method: str, path: str) -> Routed | None:
    """The registered route a request to `path` (with one of its surface's prefixes) takes, without HTTP: a batch
    line's `url`, say, which then runs on the same road (`run`) as the request would. Matched by werkzeug's
    routing, as Flask matches the request itself."""
    rules, routes = _map()
    try:
        index, params = rules.bind("localhost").match(path, method=method)
    except HTTPException:  # no such route, another method, or a slash away from one (RequestRedirect)
        return None
    surface, route = routes[index]
    return Routed(surface, route, {name: str(value) for name, value in params.items()})


@functools.cache
def _map() -> tuple[Map, list[tuple[Surface, Route]]]:
    """Every route under each of its prefixes (its endpoint: its index in the list beside)."""
    routes = [(surface, route) for surface in SURFACES for route in surface.routes()]
    return Map([Rule(prefix + route.rule, methods=[route.method], endpoint=index)
                for index, (surface, route) in enumerate(routes)
                for prefix in route.prefixes or surface.prefixes]), routes
