"""The contract every API surface fills, and the registry of those that do.

A surface (Responses, Chat Completions, Messages, next Gemini) is one folder: its schema and parse, its translator
to a `Prompt`, its builder, and one module that fills this contract (`surface.py`); `llmsim/surfaces.py` registers
it with one line. The shared road knows a surface only through what is written here: the template that runs every
generating route (llmsim/orchestrate.py), admission, the relay road, proxy and replay, the metrics and the
transport read its facts and call its hooks, and no part of the house branches on a surface's name.

What a surface says about itself:

- identity: `name`, the one key (fault rules' `endpoints`, the request log); `path`, its create route under each
  of its `prefixes`, which is also the upstream path a proxy forwards to and a cassette's `endpoint`;
- its routes (`routes`): each a `Generation` the template runs, or a plain `Operation` (count tokens, listings,
  embeddings); a rule's variables and the query come in `ApiRequest.params`; where its API key is (`api_key`);
- its request schema and parse, with the forward-compatibility policy (llmsim/shared/compat.py): unknown names and
  values accepted and reported, `refused` names (another API's, removed ones) its 400 always;
- its translator to a `Prompt` and its `Builder` (Deltas → its events and the object it built), both behind its
  Generation's `read` and `make`;
- its error envelope: every error of a request it answers, and of an unknown route under its own prefixes
  (`exclusive_prefixes`), rendered by `envelope` (400, 401, 404, 405, 413, 429, 5xx; `overloaded` is its
  overload error); `answer_headers` adds what its answers carry besides;
- what the shared parts need: what the relay road reads of a request it forwards unparsed (`outline`: the model,
  the stream flag, the input to estimate, the upstream path), where the end and the usage sit in its stream
  (`final`, `usage_key`, `relayed_tokens`, `token_marks`, `stores_relayed`, `json_from_stream`, `relayed_error`:
  the relay road, the metrics and cassettes), its upstream auth (`upstream_auth`, `upstream_headers`: proxy),
  its cassette match key (`match`, `claims`), its metrics label (`metrics_label`), whether
  rate-limit headers report input and output apart (`directional`), whether its SSE frames name their events
  (`named_events`), its model listing (`listing_header`, `list_models`, `model_info`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar

from llmsim.errors import APIError
from llmsim.wire import dumps

if TYPE_CHECKING:
    from llmsim.chaos.faults import Admission
    from llmsim.generation import Prompt
    from llmsim.pipeline import Pipeline
    from llmsim.request import Answer, ApiRequest
    from llmsim.timing.profiles import Catalog, Profile

OPENAI_PREFIXES = ("/openai/v1", "/v1", "/v3", "")  # LLMSim's own, the SDKs' default, OpenVINO Model Server's, bare


class Headers(Protocol):
    """A request's or an answer's headers: a dict, or werkzeug's Headers."""

    def get(self, key: str, /) -> str | None: ...

    def __contains__(self, key: str, /) -> bool: ...

    def __setitem__(self, key: str, value: str, /) -> None: ...

    def setdefault(self, key: str, default: str, /) -> str: ...

    def pop(self, key: str, default: None, /) -> str | None: ...

    def items(self) -> Any: ...


class Ending(Protocol):
    """How a surface's stream ends when something ends it early: what an injected stream fault (and the meter)
    needs of a builder, or of the stand-in that watches a relayed stream (llmsim/shared/relayed.py)."""

    @property
    def terminal(self) -> frozenset[str]:
        """The event kinds that end its stream: a stream fault due after the end takes the end's place."""
        ...

    @property
    def response(self) -> dict[str, Any] | None:
        """The object it built (a Response, a Message), whose `id` names the request in the log; None: none."""
        ...

    def fail(self, code: str, message: str) -> Iterator[dict[str, Any]]:
        """The events that end the stream as failed."""
        ...

    def error(self, code: str, message: str, param: str | None = None) -> dict[str, Any]:
        """The error event that ends the stream."""
        ...

    def dumps(self, event: dict[str, Any]) -> str:
        """An event of `fail` or `error` as its data on the wire."""
        ...


class Builder(Ending, Protocol):
    """A surface's serializer: the only place that knows its event taxonomy. `run` turns the backend's Deltas into
    its events (serialized, or, for a builder that serializes at the transport, events to serialize), building
    the final object as it goes; a non-streamed answer is that object, built from whole text runs."""

    def run(self, deltas: Iterator[Any]) -> Iterator[Any]: ...


class Made(Protocol):
    """A generating request admitted, with its events not yet drawn (a Generation's `make`)."""

    @property
    def admission(self) -> Admission | None: ...


M = TypeVar("M", bound=Made)


@dataclass
class Job:
    """A request read (`Generation.read`): parsed, its model resolved, its prompt built (seed and text mode
    applied). `stream`: answered as a stream; `detached`: answered before it is made (Responses' background);
    `holds`: its answer writes to the store, so those writes are held until it leaves even when it waits.
    `request`: the surface's own parsed request and whatever else its `make` needs."""

    prompt: Prompt
    stream: bool
    request: Any = None
    detached: bool = False
    holds: bool = False


