"""A request and its answer as every layer below the transport sees them: typed values.

The transport (llmsim/api/) reads HTTP, a WebSocket's upgrade or a WSGI environ into an ApiRequest once;
admission, the one template (llmsim/orchestrate.py), the surfaces' steps and the pipeline take it as a
value, so none of them reads a header or a request context. The template gives back an Answer, which the
transport turns into bytes without deciding anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, overload

from llmsim.errors import APIError

if TYPE_CHECKING:
    from llmsim.backends.relay import Relayed
    from llmsim.chaos.state import ChaosState
    from llmsim.responses.run import Run

SerializedEvent = tuple[str, Any]  # (event type, its JSON text; or PACED_TEXT and a paced run, passed through)
log = logging.getLogger("llmsim")
TICKET = "llmsim_ticket"  # the attribute an error raised after admission carries its Ticket in


@dataclass(frozen=True)
class ApiRequest:
    """One API request. `owner`: the scope it stores and reads in (a digest of its API key when keys are set).
    `api_key`: the bearer token as sent, for rate-limit buckets and the request log. `seed`, `speed`,
    `text_mode`: the X-LLMSim-* overrides of the server's (None: the server's). `fault`: the X-LLMSim-Fault
    header as sent, checked by admission (llmsim/chaos/admission.py). `raw`: the body's bytes, where a proxy
    may forward them as they are (the lean path). `strict_params`: unknown names and values get the live API's
    400 (--strict-params, X-LLMSim-Strict-Params); else they are dropped and reported in `warnings`, each
    request's own (llmsim/shared/compat.py). `params`: the route's variables and the query string (a surface
    that takes the model or the stream flag from its URL reads them there)."""

    body: Any
    owner: str = ""
    api_key: str | None = None
    seed: int | None = None
    speed: float | None = None
    text_mode: str | None = None
    fault: str | None = None
    raw: bytes | None = None
    strict_params: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list, init=False, compare=False)

    @property
    def lenient(self) -> list[str] | None:
        """Where the parser reports what it forgave; None when strict."""
        return None if self.strict_params else self.warnings


@dataclass
class Answer:
    """One of: `json`, a JSON text encoded once (with the stored response); `body`, an object to encode; `events`,
    the SSE events of a Responses stream; `frames`, a stream's text as it is sent (Chat Completions' SSE lines; a
    JSON array streamed, with its `media_type`); `relayed`, a relaying backend's answer with its own status and
    headers. `together`: nothing waits between the events, so they may leave in as few writes as fit.
    `trailer`: an SSE comment after the last event, known only then. `ticket`: admission's x-ratelimit headers and
    request log entry, finished with the answer's status. `run`: the generated run (WebSocket mode chains the next
    response from its record)."""

    headers: dict[str, str] = field(default_factory=dict)
    json: str | None = None
    body: Any = None
    events: Iterator[SerializedEvent] | None = None
    frames: Iterator[str] | None = None
    media_type: str = "text/event-stream"  # the frames'
    relayed: Relayed | None = None
    together: bool = False
    trailer: Callable[[], str | None] | None = None
    ticket: Ticket | None = None
    run: Run | None = None


class Headers(Protocol):
    """An answer's headers: a dict, or werkzeug's Headers."""

    def setdefault(self, key: str, default: str, /) -> str: ...


@dataclass
class Ticket:
    """What one admitted request's answer carries: its x-ratelimit headers (an error may carry its own, e.g. an
    injected 429) and its request log entry, finished with the answer's status."""

    state: ChaosState
    entry: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def answered(self, headers: Headers, status: int) -> None:
        """The answer is known: its headers get the x-ratelimit ones, the request log entry its status."""
        for name, value in self.headers.items():
            headers.setdefault(name, value)
        self.entry["status"] = status
        try:
            self.state.finish(self.entry)
        except Exception:  # the shared log is away (Redis down): the answer stands, the entry stays unfinished
            log.warning("request log entry %s not updated", self.entry.get("index"), exc_info=True)


def ticket_of(error: BaseException) -> Ticket | None:
    """The Ticket of the request an error ended, if it was admitted before."""
    ticket: Ticket | None = getattr(error, TICKET, None)
    return ticket


def attach(error: BaseException, ticket: Ticket | None) -> None:
    """`error` ends the request `ticket` admitted: it carries it (the first one it met: the request's own). Called
    from an `except` clause, which costs nothing on the way that raises nothing."""
    if ticket is not None and ticket_of(error) is None:
        setattr(error, TICKET, ticket)


def error_of(events: Iterable[SerializedEvent], ticket: Ticket | None) -> Any:
    """Draw a whole answer's events (the builder keeps what they said): the error event's data when the answer
    ended in one, else None. A failure on the way carries the request's ticket."""
    try:
        for kind, data in events:
            if kind == "error":
                return data
    except BaseException as error:
        attach(error, ticket)
        raise
    return None


@overload
def int_param(params: Mapping[str, str], name: str, default: int, low: int | None = None,
              high: int | None = None) -> int: ...


@overload
def int_param(params: Mapping[str, str], name: str, default: None, low: int | None = None,
              high: int | None = None) -> int | None: ...


def int_param(params: Mapping[str, str], name: str, default: int | None, low: int | None = None,
              high: int | None = None) -> int | None:
    """An integer query parameter within bounds, or the API's 400 naming it."""
    raw = params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise APIError(f"Invalid type for '{name}': expected an integer, but got a string instead.", param=name,
                       code="invalid_type") from None
    if low is not None and value < low or high is not None and value > high:
        raise APIError(f"Invalid '{name}': expected a value between {low} and {high}, but got {value} instead.",
                       param=name, code="invalid_value")
    return value
