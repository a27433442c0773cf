"""Google's Gemini API as a surface (llmsim/surface.py): `models/{model}:generateContent` and
`:streamGenerateContent` on the one template, `:countTokens`, `:embedContent`, `:batchEmbedContents` and the model
listing, under /v1beta, /v1 (google-genai's default) and both under /gemini; keys from `x-goog-api-key` or `?key=`;
errors in Google's envelope (llmsim/gemini/envelope.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llmsim.errors import APIError
from llmsim.gemini import envelope, models
from llmsim.gemini.create import Embed, Generate, count_tokens, get_model, list_models
from llmsim.gemini.events import event_dumps
from llmsim.request import int_param
from llmsim.surface import Headers, HttpFailure, Route, Surface, Upstream

if TYPE_CHECKING:
    from llmsim.request import ApiRequest
    from llmsim.timing.profiles import Catalog, Profile

LISTED = ("/v1beta", "/gemini/v1beta", "/gemini/v1")  # GET /v1/models is OpenAI's, unless google-genai asks
KEY_HEADER = "x-goog-api-key"


class Gemini(Surface):
    name = "gemini"
    path = "models"  # its routes' first part: a relayed request goes to its own `models/{model}:{method}`
    prefixes = ("/v1beta", "/v1", "/gemini/v1beta", "/gemini/v1")
    exclusive_prefixes = ("/v1beta", "/gemini")
    named_events = False  # its SSE frames are bare `data:` lines
    lean = False
    match = ("contents", "systemInstruction", "tools", "toolConfig", "generationConfig")
    listing_header = KEY_HEADER  # google-genai lists models at /v1/models, with its key header
    upstream_auth = KEY_HEADER
    usage_mark = '"usageMetadata":{'

    def routes(self) -> Sequence[Route]:
        model = "/models/<model>"
        return (Route("POST", f"{model}:generateContent", Generate(self, stream=False)),
                Route("POST", f"{model}:streamGenerateContent", Generate(self, stream=True)),
                Route("POST", f"{model}:countTokens", count_tokens, relayed=True),
                Route("POST", f"{model}:embedContent", Embed(self, batch=False), relayed=True),
                Route("POST", f"{model}:batchEmbedContents", Embed(self, batch=True), relayed=True),
                Route("GET", "/models", list_models, prefixes=LISTED),
                Route("GET", "/models/<model>", get_model, prefixes=LISTED))

    def api_key(self, headers: Headers, query: Mapping[str, str]) -> str | None:
        return headers.get(KEY_HEADER) or query.get("key") or super().api_key(headers, query)

    def upstream(self, asked: ApiRequest) -> Upstream:
        """The request's own method of its model (`?alt=sse` kept: the stream's framing), never its `?key=`."""
        sse = asked.params.get("alt") == "sse"
        return Upstream(asked.route, asked.route.endswith(":streamGenerateContent"), asked.params.get("model", ""),
                        "?alt=sse" if sse else "")

    def relayed_usage(self, data: dict[str, Any]) -> dict[str, int] | None:
        usage = data.get("usageMetadata")
        if not isinstance(usage, dict):
            return None
        output = int(usage.get("candidatesTokenCount") or 0) + int(usage.get("thoughtsTokenCount") or 0)
        return {"input_tokens": int(usage.get("promptTokenCount") or 0), "output_tokens": output}

    def envelope(self, error: APIError, request_id: str) -> tuple[Any, int]:
        return envelope.body(error), envelope.status(error)

    def http_error(self, failure: HttpFailure) -> APIError:
        if failure.status in (404, 405):
            return APIError(f"Invalid URL ({failure.method} {failure.path})", status=404, type="NOT_FOUND")
        return APIError(failure.description, status=failure.status)

    def overloaded(self, message: str | None = None, retry_after: float | None = None) -> APIError:
        error = super().overloaded(message, retry_after)
        error.type = "UNAVAILABLE"
        return error

    def relayed_error(self, code: str, message: str, param: str | None, sequence: int) -> dict[str, Any]:
        return {"type": "error", **envelope.body(APIError(message, status=500, type="INTERNAL"))}

    def relayed_dumps(self, event: dict[str, Any]) -> str:
        return event_dumps(event)

    def list_models(self, catalog: Catalog, query: Mapping[str, str]) -> Any:
        return models.page(catalog.listed(), int_param(query, "pageSize", 50, 0, 1000), query.get("pageToken"))

    def model_info(self, name: str, profile: Profile) -> Any:
        return models.model_info(name, profile)


GEMINI = Gemini()