class Generation(Protocol[M]):
    """A route that generates: the steps the one template (llmsim/orchestrate.py `create`) runs around the
    shared road (relay, waits, held writes, admission, finish, the 500 of a failed whole answer)."""

    surface: Surface

    def read(self, pipeline: Pipeline, asked: ApiRequest) -> Job:
        """Parse, resolve the model, build the prompt (its seed, its text mode)."""
        ...

    def make(self, pipeline: Pipeline, asked: ApiRequest, job: Job, whole: bool, admitted: Admission | None) -> M:
        """Admit (`pipeline.direct_and_admit`), generate, and wrap the builder's events (`admission.events`).
        `whole`: nothing of the answer leaves or waits before it is made. `admitted`: checked already."""
        ...

    def streamed(self, pipeline: Pipeline, made: M, asked: ApiRequest, together: bool) -> Answer:
        """A stream's answer. `together`: nothing waits between its events."""
        ...

    def drained(self, made: M) -> APIError | None:
        """Draw a whole answer's events; its failure, as the 500 the client gets instead, or None."""
        ...

    def answered(self, pipeline: Pipeline, made: M, asked: ApiRequest) -> Answer:
        """A whole answer, drained."""
        ...


Operation = Callable[["Pipeline", "ApiRequest"], "Answer"]  # a route that generates no text (count tokens, ...)


@dataclass(frozen=True)
class Route:
    """One route a surface mounts under each of its prefixes: `rule` in Flask's syntax (`<name>`, `<path:name>`;
    its variables and the query string come in `ApiRequest.params`); `run`, a Generation (the template runs it)
    or an Operation. `relayed`: an Operation a relaying backend (proxy, replay) answers instead, on the relay
    road, as it does every Generation (an upstream's embeddings, say). `stream`: the route says whether it
    streams (None: the body's `stream`); `upstream`: where a proxy forwards it, its variables in braces
    (`models/{model}:streamGenerateContent`; None: the surface's `path`). `prefixes`: where it is mounted, when
    not under every prefix of its surface (a path another surface answers under one of them)."""

    method: str
    rule: str
    run: Generation[Any] | Operation
    relayed: bool = False
    stream: bool | None = None
    upstream: str | None = None
    prefixes: tuple[str, ...] | None = None  # some of the surface's prefixes only (None: all of them)


@dataclass(frozen=True)
class Outline:
    """What the relay road reads of a request it forwards unparsed (llmsim/relaying.py): the model and the stream
    flag (from the body, or a surface's URL), what counts as its input (for admission's estimate of its tokens;
    the answer's usage settles it), its output limit and metadata, and the path a proxy forwards it to."""

    model: str
    stream: bool
    said: list[Any]
    limit: int | None
    metadata: dict[str, Any]
    upstream_path: str


@dataclass(frozen=True)
class HttpFailure:
    """An error the HTTP layer found before any surface ran (no such route, method, a body too large)."""

    status: int
    method: str
    path: str
    description: str
    allowed: tuple[str, ...] = ()
    body_limit: int = 0


class Surface:
    """One API surface; subclass it in the surface's folder (its defaults are OpenAI's) and register an instance
    in llmsim/surfaces.py."""

    name: ClassVar[str]
    path: ClassVar[str]
    prefixes: ClassVar[tuple[str, ...]] = OPENAI_PREFIXES
    exclusive_prefixes: ClassVar[tuple[str, ...]] = ()  # no other surface mounts there: its envelope for all
    named_events: ClassVar[bool] = True  # a relayed stream's SSE frames say their event names
    lean: ClassVar[bool] = True  # a proxy may forward it on the lean WSGI path (llmsim/api/forward.py)
    directional: ClassVar[bool] = False  # rate-limit headers report input and output tokens apart
    final: ClassVar[Literal["response", "usage"]] = "usage"  # what ends its stream: a final object, or the usage
    stores_relayed: ClassVar[bool] = False  # a relayed answer's final object is stored (`store` not false)
    json_from_stream: ClassVar[bool] = False  # a recorded stream may answer a JSON request (its final object)
    upstream_auth: ClassVar[str] = "bearer"  # how a proxy sends the upstream key: a bearer token, or this header
    upstream_headers: ClassVar[Mapping[str, str]] = {}
    match: ClassVar[tuple[str, ...]] = ("model",)  # the body fields that decide a cassette's answer
    refused: ClassVar[Mapping[str, str]] = {}  # names always refused, with what the client meant
    listing_header: ClassVar[str | None] = None  # GET /models with this header: this surface's listing

    def routes(self) -> Sequence[Route]:
        return ()

    def api_key(self, headers: Headers, query: Mapping[str, str]) -> str | None:
        """The API key a request to it carries: a bearer token, or Anthropic's `x-api-key` header."""
        scheme, _, key = (headers.get("Authorization") or "").partition(" ")
        return key.strip() if scheme.lower() == "bearer" else headers.get("x-api-key")

    def metrics_label(self, rule: str) -> str:
        """The `endpoint` label of a request to `rule`: the route without its prefix."""
        for prefix in sorted(self.prefixes, key=len, reverse=True):
            if prefix and rule.startswith(prefix + "/"):
                return rule[len(prefix):]
        return rule

    # --- its error envelope -----------------------------------------------------------------------------

    def envelope(self, error: APIError, request_id: str) -> tuple[Any, int]:
        """An error as this surface's clients get it: its body and status (`error.headers` go with it)."""
        return error.body(), error.status

    def http_error(self, failure: HttpFailure) -> APIError:
        """An HTTP-level failure as an error of this surface's words."""
        message = failure.description
        if failure.status == 404:
            message = f"Invalid URL ({failure.method} {failure.path})"
        elif failure.status == 405:
            message = f"Method not allowed: {failure.method} {failure.path}"
        elif failure.status == 413:
            message = f"Request body too large: the limit is {failure.body_limit} bytes."
        return APIError(message, status=failure.status)

    def overloaded(self, message: str | None = None, retry_after: float | None = None) -> APIError:
        """Its overload error (a queue that is full, a fleet that sheds load); `envelope` renders it."""
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return APIError(message or "The server is overloaded or not ready yet.", status=503, type="server_error",
                        headers=headers)

    def answer_headers(self, headers: Headers, request_id: str) -> None:
        """What its answers (errors too) carry besides the standard headers."""

    # --- what the relay road needs ----------------------------------------------------------------------

    usage_key: ClassVar[str] = "usage"  # the field of an event (or a JSON answer) that carries its usage
    token_marks: ClassVar[tuple[bytes, bytes | None]] = (b'"finish_reason":null', b'"role":"')
    # ^ in a relayed stream's bytes: what each event that carries a token has, and what such an event that carries
    # none has besides (a chat stream's first chunk): the metrics count tokens without cutting the events out

    def outline(self, asked: ApiRequest, route: Route | None = None) -> Outline:
        """What the relay road reads of a request to `route` (None: its create route): the model from the body
        (else the route's `<model>`), the stream flag from the route (else the body), the upstream path from the
        route (else `path`), and the input, limit and metadata by OpenAI's and Anthropic's names."""
        body = asked.body if isinstance(asked.body, dict) else {}
        said = [body.get(name) for name in ("instructions", "input", "messages") if body.get(name) is not None]
        limit = body.get("max_output_tokens") or body.get("max_completion_tokens") or body.get("max_tokens")
        metadata = body.get("metadata")
        stream = route.stream if route is not None and route.stream is not None else bool(body.get("stream"))
        upstream = route.upstream.format_map(asked.params) if route is not None and route.upstream else self.path
        return Outline(str(body.get("model") or asked.params.get("model") or ""), stream, said,
                       limit if isinstance(limit, int) else None, metadata if isinstance(metadata, dict) else {},
                       upstream)

    def claims(self, endpoint: str) -> bool:
        """Whether a cassette's `endpoint` (an upstream path, `outline`'s) is one of its requests."""
        return endpoint == self.path

    def relayed_tokens(self, usage: dict[str, Any]) -> tuple[int, int]:
        """A relayed answer's usage (its `usage_key` field) as (input, output) tokens."""
        get = usage.get
        return (int(get("input_tokens", get("prompt_tokens", 0)) or 0),
                int(get("output_tokens", get("completion_tokens", 0)) or 0))

    def relayed_error(self, code: str, message: str, param: str | None, sequence: int) -> dict[str, Any]:
        """The error event that ends a relayed stream of this surface."""
        return {"type": "error", "error": {"message": message, "type": "server_error", "param": param, "code": code}}

    def relayed_dumps(self, event: dict[str, Any]) -> str:
        return dumps({"error": event["error"]} if self.final == "usage" else event)

    # --- its model listing -----------------------------------------------------------------------------------

    def list_models(self, catalog: Catalog, query: Mapping[str, str]) -> Any:
        return {"object": "list", "data": [self.model_info(p.id, p) for p in catalog.listed()]}

    def model_info(self, name: str, profile: Profile) -> Any:
        return {"id": name, "object": "model", "created": profile.created, "owned_by": profile.owned_by}


_BY_NAME: dict[str, Surface] = {}
_BY_PATH: dict[str, Surface] = {}


def register(surface: Surface) -> Surface:
    """Add a surface (llmsim/surfaces.py does, once for each); its name and path are its own."""
    for index, key in ((_BY_NAME, surface.name), (_BY_PATH, surface.path)):
        if index.get(key, surface) is not surface:
            raise ValueError(f"two surfaces claim {key!r}")
        index[key] = surface
    return surface


def by_path(path: str) -> Surface | None:
    """The surface a cassette's `endpoint` (an upstream path) belongs to. The surfaces register when
    llmsim/surfaces.py is imported (the app does): before that, every path would be nobody's."""
    if not _BY_NAME:
        raise RuntimeError("no surface is registered yet: import llmsim.surfaces first")
    found = _BY_PATH.get(path)
    return found if found is not None else next((s for s in _BY_NAME.values() if s.claims(path)), None)
